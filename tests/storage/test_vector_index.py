"""The in-memory binary index stays in step with ``vec_notes``: it finds what the database
holds, no more, through added notes, forget-me and re-embedding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.hashing import hash_embedding
from tests.retrieval import add_note, new_note
from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, provider
from vivy.storage import vector_index
from vivy.storage.members import forget_member
from vivy.storage.reembed import stage_vectors, swap_note_vectors
from vivy.storage.sqlite.db import Connection, Database
from vivy.storage.sqlite.dialect import sqlite_tx
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.sqlite.search import SQLITE_VECTORS
from vivy.storage.vector_index import (
    BinaryIndex,
    VectorLengthError,
    query_bits,
    vectors_replaced,
)
from vivy.storage.vectors import binary_dimensions

GUILD, OTHER = 1, 2


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.open(tmp_path / "vivy.db", inline=True)
    yield database
    database.close()


def _bits(conn: Connection, text: str) -> bytes:
    """The binary copy of ``text``'s vector, made as the notes' (the local model's)."""
    vector = provider.shared_embedder().embed([text])[0]
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
    index = BinaryIndex(SQLITE_VECTORS)
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
    index = BinaryIndex(SQLITE_VECTORS)
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
    index = BinaryIndex(SQLITE_VECTORS)
    for i in range(30):
        db.write_sync(add_note, new_note(GUILD, "Same title", "same summary" if i % 3 else f"{i}"))
    query = db.read_sync(_bits, "Same title same summary")
    for k in (1, 3, 7, 20, 30):
        found = db.read_sync(index.nearest, GUILD, query, k, kind=None)
        assert found == db.read_sync(_exact, GUILD, query, k)


@pytest.mark.parametrize("dimension", [8, 256, 384, 768])
def test_query_bits_are_sqlite_vecs(db: Database, dimension: int) -> None:
    """The question's bits are made as sqlite-vec makes the notes' (leading dimensions, one
    bit each, set where positive), so hamming distances compare like with like."""
    rng = np.random.default_rng(dimension)
    for _ in range(5):
        vector = serialize_vector(rng.standard_normal(dimension).astype(np.float32).tolist())
        made = db.read_sync(
            lambda conn, v=vector: bytes(
                conn.execute(
                    "SELECT vec_quantize_binary(vec_slice(?, 0, ?))",
                    (v, binary_dimensions(dimension)),
                ).fetchone()[0]
            )
        )
        assert query_bits(vector) == made


def _exact_cosine(conn: Connection, guild_id: int, vector: bytes, k: int) -> list[int]:
    """The guild's ``k`` notes nearest ``vector`` by sqlite-vec's exact cosine distance."""
    rows = conn.execute(
        "SELECT note_id FROM vec_notes WHERE guild_id = ? AND length(embedding) = ?"
        " ORDER BY vec_distance_cosine(embedding, ?), note_id LIMIT ?",
        (guild_id, len(vector), vector, k),
    ).fetchall()
    return [int(r[0]) for r in rows]


_TOPICS = (
    "sourdough starter feeding schedule",
    "night shifts at the hospital ward",
    "chess openings and the Sicilian defence",
    "training for a half marathon in the rain",
    "fixing a leaking bathroom tap",
    "the band's new album and its tour dates",
    "planting tomatoes on a small balcony",
    "learning Japanese with flash cards",
)


def test_shortlist_keeps_the_exact_nearest_and_skips_what_cannot_be_compared(
    db: Database,
) -> None:
    """The codes' approximate cosine keeps every note of the exact top ``k`` within a
    shortlist of 1.5 ``k``, and follows added notes; a vector of another length (a half-done
    re-embedding) or of zeros is never shortlisted, as the exact comparison skips it; a
    question of a length no note has is refused."""
    index = BinaryIndex(SQLITE_VECTORS)
    for i, topic in enumerate(_TOPICS * 3):
        db.write_sync(add_note, new_note(GUILD, f"{topic} {i}", f"members talked about {topic}"))
    queries = [serialize_vector(provider.shared_embedder().embed([topic])[0]) for topic in _TOPICS]

    def shortlist(vector: bytes, keep: int) -> list[int]:
        return db.read_sync(
            lambda conn: index.shortlist(
                conn, GUILD, vector, candidates=len(_TOPICS) * 4, keep=keep, kind=None
            )
        )

    for query in queries:
        exact = db.read_sync(_exact_cosine, GUILD, query, 6)
        assert set(exact) <= set(shortlist(query, 9))
        assert shortlist(query, 1) == exact[:1]

    added = db.write_sync(add_note, new_note(GUILD, "Pottery wheel", "throwing clay bowls"))
    pottery = serialize_vector(
        provider.shared_embedder().embed(["throwing clay bowls on a wheel"])[0]
    )
    assert shortlist(pottery, 1) == [added]

    def strange(conn: Connection, note_id: int, vector: bytes) -> None:
        vectors_replaced(sqlite_tx(conn), [note_id])
        conn.execute("UPDATE vec_notes SET embedding = ? WHERE note_id = ?", (vector, note_id))

    db.write_sync(strange, added, serialize_vector([0.0] * LOCAL_EMBEDDING_DIMENSION))
    assert added not in shortlist(pottery, 100)
    db.write_sync(strange, added, pottery[: len(pottery) // 2])
    assert added not in shortlist(pottery, 100)
    assert len(shortlist(pottery, 100)) == len(_TOPICS) * 3
    assert shortlist(pottery[: len(pottery) // 2], 100) == [added]
    with pytest.raises(VectorLengthError, match="100 dimensions"):
        shortlist(serialize_vector([1.0] * 100), 5)


def test_notes_added_one_by_one_fill_the_room_and_grow_it(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Notes appended search after search land in the copy's room, or in new arrays when it
    runs out (a room of one row here, so both happen often), and the copy always finds what
    an exact scan of the database finds."""
    monkeypatch.setattr(vector_index, "_LEAST_ROOM", 1)
    index = BinaryIndex(SQLITE_VECTORS)
    query = db.read_sync(_bits, "Sourdough bake 3 starter feeding")
    vector = serialize_vector(
        provider.shared_embedder().embed(["Sourdough bake 3 starter feeding"])[0]
    )
    for i in range(14):
        db.write_sync(add_note, new_note(GUILD, f"Sourdough bake {i}", f"starter feeding {i}"))
        found = db.read_sync(lambda conn: index.nearest(conn, GUILD, query, 30, kind=None))
        assert found == db.read_sync(_exact, GUILD, query, 30) and len(found) == i + 1
        best = db.read_sync(
            lambda conn: index.shortlist(conn, GUILD, vector, candidates=30, keep=1, kind=None)
        )
        assert best == db.read_sync(_exact_cosine, GUILD, vector, 1)
