"""The Database: migrations, pragmas, extensions, group commit on a real thread, closing."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlean
import sqlite_vec

from vivy.errors import SchemaTooNew, StorageError
from vivy.storage.sqlite.db import BUSY_TIMEOUT_MS, CHECKPOINT_ROWS, Connection, Database, connect
from vivy.storage.sqlite.schema import SCHEMA_VERSION
from vivy.storage.vectors import EMBEDDING_DIMENSION_DEFAULT

#: Tables (and virtual tables) the first migration creates.
VIVY_TABLES = {
    "users",
    "guild_members",
    "channel_buffers",
    "buffer_messages",
    "channel_watermarks",
    "interaction_notes",
    "note_participants",
    "notes_fts",
    "vec_notes",
    "user_profiles",
    "profile_facts",
    "profile_updates",
    "server_lore",
    "memory_job_log",
    "scheduler_runs",
    "meta",
}


@pytest.fixture
def anyio_backend() -> str:
    """Real threads in real time: the database runs in thread mode on asyncio here."""
    return "asyncio"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A freshly migrated database in thread mode."""
    database = Database.open(tmp_path / "vivy.db")
    try:
        yield database
    finally:
        database.close()


def table_names(conn: Connection) -> set[str]:
    """Names of every table and virtual table (shadow tables included)."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def schema_sql(conn: Connection) -> list[tuple[str, str]]:
    """Every schema object's name and SQL, for comparing schemas."""
    rows = conn.execute("SELECT name, COALESCE(sql, '') FROM sqlite_master ORDER BY name")
    return [(r[0], r[1]) for r in rows]


def meta_rows(conn: Connection) -> list[tuple[Any, ...]]:
    """Every row of ``meta``."""
    return [tuple(r) for r in conn.execute("SELECT key, value FROM meta ORDER BY key")]


def vector(*head: float) -> bytes:
    """A 768-dimension float32 vector starting with ``head``, zeros elsewhere."""
    values = [*head, *([0.0] * (EMBEDDING_DIMENSION_DEFAULT - len(head)))]
    return bytes(sqlite_vec.serialize_float32(values))


def make_table(conn: Connection) -> None:
    """A small table for write tests."""
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")


def keys(conn: Connection) -> list[int]:
    """Keys of the write-test table in order."""
    return [r[0] for r in conn.execute("SELECT k FROM t ORDER BY k")]


# Migrations -----------------------------------------------------------------------------


