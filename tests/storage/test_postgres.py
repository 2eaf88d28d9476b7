"""The PostgreSQL engine's own parts: its schema against SQLite's, migrations, the owner's
worker thread under both event loops, errors at its boundary, and two processes doing the
same step at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TypeVar

import anyio
import psycopg
import pytest

from tests.pg import embedded_postgres
from tests.storage.test_profiles import GUILD, new_note
from vivy.errors import SchemaTooNew, StorageError
from vivy.memory.buffers import CloseReason
from vivy.memory.facts import NewFact
from vivy.state.profile import ProfilePlan
from vivy.storage import buffers as pg_buffers
from vivy.storage import members as pg_members
from vivy.storage import notes as pg_notes
from vivy.storage import profiles as pg_profiles
from vivy.storage.areas import BufferStore
from vivy.storage.dialect import Tx
from vivy.storage.evidence import evidence_problems
from vivy.storage.postgres.db import (
    SIDE_CONNECTIONS,
    PgConnection,
    PgDatabase,
    PgSide,
    connect,
    schema_version,
)
from vivy.storage.postgres.dialect import postgres_tx
from vivy.storage.postgres.evidence import postings_problems
from vivy.storage.postgres.keywords import keyword_search, plan_terms
from vivy.storage.postgres.readonly import open_postgres_readonly
from vivy.storage.postgres.schema import PG_MIGRATIONS, PG_SCHEMA_VERSION, VERSION_TABLE
from vivy.storage.sqlite.db import Connection, Database
from vivy.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

T = TypeVar("T")

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed (the dev extra)"
)

#: Columns only one engine has, each standing in for the other engine's index machinery:
#: PostgreSQL's generated ``tsvector`` columns are SQLite's FTS5 tables, its identity
#: ``position`` is SQLite's rowid order, and the bits of its note vectors are made when the
#: in-memory copy reads them, where SQLite stores them (``embedding_bits``).
#: The shard leases are coordination state of a PostgreSQL fleet (a SQLite file has one
#: process), not data. The postings tables are PostgreSQL's keyword index, kept by triggers
#: (SQLite's FTS5 tables keep theirs).
LEASE_COLUMNS = {
    ("shard_leases", column)
    for column in ("shard_id", "shard_count", "owner", "epoch", "expires_at", "heartbeat_at")
} | {
    ("shard_epochs", column)
    for column in (
        "shard_id",
        "epoch",
        "shard_count",
        "owner",
        "acquired_at",
        "acquired_seq",
        "writes",
        "last_write_seq",
    )
}
POSTINGS_COLUMNS = {
    ("note_postings", column)
    for column in ("lexeme", "guild_id", "note_type", "note_id", "tf", "length")
} | {
    ("window_postings", column)
    for column in ("lexeme", "guild_id", "window_id", "note_id", "tf", "length")
}
ONLY_POSTGRES = (
    {
        ("interaction_notes", "notes_fts"),
        ("evidence_windows", "evidence_fts"),
        ("note_participants", "position"),
    }
    | LEASE_COLUMNS
    | POSTINGS_COLUMNS
)
ONLY_SQLITE = {("vec_notes", "embedding_bits")}


def sqlite_columns(db: Database) -> set[tuple[str, str]]:
    """(table, column) of every table of a SQLite database, FTS5 and sqlite-vec internals
    left out."""

    def read(conn: Connection) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT LIKE '%fts%' AND name NOT LIKE 'vec_notes_%'"
        ).fetchall()
        for (table,) in tables:
            for column in conn.execute(f"PRAGMA table_info({table})").fetchall():
                found.add((str(table), str(column[1])))
        return found

    return db.read_sync(read)


def postgres_columns(conn: PgConnection) -> set[tuple[str, str]]:
    """(table, column) of every table of the PostgreSQL schema but the version's."""
    rows = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name != %s",
        (VERSION_TABLE,),
    ).fetchall()
    return {(str(t), str(c)) for t, c in rows}


@pytest.fixture
def pg(pg_uri: str) -> Iterator[PgConnection]:
    """A plain connection to a fresh, migrated PostgreSQL schema."""
    PgDatabase.open(pg_uri).close()
    conn = connect(pg_uri)
    try:
        yield conn
    finally:
        conn.close()


def test_every_sqlite_migration_has_its_postgres_twin() -> None:
    """Both engines step through the same logical schema versions."""
    assert len(PG_MIGRATIONS) == len(MIGRATIONS)
    assert PG_SCHEMA_VERSION == SCHEMA_VERSION


