"""The PostgreSQL search primitives (the guild's vectors in memory, re-ranked exactly; weighted
keyword search scoped to a guild; writers of a guild taking turns) and the two engines'
searches compared on the same data."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.pg import embedded_postgres
from tests.storage import on_conn
from tests.storage.test_profiles import new_note
from vivy.errors import StorageError
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.dates import note_date
from vivy.memory.evidence import windows_of
from vivy.memory.notes import NewNote, Participant
from vivy.storage import buffers, notes
from vivy.storage.dialect import Tx
from vivy.storage.port import Store
from vivy.storage.postgres import search as pg_search
from vivy.storage.postgres.db import PgConnection, PgDatabase, connect
from vivy.storage.postgres.dialect import postgres_tx, vector_text
from vivy.storage.postgres.keywords import keyword_search, plan_terms
from vivy.storage.postgres.search import PG_VECTORS, vector_search
from vivy.storage.postgres.stores import open_postgres_store
from vivy.storage.search_types import NoteSearch, NoteSearchResult, TimeRange
from vivy.storage.sqlite.stores import open_sqlite_store
from vivy.storage.vector_index import BinaryIndex, vectors_adding, vectors_replaced

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
    """60 notes of another guild nearer the query than the five conversations of ours
    (cosine distance about 0.1 against 0.5), and three topic clusters of ours nearer still."""
    rng = random.Random(7)
    rows = [(100 + i, CROWD, "conv", vector_text(around(rng, 0.02))) for i in range(60)]
    rows += [(1 + i, MINE, "conv", vector_text(around(rng, 0.06))) for i in range(5)]
    rows += [(10 + i, MINE, "cluster", vector_text(around(rng, 0.01))) for i in range(3)]
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding)"
            " VALUES (%s, %s, %s, %s::vector)",
            rows,
        )


def test_a_guild_is_searched_in_its_own_copy_and_ranked_exactly(
    db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the in-memory copy of the guild's vectors (read from PostgreSQL three rows at a
    time here), a guild whose notes are all farther than 60 of another guild's still gets its
    five nearest, in pgvector's exact order; each note type finds only its own notes."""
    monkeypatch.setattr(pg_search, "LOAD_BATCH", 3)
    db.write_sync(on_conn(fill_vectors))
    index = BinaryIndex(PG_VECTORS)

    def exact(conn: PgConnection, kind: str) -> list[int]:
        rows = conn.execute(
            "SELECT note_id FROM vec_notes WHERE guild_id = %s AND note_kind = %s"
            " ORDER BY embedding <=> %s::vector, note_id",
            (MINE, kind, vector_text(QUERY)),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def found(note_type: str | None, limit: int) -> list[int]:
        matches = db.read_sync(
            on_conn(vector_search),
            index,
            MINE,
            QUERY,
            note_type=note_type,
            limit=limit,
            candidates=limit,
        )
        return [match.note_id for match in matches]

    conversations = found("conversation", 5)
    assert conversations == db.read_sync(on_conn(exact), "conv")
    assert sorted(conversations) == [1, 2, 3, 4, 5]
    assert found("topic_cluster", 5) == db.read_sync(on_conn(exact), "cluster") != []
    assert sorted(found(None, 8)) == [1, 2, 3, 4, 5, 10, 11, 12]


def test_a_copy_takes_in_new_notes_and_loads_again_after_a_removal(db: PgDatabase) -> None:
    """Once loaded, a guild's copy takes in the guild's notes committed after it (another
    guild's change nothing), and loads again when a note's vector is removed."""
    index = BinaryIndex(PG_VECTORS)
    rng = random.Random(3)

    def commit(tx: Tx, guild_id: int) -> int:
        buffer_id = buffers.open_buffer(tx, guild_id, 1, "general", 100.0, 1500.0)
        buffers.close_buffer(tx, buffer_id, 200.0, CloseReason.INACTIVITY)
        note = replace(new_note(7), guild_id=guild_id, embedding=around(rng, 0.05))
        note_id = notes.commit_conversation_note(tx, buffer_id, note)
        assert note_id is not None
        return note_id

    def nearest(conn: PgConnection) -> list[int]:
        found = vector_search(conn, index, MINE, QUERY, note_type=None, limit=10, candidates=10)
        return sorted(match.note_id for match in found)

    def remove(tx: Tx, note_id: int) -> None:
        vectors_replaced(tx, [note_id])
        tx.execute("DELETE FROM vec_notes WHERE note_id = ?", (note_id,))

    first = db.write_sync(commit, MINE)
    assert db.read_sync(on_conn(nearest)) == [first]
    db.write_sync(commit, CROWD)
    second = db.write_sync(commit, MINE)
    assert db.read_sync(on_conn(nearest)) == [first, second]
    db.write_sync(remove, first)
    assert db.read_sync(on_conn(nearest)) == [second]


def test_a_guild_takes_turns_to_add_notes(pg_uri: str) -> None:
    """A transaction adding a note holds the guild's turn until it ends: a second writer of
    the same guild waits (here: gives up at its lock timeout), one of another guild does not.
    So a guild's note ids grow in the order they commit, and an in-memory copy that has read
    up to one misses none below it."""
    second = PgDatabase.open(pg_uri)  # migrates the schema
    first = connect(pg_uri)

    def add(tx: Tx, guild_id: int) -> None:
        tx.execute("SET LOCAL lock_timeout = '100ms'")
        vectors_adding(tx, guild_id)

    try:
        with first.transaction():
            vectors_adding(postgres_tx(first), MINE)
            second.write_sync(add, CROWD)
            with pytest.raises(StorageError, match="lock"):
                second.write_sync(add, MINE)
        second.write_sync(add, MINE)
    finally:
        first.close()
        second.close()


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
    chess = db.read_sync(on_conn(plan_terms), ["chess"])
    found = db.read_sync(on_conn(keyword_search), MINE, chess, note_type=None, limit=10)
    assert [match.note_id for match in found] == [in_title, in_summary]
    assert found[0].bm25 > found[1].bm25 > 0
    assert (
        db.read_sync(on_conn(keyword_search), MINE, chess, note_type="topic_cluster", limit=10)
        == []
    )
    nothing = db.read_sync(on_conn(plan_terms), ["nothing"])
    assert db.read_sync(on_conn(keyword_search), MINE, nothing, note_type=None, limit=10) == []


def test_terms_never_become_query_syntax(db: PgDatabase) -> None:
    """Quotes, operators and backslashes in a term are bound parameters: planning and
    searching them runs, and finds only a note that holds their words."""

    def commit(conn: PgConnection) -> int:
        buffer_id = buffers.open_buffer(conn, MINE, 1, "general", 100.0, 1500.0)
        buffers.close_buffer(conn, buffer_id, 200.0, CloseReason.INACTIVITY)
        note = replace(new_note(7), guild_id=MINE, title="It's a plan", summary="Nothing else.")
        note_id = notes.commit_conversation_note(conn, buffer_id, note)
        assert note_id is not None
        return note_id

    note_id = db.write_sync(commit)
    odd = db.read_sync(on_conn(plan_terms), ["it's", "a|b", "x\\", "'", "plan)"])
    # "x" is in no note and "'" makes no lexeme: both are dropped, as any unmatched term.
    assert set(odd.lexeme_weights) == {"it", "a", "plan"}
    found = db.read_sync(on_conn(keyword_search), MINE, odd, note_type=None, limit=5)
    assert [match.note_id for match in found] == [note_id]


#: Words of the cross-engine corpus: plain nouns that every stemmer leaves alone and no
#: stop-word list holds, so both engines' indexes see the same terms.
WORDS = (
    "biscuit garden kayak violin pottery chess rocket lantern harbor meadow falcon cactus"
    " tundra glacier walrus puzzle orchid canyon banjo comet"
).split()
NAMES = ("Sam", "Maya", "Ravi", "Lena")
WALL0 = 1772409600.0


def corpus(rng: random.Random, guild_id: int, index: int) -> tuple[NewNote, list[BufferedMessage]]:
    """One conversation of ``guild_id`` (its ``index``-th), with six lines, two evidence
    windows and random unit vectors; message ids are unique across guilds."""
    start = WALL0 + index * 7200.0
    base = guild_id * 1000 + index * 10
    people = rng.sample(range(len(NAMES)), 2)
    lines = [
        BufferedMessage(
            base + i,
            people[i % 2] + 1,
            NAMES[people[i % 2]],
            " ".join(rng.choices(WORDS, k=4)),
            start + i,
        )
        for i in range(6)
    ]
    windows = windows_of([(m.message_id, m.author_name, m.text) for m in lines])
    note = NewNote(
        guild_id=guild_id,
        channel_id=guild_id + index % 3,
        channel_name="general",
        note_type="conversation",
        title=" ".join(rng.choices(WORDS, k=2)),
        summary=" ".join(rng.choices(WORDS, k=6)),
        topics=(rng.choice(WORDS),),
        decisions=(),
        open_questions=(),
        entities=(),
        participants=tuple(Participant(p + 1, NAMES[p], 3) for p in people),
        note_date=note_date(start),
        quality="ok",
        model="test",
        embedding=unit_vector(rng),
        created_at=start + 3600,
        started_at=start,
        ended_at=start + 6,
        windows=tuple(windows),
        window_embeddings=tuple(unit_vector(rng) for _ in windows),
    )
    return note, lines


def unit_vector(rng: random.Random) -> list[float]:
    """A random unit vector."""
    values = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = sum(x * x for x in values) ** 0.5
    return [x / norm for x in values]


async def fill(store: Store, seed: int) -> None:
    """Store the same 24 conversations of each of two guilds through the port."""
    rng = random.Random(seed)
    for index in range(24):
        for guild_id in (MINE, CROWD):
            note, lines = corpus(rng, guild_id, index)
            buffer_id = await store.buffers.open_buffer(
                guild_id, note.channel_id, "general", lines[0].created_at, 1500.0
            )
            await store.buffers.append_messages(buffer_id, lines, lines[-1].created_at)
            await store.buffers.close_buffer(
                buffer_id, lines[-1].created_at + 1500.0, CloseReason.INACTIVITY
            )
            assert await store.notes.commit_conversation_note(buffer_id, note) is not None


def searches(seed: int) -> list[NoteSearch]:
    """Searches with limits above a guild's size, so no engine's ranking decides what is
    found: vector, three words, a day and a member's name."""
    rng = random.Random(seed)
    found: list[NoteSearch] = []
    for index in range(12):
        day = WALL0 + rng.randrange(2) * 86400.0
        found.append(
            NoteSearch(
                guild_id=(MINE, CROWD)[index % 2],
                vector=unit_vector(rng),
                terms=tuple(rng.sample(WORDS, 3)),
                note_type=None,
                candidates=100,
                keyword_candidates=100,
                window_candidates=500,
                name_grams=(rng.choice(NAMES).lower(),),
                time=TimeRange(day, day + 86400.0) if index % 3 else None,
                time_candidates=100,
            )
        )
    return found


def meaning(result: NoteSearchResult) -> dict[int, tuple[object, ...]]:
    """What a result says of each candidate, leaving out the keyword strengths' scale (BM25
    on SQLite, ``ts_rank_cd`` on PostgreSQL) but not whether a keyword search found it."""
    return {
        c.note_id: (
            c.channel_id,
            c.at,
            c.started,
            None if c.similarity is None else round(c.similarity, 4),
            None if c.window_similarity is None else round(c.window_similarity, 4),
            c.bm25 is not None,
            c.window_bm25 is not None,
            round(c.coverage, 6),
            c.terms,
            c.named,
            c.time_distance_s,
        )
        for c in result.candidates
    }


@pytest.mark.anyio
async def test_both_engines_find_the_same_candidates(pg_uri: str, tmp_path: Path) -> None:
    """On the same data, every search finds the same notes on SQLite and PostgreSQL, with
    the same fields and term weights; only the keyword strengths' scale differs. Engine-
    specific because it compares the two engines."""
    sqlite = open_sqlite_store(tmp_path / "vivy.db", inline=True)
    postgres = open_postgres_store(pg_uri, inline=True)
    try:
        await fill(sqlite, 11)
        await fill(postgres, 11)
        asked = searches(12)
        on_sqlite = await sqlite.search.find_notes(asked)
        on_postgres = await postgres.search.find_notes(asked)
        for search, lite, pg in zip(asked, on_sqlite, on_postgres, strict=True):
            assert meaning(lite) == meaning(pg), search
            assert set(lite.windows) == set(pg.windows)
            assert lite.named == pg.named
            assert lite.term_weights == pytest.approx(pg.term_weights)
            assert not lite.vector_failed and not pg.vector_failed
        # Every way of finding a note took part in the comparison.
        found = [c for result in on_postgres for c in result.candidates]
        assert all(c.similarity is not None for c in found)
        assert any(c.bm25 is not None for c in found)
        assert any(c.window_bm25 is not None and c.bm25 is None for c in found)
        assert any(c.named for c in found) and any(c.time_distance_s == 0.0 for c in found)
        assert {c.note_id for c in found} == set(range(1, 49))
    finally:
        sqlite.close()
        postgres.close()
