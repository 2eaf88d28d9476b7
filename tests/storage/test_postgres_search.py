"""The PostgreSQL search primitives: the guild filter inside the HNSW scan, and weighted
keyword search scoped to a guild."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.storage.conftest import embedded_postgres
from tests.storage.test_profiles import new_note
from vivy.state.buffer import CloseReason
from vivy.storage.notes import serialize_vector
from vivy.storage.postgres import buffers, notes
from vivy.storage.postgres.db import PgConnection, PgDatabase
from vivy.storage.postgres.evidence import vector_text
from vivy.storage.postgres.search import keyword_search, tsquery_of, vector_search

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed (the dev extra)"
)

DIM = 768
MINE = 1
CROWD = 2


#: The question's vector: dimension 0.
QUERY = [1.0] + [0.0] * (DIM - 1)


def around(rng: random.Random, spread: float) -> list[float]:
    """A vector near :data:`QUERY`, each dimension off by noise of ``spread``."""
    return [x + rng.gauss(0.0, spread) for x in QUERY]


@pytest.fixture
def db(pg_uri: str) -> Iterator[PgDatabase]:
    """The PostgreSQL owner over a fresh schema, its calls run on the test's thread."""
    database = PgDatabase.open(pg_uri)
    try:
        yield database
    finally:
        database.close()


def fill_vectors(conn: PgConnection) -> None:
    """60 notes of another guild nearer the query than the five of ours (cosine distance
    about 0.1 against 0.5); without the guild's b-tree index, so that the planner (seq scans
    off) can only take the HNSW index."""
    conn.execute("DROP INDEX vec_notes_by_guild")
    rng = random.Random(7)
    rows = [(100 + i, CROWD, "conv", vector_text(around(rng, 0.02))) for i in range(60)]
    rows += [(i, MINE, "conv", vector_text(around(rng, 0.06))) for i in range(5)]
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding)"
            " VALUES (%s, %s, %s, %s::vector)",
            rows,
        )


def test_the_guild_filter_is_inside_the_hnsw_scan(db: PgDatabase) -> None:
    """Through the HNSW index, a guild whose notes are all farther than 60 of another
    guild's still gets its five nearest, best first, where a plain HNSW scan finds none."""
    db.write_sync(fill_vectors)
    query = serialize_vector(QUERY)

    def search(conn: PgConnection) -> tuple[str, list[int]]:
        conn.execute("SET LOCAL enable_seqscan = off")
        found = vector_search(conn, MINE, query, note_type="conversation", limit=5)
        plan = conn.execute(
            "EXPLAIN SELECT note_id FROM vec_notes WHERE guild_id = %s"
            " ORDER BY embedding <=> %s::vector LIMIT 5",
            (MINE, vector_text(QUERY)),
        ).fetchall()
        return "\n".join(str(r[0]) for r in plan), [match.note_id for match in found]

    def plain_scan(conn: PgConnection) -> int:
        conn.execute("SET LOCAL enable_seqscan = off")
        return len(
            conn.execute(
                "SELECT note_id FROM vec_notes WHERE guild_id = %s"
                " ORDER BY embedding <=> %s::vector LIMIT 5",
                (MINE, vector_text(QUERY)),
            ).fetchall()
        )

    def exact(conn: PgConnection) -> list[int]:
        conn.execute("SET LOCAL enable_indexscan = off")
        rows = conn.execute(
            "SELECT note_id FROM vec_notes WHERE guild_id = %s ORDER BY embedding <=> %s::vector",
            (MINE, vector_text(QUERY)),
        ).fetchall()
        return [int(r[0]) for r in rows]

    plan, found = db.read_sync(search)
    assert "vec_notes_hnsw" in plan and found == db.read_sync(exact)
    assert sorted(found) == [0, 1, 2, 3, 4]
    assert db.read_sync(plain_scan) < 5
    assert db.read_sync(vector_search, MINE, query, note_type="topic_cluster", limit=5) == []


def test_keyword_search_weighs_titles_and_stays_in_the_guild(db: PgDatabase) -> None:
    """A term in a title outranks the same term in a summary; another guild's and another
    type's notes are never found."""

    def commit(conn: PgConnection, title: str, summary: str, guild_id: int) -> int:
        buffer_id = buffers.open_buffer(conn, guild_id, 1, "general", 100.0, 1500.0)
        buffers.close_buffer(conn, buffer_id, 200.0, CloseReason.INACTIVITY)
        note = replace(new_note(7), guild_id=guild_id, title=title, summary=summary)
        note_id = notes.commit_conversation_note(conn, buffer_id, note)
        assert note_id is not None
        return note_id

    in_summary = db.write_sync(commit, "Weekend", "They planned a chess night.", MINE)
    in_title = db.write_sync(commit, "Chess night", "They planned the weekend.", MINE)
    db.write_sync(commit, "Chess club", "Chess all day.", CROWD)
    found = db.read_sync(keyword_search, MINE, ["chess"], note_type=None, limit=10)
    assert [match.note_id for match in found] == [in_title, in_summary]
    assert found[0].bm25 > found[1].bm25 > 0
    assert db.read_sync(keyword_search, MINE, ["chess"], note_type="topic_cluster", limit=10) == []
    assert db.read_sync(keyword_search, MINE, ["nothing"], note_type=None, limit=10) == []


def test_terms_never_become_query_syntax() -> None:
    """Quotes, operators and backslashes in a term stay inside one quoted lexeme."""
    assert tsquery_of(["it's", "a|b", "x\\"]) == "'it''s' | 'a|b' | 'x'"
    assert tsquery_of(["", "'"]) is None