def test_tables_and_columns_are_those_of_sqlite(db: Database, pg: PgConnection) -> None:
    """Both engines hold the same tables and columns, but for the named index stand-ins."""
    sqlite = sqlite_columns(db)
    postgres = postgres_columns(pg)
    assert sqlite >= ONLY_SQLITE and postgres >= ONLY_POSTGRES
    assert postgres - ONLY_POSTGRES == sqlite - ONLY_SQLITE


def test_vectors_are_read_by_guild_and_keywords_from_their_postings(pg: PgConnection) -> None:
    """Note vectors have no vector index to keep up (each guild's are searched in memory,
    read through a b-tree of the guild's notes in note order); keywords are in the postings
    tables' primary keys, and no GIN index is left to keep up; the note and window vectors
    are kept in their rows."""
    rows = pg.execute(
        "SELECT tablename, indexname, indexdef FROM pg_indexes"
        " WHERE schemaname = current_schema() AND (indexdef LIKE '%USING hnsw%'"
        " OR indexdef LIKE '%USING ivfflat%' OR indexdef LIKE '%USING gin%'"
        " OR tablename LIKE '%postings' OR tablename = 'vec_notes') ORDER BY tablename, indexname"
    ).fetchall()
    assert [(table, name) for table, name, _ in rows] == [
        ("note_postings", "note_postings_pkey"),
        ("vec_notes", "vec_notes_by_guild"),
        ("vec_notes", "vec_notes_pkey"),
        ("window_postings", "window_postings_pkey"),
    ]
    assert rows[1][2].endswith("USING btree (guild_id, note_id)")
    stored = pg.execute(
        "SELECT attrelid::regclass::text, attstorage FROM pg_attribute"
        " WHERE attname = 'embedding'"
        " AND attrelid = ANY('{vec_notes,evidence_windows}'::regclass[])"
        " ORDER BY 1"
    ).fetchall()
    assert stored == [("evidence_windows", "m"), ("vec_notes", "m")]  # in the row, not TOAST


def test_version_5_indexes_the_notes_a_version_4_database_already_holds(pg_uri: str) -> None:
    """Upgrading a database of version 4 makes the postings of the notes and windows it
    holds (the triggers only see rows written after them), and version 8 drops the vector
    index for the in-memory copies' b-tree; the keyword search then finds the old note."""
    conn = connect(pg_uri)
    try:
        conn.execute(f"CREATE TABLE {VERSION_TABLE} (version INTEGER NOT NULL)")
        conn.execute(f"INSERT INTO {VERSION_TABLE} VALUES (0)")
        for number, script in enumerate(PG_MIGRATIONS[:4], start=1):
            conn.execute(script.encode())
            conn.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (number,))
        tx = postgres_tx(conn)
        buffer_id = pg_buffers.open_buffer(tx, GUILD, 1, "general", 100.0, 1500.0)
        pg_buffers.close_buffer(tx, buffer_id, 200.0, CloseReason.INACTIVITY)
        note = replace(new_note(7), title="Chess night", summary="They planned chess.")
        note_id = pg_notes.commit_conversation_note(tx, buffer_id, note)
        assert conn.execute("SELECT to_regclass('note_postings')").fetchone() == (None,)
        PgDatabase.open(pg_uri).close()
        assert schema_version(conn) == SCHEMA_VERSION
        plan = plan_terms(conn, ["chess"])
        found = keyword_search(conn, GUILD, plan, note_type=None, limit=5)
        assert [match.note_id for match in found] == [note_id]
        assert evidence_problems(postgres_tx(conn)) + postings_problems(conn) == []
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'vec_notes'"
            " AND schemaname = current_schema() ORDER BY indexname"
        ).fetchall()
        assert [name for name, _ in indexes] == ["vec_notes_by_guild", "vec_notes_pkey"]
        assert indexes[0][1].endswith("USING btree (guild_id, note_id)")
    finally:
        conn.close()


def test_opening_again_migrates_nothing_and_a_newer_schema_is_refused(
    pg_uri: str, pg: PgConnection
) -> None:
    """A migrated database opens as it is; one written by a newer Vivy is refused."""
    assert schema_version(pg) == SCHEMA_VERSION
    PgDatabase.open(pg_uri).close()
    assert schema_version(pg) == SCHEMA_VERSION
    pg.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaTooNew):
        PgDatabase.open(pg_uri)