def test_migrations_create_schema_and_set_version(db: Database) -> None:
    """A new database gets every table and ``user_version`` equal to SCHEMA_VERSION."""
    assert db.read_sync(table_names) >= VIVY_TABLES
    assert db.read_sync(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION


def test_reopening_is_idempotent(tmp_path: Path) -> None:
    """Opening an up-to-date database again changes neither its schema nor its rows."""
    path = tmp_path / "vivy.db"
    first = Database.open(path)
    first.write_sync(lambda c: c.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')"))
    schema = first.read_sync(schema_sql)
    first.close()
    for _ in range(2):
        again = Database.open(path)
        try:
            assert again.read_sync(schema_sql) == schema
            assert again.read_sync(meta_rows) == [("k", "v")]
            version = again.read_sync(lambda c: c.execute("PRAGMA user_version").fetchone()[0])
            assert version == SCHEMA_VERSION
        finally:
            again.close()


def test_newer_schema_is_refused_and_file_left_unchanged(tmp_path: Path) -> None:
    """A database from a newer Vivy fails with SchemaTooNew naming both versions, untouched."""
    path = tmp_path / "future.db"
    newer = SCHEMA_VERSION + 3
    conn = connect(path)
    conn.execute("CREATE TABLE future_things (x INTEGER)")
    conn.execute("INSERT INTO future_things VALUES (1)")
    conn.execute(f"PRAGMA user_version = {newer}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(SchemaTooNew) as info:
        Database.open(path)
    assert info.value.found == newer
    assert info.value.supported == SCHEMA_VERSION
    assert str(newer) in str(info.value) and str(SCHEMA_VERSION) in str(info.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["future.db"]


def test_newer_schema_in_rollback_journal_mode_is_left_unchanged(tmp_path: Path) -> None:
    """A too-new database in rollback-journal mode is refused without being converted to WAL."""
    path = tmp_path / "future.db"
    conn = sqlean.connect(str(path), isolation_level=None)
    conn.execute("CREATE TABLE future_things (x INTEGER)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(SchemaTooNew):
        Database.open(path)
    assert path.read_bytes() == before


SEED_000_DDL = (
    "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, discord_id TEXT UNIQUE NOT NULL,"
    " username TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS facts (id INTEGER PRIMARY KEY,"
    " user_id INTEGER NOT NULL REFERENCES users(id), original_message_id TEXT NOT NULL,"
    " fact_text TEXT NOT NULL, created_at DATETIME DEFAULT CURRENT_TIMESTAMP,"
    " is_active INTEGER DEFAULT 1)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS vec_facts USING vec0(fact_id INTEGER PRIMARY KEY,"
    " embedding float[768])",
)


def seed_000_rows(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of seed 000's three tables."""
    return {
        "users": [tuple(r) for r in conn.execute("SELECT * FROM users ORDER BY id")],
        "facts": [tuple(r) for r in conn.execute("SELECT * FROM facts ORDER BY id")],
        "vec_facts": [
            tuple(r) for r in conn.execute("SELECT fact_id, embedding FROM vec_facts ORDER BY 1")
        ],
    }


def test_seed_000_tables_survive_migration(tmp_path: Path) -> None:
    """An old database's users, facts and vec_facts keep their schema and rows after migrating."""
    path = tmp_path / "voltgpt.db"
    conn = connect(path)
    for ddl in SEED_000_DDL:
        conn.execute(ddl)
    conn.execute("INSERT INTO users (id, discord_id, username) VALUES (1, '111', 'ada')")
    conn.execute("INSERT INTO users (id, discord_id, username) VALUES (2, '222', 'bob')")
    conn.execute(
        "INSERT INTO facts (id, user_id, original_message_id, fact_text, created_at, is_active)"
        " VALUES (1, 1, '9001', 'likes tea', '2025-01-01 10:00:00', 1),"
        " (2, 2, '9002', 'lives in Oslo', '2025-01-02 11:00:00', 0)"
    )
    conn.execute("INSERT INTO vec_facts (fact_id, embedding) VALUES (1, ?)", (vector(1.0),))
    conn.execute("INSERT INTO vec_facts (fact_id, embedding) VALUES (2, ?)", (vector(0.0, 1.0),))
    rows = seed_000_rows(conn)
    old_schema = [s for s in schema_sql(conn) if s[0] in {"users", "facts", "vec_facts"}]
    conn.close()

    db = Database.open(path)
    try:
        assert db.read_sync(seed_000_rows) == rows
        new_schema = [
            s for s in db.read_sync(schema_sql) if s[0] in {"users", "facts", "vec_facts"}
        ]
        assert new_schema == old_schema
        nearest = db.read_sync(
            lambda c: c.execute(
                "SELECT fact_id FROM vec_facts WHERE embedding MATCH ? AND k = 1",
                (vector(0.1, 0.9),),
            ).fetchall()
        )
        assert [r[0] for r in nearest] == [2]
        assert db.read_sync(table_names) >= VIVY_TABLES
    finally:
        db.close()


# Connection settings and extensions -----------------------------------------------------


def test_wal_foreign_keys_and_busy_timeout_are_set(db: Database) -> None:
    """The connection runs in WAL mode with foreign keys, a busy timeout and synchronous=NORMAL."""

    def pragmas(conn: Connection) -> tuple[Any, ...]:
        return tuple(
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
        )

    assert db.read_sync(pragmas) == ("wal", 1, BUSY_TIMEOUT_MS, 1)


def autocheckpoint(conn: Connection) -> int:
    """SQLite's automatic checkpoint threshold of the connection, in pages (0: off)."""
    return int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])


def fill(conn: Connection, start: int, count: int) -> None:
    """Insert ``count`` rows with page-sized values into the write-test table."""
    conn.executemany(
        "INSERT INTO t (k, v) VALUES (?, ?)", [(k, "x" * 4000) for k in range(start, start + count)]
    )


def checkpoint_threads() -> int:
    """Checkpointer threads alive in this process."""
    return sum(t.name == "vivy-checkpoint" for t in threading.enumerate())


def test_thread_mode_checkpoints_on_its_own_thread_after_enough_rows(tmp_path: Path) -> None:
    """Commits never checkpoint; the checkpointer copies the WAL back once enough rows changed."""
    path = tmp_path / "vivy.db"
    threads = checkpoint_threads()
    db = Database.open(path)
    try:
        assert checkpoint_threads() == threads + 1
        assert db.read_sync(autocheckpoint) == 0
        db.write_sync(make_table)
        size = path.stat().st_size
        db.write_sync(fill, 0, CHECKPOINT_ROWS - 1)
        assert db.checkpoint_idle(timeout=30)
        assert path.stat().st_size == size  # under the threshold: everything is in the WAL
        db.write_sync(fill, CHECKPOINT_ROWS, 1)
        assert db.checkpoint_idle(timeout=30)
        assert path.stat().st_size >= size + CHECKPOINT_ROWS * 4000
    finally:
        db.close()
    assert checkpoint_threads() == threads
    reopened = connect(path)
    try:
        assert len(keys(reopened)) == CHECKPOINT_ROWS
    finally:
        reopened.close()


def test_inline_mode_keeps_sqlites_own_checkpoints(tmp_path: Path) -> None:
    """Inline mode starts no thread and leaves SQLite's automatic checkpoint on."""
    threads = checkpoint_threads()
    db = Database.open(tmp_path / "vivy.db", inline=True)
    try:
        assert checkpoint_threads() == threads
        assert db.read_sync(autocheckpoint) == 1000
        assert db.checkpoint_idle(timeout=0)
    finally:
        db.close()


def add_note(conn: Connection, note_id: int, guild_id: int, title: str, summary: str) -> None:
    """Insert a minimal conversation note."""
    conn.execute(
        "INSERT INTO interaction_notes (id, guild_id, channel_id, note_type, title, summary,"
        " note_date, quality, created_at) VALUES (?, ?, 1, 'conversation', ?, ?,"
        " '2026-03-02', 'full', 0)",
        (note_id, guild_id, title, summary),
    )


def test_fts5_indexes_notes_through_triggers(db: Database) -> None:
    """notes_fts finds notes by words of their title and summary, and follows updates."""
    db.write_sync(add_note, 1, 10, "Raid night", "We planned the Friday raid on the boss")
    db.write_sync(add_note, 2, 10, "Cooking", "Ada shared a ramen recipe")

    def search(conn: Connection, query: str) -> list[int]:
        rows = conn.execute("SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?", (query,))
        return [r[0] for r in rows]

    assert db.read_sync(search, "ramen") == [2]
    assert db.read_sync(search, "raid") == [1]
    db.write_sync(
        lambda c: c.execute("UPDATE interaction_notes SET summary = 'sushi night' WHERE id = 2")
    )
    assert db.read_sync(search, "ramen") == []
    assert db.read_sync(search, "sushi") == [2]


def test_vec_notes_knn_is_partitioned_by_guild(db: Database) -> None:
    """A KNN query filtered by ``guild_id`` returns that guild's notes only, nearer ones aside."""
    entries = [
        (1, 10, vector(1.0, 0.0)),
        (2, 10, vector(0.0, 1.0)),
        (3, 20, vector(1.0, 0.01)),
        (4, 20, vector(0.9, 0.1)),
    ]

    def insert(conn: Connection) -> None:
        sql = (
            "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
            " VALUES (?, ?, 'conv', ?, vec_quantize_binary(vec_slice(?, 0, 384)))"
        )
        for note_id, guild_id, embedding in entries:
            conn.execute(sql, (note_id, guild_id, embedding, embedding))

    def knn(conn: Connection, guild_id: int) -> list[int]:
        rows = conn.execute(
            "SELECT note_id FROM vec_notes WHERE guild_id = ?"
            " ORDER BY vec_distance_cosine(embedding, ?) LIMIT 3",
            (guild_id, vector(1.0, 0.0)),
        )
        return [r[0] for r in rows]

    db.write_sync(insert)
    assert db.read_sync(knn, 10) == [1, 2]
    assert db.read_sync(knn, 20) == [3, 4]
    assert db.read_sync(knn, 30) == []


# Group commit on a real worker thread ---------------------------------------------------


def insert_key(conn: Connection, k: int) -> int:
    """Insert one key and return it."""
    conn.execute("INSERT INTO t (k, v) VALUES (?, 'x')", (k,))
    return k


def insert_then_raise(conn: Connection, k: int) -> None:
    """Insert one key, then fail."""
    conn.execute("INSERT INTO t (k, v) VALUES (?, 'x')", (k,))
    raise ValueError(f"write {k} failed")


def spy_batches(db: Database, monkeypatch: pytest.MonkeyPatch, kind: str = "_writes") -> list[int]:
    """Record the size of every batch the database commits (or, with ``_reads``, reads)."""
    sizes: list[int] = []
    batches = getattr(db, kind)
    run_batch: Callable[[list[Any]], None] = batches._run

    def spy(batch: list[Any]) -> None:
        sizes.append(len(batch))
        run_batch(batch)

    monkeypatch.setattr(batches, "_run", spy)
    return sizes


async def queued_behind_a_blocker(
    call: Callable[[Callable[[Connection], object]], Awaitable[object]],
    blocker: Callable[[Connection], object],
    queued: dict[str, Callable[[Connection], object]],
    expected: type[Exception],
) -> dict[str, object]:
    """Submit ``blocker`` through ``call``, queue the others while it is on the thread, then
    let it finish; each name ("blocker" for the first) maps to its result or to the
    ``expected`` exception it raised (any other exception fails the test)."""
    gate = threading.Event()
    outcomes: dict[str, object] = {}

    def blocked(conn: Connection) -> object:
        assert gate.wait(5)
        return blocker(conn)

    async def submit(name: str, fn: Callable[[Connection], object]) -> None:
        try:
            outcomes[name] = await call(fn)
        except expected as exc:
            outcomes[name] = exc

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(submit, "blocker", blocked)
            await anyio.wait_all_tasks_blocked()  # the blocker's batch is on the thread
            for name, fn in queued.items():
                tg.start_soon(submit, name, fn)
            await anyio.wait_all_tasks_blocked()  # all of them queued behind it
            gate.set()
    return outcomes


@pytest.mark.anyio
async def test_failing_write_is_rolled_back_alone(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write raising in a group-committed batch undoes its own change and no other's."""
    db.write_sync(make_table)
    sizes = spy_batches(db, monkeypatch)
    outcomes = await queued_behind_a_blocker(
        db.write,
        partial(insert_key, k=1),
        {
            "2": partial(insert_key, k=2),
            "3": partial(insert_then_raise, k=3),
            "4": partial(insert_key, k=4),
        },
        ValueError,
    )

    assert sizes == [1, 3]
    assert outcomes["blocker"] == 1 and outcomes["2"] == 2 and outcomes["4"] == 4
    assert isinstance(outcomes["3"], ValueError) and str(outcomes["3"]) == "write 3 failed"
    assert await db.read(keys) == [1, 2, 4]


@pytest.mark.anyio
async def test_sqlite_error_in_write_becomes_storage_error(db: Database) -> None:
    """A SQLite error inside a write reaches the caller as StorageError; later writes work."""
    db.write_sync(make_table)
    await db.write(insert_key, 1)
    with pytest.raises(StorageError, match="UNIQUE"):
        await db.write(insert_key, 1)
    await db.write(insert_key, 2)
    assert await db.read(keys) == [1, 2]


@pytest.mark.anyio
async def test_concurrent_writes_are_all_durable(tmp_path: Path) -> None:
    """Hundreds of concurrent writes return only once committed: a fresh connection sees all."""
    path = tmp_path / "vivy.db"
    db = Database.open(path)
    try:
        db.write_sync(make_table)
        async with anyio.create_task_group() as tg:
            for k in range(1, 301):
                tg.start_soon(db.write, insert_key, k)
    finally:
        db.close()
    reopened = Database.open(path)
    try:
        assert reopened.read_sync(keys) == list(range(1, 301))
    finally:
        reopened.close()


@pytest.mark.anyio
async def test_write_aborting_the_transaction_fails_its_batch_cleanly(
    db: Database,
) -> None:
    """A write whose error rolls back the whole transaction fails its batch with StorageError."""
    db.write_sync(make_table)
    db.write_sync(insert_key, 1)

    def conflict(conn: Connection) -> None:
        conn.execute("INSERT OR ROLLBACK INTO t (k, v) VALUES (1, 'again')")

    outcomes = await queued_behind_a_blocker(
        db.write,
        partial(insert_key, k=2),
        {
            "before": partial(insert_key, k=10),
            "conflict": conflict,
            "after": partial(insert_key, k=11),
        },
        StorageError,
    )

    assert outcomes["blocker"] == 2
    assert isinstance(outcomes["conflict"], StorageError)
    assert set(outcomes) == {"blocker", "before", "conflict", "after"}


# Closing --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_closed_database_refuses_reads_and_writes(db: Database) -> None:
    """Every read or write on a closed database raises StorageError; closing twice is harmless."""
    db.close()
    db.close()
    with pytest.raises(StorageError, match="closed"):
        await db.read(table_names)
    with pytest.raises(StorageError, match="closed"):
        await db.write(make_table)
    with pytest.raises(StorageError, match="closed"):
        db.read_sync(table_names)
    with pytest.raises(StorageError, match="closed"):
        db.write_sync(make_table)


@pytest.mark.anyio
async def test_reads_submitted_together_share_one_hop_and_keep_their_own_errors(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads queued behind a running one run in one batch; a failing read fails alone."""
    db.write_sync(make_table)
    db.write_sync(insert_key, 7)
    sizes = spy_batches(db, monkeypatch, "_reads")

    def broken(conn: Connection) -> None:
        conn.execute("SELECT no_such_column FROM t")

    outcomes = await queued_behind_a_blocker(
        db.read, keys, {"2": keys, "3": broken, "4": keys}, StorageError
    )

    assert sizes == [1, 3]
    assert outcomes["blocker"] == outcomes["2"] == outcomes["4"] == [7]
    assert isinstance(outcomes["3"], StorageError) and "no_such_column" in str(outcomes["3"])
