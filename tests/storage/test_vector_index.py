"""The in-memory binary index stays in step with ``vec_notes``: it finds what the database
holds, no more, through added notes, forget-me and re-embedding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hashing import hash_embedding
from tests.retrieval import add_note, new_note
from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, shared_embedder
from vivy.storage.db import Connection, Database
from vivy.storage.members import forget_member
from vivy.storage.reembed import stage_vectors, swap_note_vectors
from vivy.storage.schema import binary_dimensions, serialize_vector
from vivy.storage.vector_index import BinaryIndex

GUILD, OTHER = 1, 2


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.open(tmp_path / "vivy.db", inline=True)
    yield database
    database.close()


def _bits(conn: Connection, text: str) -> bytes:
    """The binary copy of ``text``'s vector, made as the notes' (the local model's)."""
    vector = shared_embedder().embed([text])[0]
    return bytes(
        conn.execute(
            "SELECT vec_quantize_binary(vec_slice(?, 0, ?))",
            (serialize_vector(vector), binary_dimensions(len(vector))),
        ).fetchone()[0]
    )


def _exact(conn: Connection, guild_id: int, bits: bytes, k: int) -> list[int]:
    """An exact hamming KNN of the guild's rows in SQL (sqlite-vec's distance function)."""
    rows = conn.execute(
        "SELECT note_id, vec_distance_hamming(vec_bit(embedding_bits), vec_bit(?)) AS distance"
        " FROM vec_notes WHERE guild_id = ? ORDER BY distance, note_id LIMIT ?",
        (bytes(bits), guild_id, k),
    ).fetchall()
    return [int(r[0]) for r in sorted(rows, key=lambda r: (float(r[1]), int(r[0])))]


def test_nearest_matches_sqlite_vec_and_follows_every_change(db: Database) -> None:
    """Added notes appear, a forgotten member's notes vanish, a re-embedding replaces all."""
    index = BinaryIndex()
    for i in range(12):
        db.write_sync(add_note, new_note(GUILD, f"Sourdough bake {i}", f"starter feeding {i}"))
    db.write_sync(add_note, new_note(OTHER, "Sourdough bake 0", "starter feeding 0"))
    query = db.read_sync(_bits, "Sourdough bake 3 starter feeding")

    def nearest(k: int = 20) -> list[int]:
        return db.read_sync(lambda conn: index.nearest(conn, GUILD, query, k, kind=None))

    def exact(k: int = 20) -> list[int]:
        return db.read_sync(_exact, GUILD, query, k)

    assert nearest() == exact() and len(nearest()) == 12  # the other guild's note is not seen

    added = db.write_sync(
        add_note, new_note(GUILD, "Rye loaf", "baked by Kai", participants=((7, "Kai"),))
    )
    assert added in nearest() and nearest() == exact()

    db.write_sync(forget_member, GUILD, 7)
    assert added not in nearest() and nearest() == exact()

    ids = db.read_sync(
        lambda conn: [int(r[0]) for r in conn.execute("SELECT id FROM interaction_notes")]
    )
    db.write_sync(stage_vectors, [(note_id, hash_embedding(f"other {note_id}")) for note_id in ids])
    assert db.write_sync(swap_note_vectors, "test-model", LOCAL_EMBEDDING_DIMENSION) == len(ids)
    assert nearest() == exact()


def test_kind_filter_and_small_k(db: Database) -> None:
    """The kind filter applies before the cut, and k larger than the guild is all of it."""
    index = BinaryIndex()
    conversation = db.write_sync(add_note, new_note(GUILD, "Chess openings", "Sicilian"))
    cluster = db.write_sync(
        add_note, new_note(GUILD, "Chess", "openings", note_type="topic_cluster")
    )
    query = db.read_sync(_bits, "Chess openings Sicilian")

    def nearest(kind: str | None, k: int) -> list[int]:
        return db.read_sync(lambda conn: index.nearest(conn, GUILD, query, k, kind=kind))

    assert nearest("conv", 5) == [conversation]
    assert nearest("cluster", 5) == [cluster]
    assert sorted(nearest(None, 5)) == sorted([conversation, cluster])
    assert len(nearest(None, 1)) == 1
    assert nearest(None, 0) == []
    assert db.read_sync(lambda conn: index.nearest(conn, 99, query, 5, kind=None)) == []


def test_ties_at_the_cut_go_to_the_lowest_ids(db: Database) -> None:
    """With many notes at the k-th distance, the cut keeps the lowest ids, as the SQL scan."""
    index = BinaryIndex()
    for i in range(30):
        db.write_sync(add_note, new_note(GUILD, "Same title", "same summary" if i % 3 else f"{i}"))
    query = db.read_sync(_bits, "Same title same summary")
    for k in (1, 3, 7, 20, 30):
        found = db.read_sync(index.nearest, GUILD, query, k, kind=None)
        assert found == db.read_sync(_exact, GUILD, query, k)