def test_a_failing_write_changes_nothing_and_a_closed_owner_refuses(pg_uri: str) -> None:
    """An error inside a write rolls the whole call back and arrives as a StorageError."""
    db = PgDatabase.open(pg_uri)

    def insert_then_fail(conn: PgConnection) -> None:
        conn.execute("INSERT INTO meta (key, value) VALUES ('a', '1')")
        conn.execute("INSERT INTO meta (key, value) VALUES ('a', '2')")

    with pytest.raises(StorageError, match="UNIQUE constraint failed"):
        db.write_sync(insert_then_fail)
    assert db.read_sync(lambda c: c.execute("SELECT COUNT(*) FROM meta").fetchone()) == (0,)
    db.close()
    with pytest.raises(StorageError, match="closed"):
        db.read_sync(lambda c: c.execute("SELECT 1").fetchone())


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_the_owner_works_on_a_worker_thread_under_both_event_loops(
    pg_uri: str,
) -> None:
    """Concurrent calls from many tasks run one at a time on a worker thread, each in its
    own transaction, under asyncio and trio (real time)."""
    db = PgDatabase.open(pg_uri)
    buffers = BufferStore(db)
    ids: list[int] = []
    try:

        async def open_one(channel_id: int) -> None:
            ids.append(await buffers.open_buffer(1, channel_id, "c", 0.0, 60.0))

        async with anyio.create_task_group() as tasks:
            for channel_id in range(20):
                tasks.start_soon(open_one, channel_id)
        thread = await db.read(lambda _conn: threading.get_ident())
    finally:
        db.close()
    assert sorted(ids) == list(range(1, 21))
    assert thread != threading.get_ident()


def test_a_dropped_connection_fails_one_call_and_the_next_connects_again(pg_uri: str) -> None:
    """The server ends the owner's session (a restart or failover does): the call that finds
    the connection broken fails with StorageError, the next one reconnects and succeeds."""
    db = PgDatabase.open(pg_uri)
    try:
        pid = db.read_sync(lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        with connect(pg_uri) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StorageError):
            db.read_sync(lambda conn: conn.execute("SELECT 1").fetchone())
        again = db.read_sync(lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        assert again != pid
    finally:
        db.close()


def test_a_dropped_side_connection_fails_one_read_and_the_next_reconnects(pg_uri: str) -> None:
    """The side connections a search reads on behave as the owner's: opened on first use,
    read-only, and after the server dropped one, the read that finds it broken fails with
    StorageError and the next one connects again."""
    db = PgDatabase.open(pg_uri)

    def side_pids(conn: PgConnection, sides: tuple[PgSide, ...]) -> list[int]:
        return [
            int(side.read(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0]))
            for side in sides
        ]

    try:
        pids = anyio.run(db.read_with_sides, side_pids)
        assert len(set(pids)) == SIDE_CONNECTIONS
        (side, *_) = db_sides(db)
        with pytest.raises(StorageError, match="read-only"):
            side.read(lambda c: c.execute("INSERT INTO meta (key, value) VALUES ('a', 'b')"))
        with connect(pg_uri) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pids[0],))
        with pytest.raises(StorageError):
            side.read(lambda c: c.execute("SELECT 1").fetchone())
        again = side.read(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0])
        assert again not in pids
    finally:
        db.close()


def db_sides(db: PgDatabase) -> tuple[PgSide, ...]:
    """The side connections of ``db``, as a search receives them."""
    return anyio.run(db.read_with_sides, lambda conn, sides: sides)


def race(uri: str, first: Callable[[Tx], object], second: Callable[[], T]) -> T:
    """Run ``first`` in an open transaction, start ``second`` on another thread, wait until
    it waits for a lock the first holds, commit the first, and return what ``second`` gave.

    This is two processes doing the same step at once, in the one order that matters.
    """
    conn = connect(uri)
    watcher = connect(uri)
    results: list[T] = []
    try:
        conn.execute("BEGIN")
        first(postgres_tx(conn))
        thread = threading.Thread(target=lambda: results.append(second()))
        thread.start()
        for _ in range(100_000):  # each probe is a round trip to the server; no sleeping
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database()"
            ).fetchone()
            if row is not None and row[0] > 0:
                break
        else:
            pytest.fail("the second call never waited for the first")
        conn.execute("COMMIT")
        thread.join()
    finally:
        conn.close()
        watcher.close()
    assert len(results) == 1
    return results[0]


def test_two_owners_committing_one_buffer_write_one_note(pg_uri: str) -> None:
    """A process committing a buffer's note while another does waits, then finds it gone."""
    db = PgDatabase.open(pg_uri)
    try:
        buffer_id = db.write_sync(pg_buffers.open_buffer, GUILD, 1, "general", 100.0, 1500.0)
        db.write_sync(pg_buffers.close_buffer, buffer_id, 200.0, CloseReason.INACTIVITY)
        late = race(
            pg_uri,
            lambda conn: pg_notes.commit_conversation_note(conn, buffer_id, new_note(7)),
            lambda: db.write_sync(pg_notes.commit_conversation_note, buffer_id, new_note(7)),
        )
        assert late is None
        assert db.read_sync(
            lambda c: c.execute("SELECT count(*) FROM interaction_notes").fetchone()
        ) == (1,)
        assert db.read_sync(
            lambda c: c.execute("SELECT count(*) FROM profile_updates").fetchone()
        ) == (1,)
    finally:
        db.close()


def test_two_owners_applying_plans_to_one_profile_apply_one(pg_uri: str) -> None:
    """Two plans computed against the same profile version: the second to commit is refused
    and writes nothing."""
    db = PgDatabase.open(pg_uri)
    plan = ProfilePlan(added=[NewFact("bio", "Lives in Oslo", "stated", None, "x")])
    try:
        applied = race(
            pg_uri,
            lambda conn: pg_profiles.apply_plan(conn, GUILD, 7, 0, plan, 100.0),
            lambda: db.write_sync(pg_profiles.apply_plan, GUILD, 7, 0, plan, 101.0),
        )
        assert applied is False
        assert db.read_sync(pg_profiles.profile_version, GUILD, 7) == 1
        assert len(db.read_sync(pg_profiles.active_facts, GUILD, 7)) == 1
    finally:
        db.close()


def test_the_read_only_view_reads_what_inspect_shows_and_writes_nothing(pg_uri: str) -> None:
    """Guilds, members, facts, notes, lore and the embedding state read back; a write is
    refused; orphans written with triggers off and an invalid index are reported."""
    db = PgDatabase.open(pg_uri)
    try:
        db.write_sync(pg_members.remember_fact, GUILD, 12, "Sam", "bio", "Lives in Oslo", "x", 1.0)
        db.write_sync(pg_members.remember_fact, GUILD, 11, "Alex", "bio", "Plays chess", "x", 1.0)
        db.write_sync(pg_members.add_lore, GUILD, 11, "Founded in 2019", 1.0)
        buffer_id = db.write_sync(pg_buffers.open_buffer, GUILD, 1, "general", 100.0, 1500.0)
        db.write_sync(pg_buffers.close_buffer, buffer_id, 200.0, CloseReason.INACTIVITY)
        note_id = db.write_sync(pg_notes.commit_conversation_note, buffer_id, new_note(7))
    finally:
        db.close()
    with open_postgres_readonly(pg_uri) as view:
        assert view.schema_version() == SCHEMA_VERSION
        assert view.guild_ids() == [GUILD]
        assert view.guild_members(GUILD) == [(11, "Alex"), (12, "Sam"), (7, "user7")]
        assert view.member_name(GUILD, 12) == "Sam" and view.member_name(GUILD, 99) is None
        facts = view.profile_records(GUILD, 12, include_invalidated=False)
        assert [f.text for f in facts] == ["Lives in Oslo"]
        assert view.active_lore(GUILD) == ["Founded in 2019"]
        assert view.newest_note_date(GUILD) == "2026-03-02"
        assert [n.id for n in view.list_notes(GUILD, since="2026-03-02")] == [note_id]
        assert view.list_notes(GUILD, note_type="topic_cluster") == []
        state = view.embedding_state()
        assert (state.notes, state.vectors, state.vector_dimension, state.reembed_staged) == (
            1,
            1,
            768,
            False,
        )
        assert view.integrity_problems() == view.foreign_key_problems() == []
        assert view.evidence_problems() == []
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            view._tx.execute("DELETE FROM server_lore")
    with connect(pg_uri) as admin:
        admin.execute("SET session_replication_role = replica")
        admin.execute(
            "INSERT INTO note_participants (note_id, user_id, display_name) VALUES (999, 7, 'x')"
        )
        admin.execute(
            "UPDATE pg_index SET indisvalid = false"
            " WHERE indexrelid = 'server_lore_by_guild'::regclass"
        )
    with open_postgres_readonly(pg_uri) as view:
        assert view.foreign_key_problems() == [
            "note_participants rows with note_id = 999 reference a missing interaction_notes row"
        ]
        assert view.integrity_problems() == [
            "index server_lore_by_guild is invalid; rebuild it with REINDEX"
        ]


def test_the_read_only_view_refuses_a_database_vivy_never_migrated(pg_uri: str) -> None:
    """An empty schema is not a Vivy database."""
    with pytest.raises(StorageError, match="schema version 0"):
        open_postgres_readonly(pg_uri)
