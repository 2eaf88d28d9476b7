"""Which storage errors are worth waiting for: the storage layer raises
:class:`~vivy.errors.DatabaseUnavailable` for a database that may answer later (SQLite locked
by another process, PostgreSQL shutting down or dropping the connection) and a plain
:class:`~vivy.errors.StorageError` for one no wait cures (read-only, disk full, a constraint
violation), so the actors wait out the first and end on the second."""

from __future__ import annotations

from pathlib import Path

import psycopg.errors
import pytest
import sqlean

from vivy.errors import DatabaseUnavailable, StorageError
from vivy.storage.dialect import Tx
from vivy.storage.postgres.db import _storage_error
from vivy.storage.sqlite import db as sqlite_db
from vivy.storage.sqlite.db import Database


def note_a_job(tx: Tx) -> None:
    """A small write: one row of a scratch table."""
    tx.execute("CREATE TABLE IF NOT EXISTS scratch (x INTEGER)")
    tx.execute("INSERT INTO scratch (x) VALUES (1)")


def test_a_sqlite_file_locked_by_another_process_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that finds another connection holding the write lock past the busy time-out
    is unavailable (waiting helps); once the lock is gone the same write succeeds."""
    monkeypatch.setattr(sqlite_db, "BUSY_TIMEOUT_MS", 0)
    path = tmp_path / "v.db"
    db = Database.open(path, inline=True)
    other = sqlean.connect(str(path), isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(DatabaseUnavailable, match="locked"):
            db.write_sync(note_a_job)
        other.execute("ROLLBACK")
        db.write_sync(note_a_job)
    finally:
        other.close()
        db.close()


def test_a_read_only_sqlite_database_is_a_permanent_error(tmp_path: Path) -> None:
    """A write refused because the database is read-only is a plain storage error with its
    one clear line, not an outage to wait out."""
    db = Database.open(tmp_path / "v.db", inline=True)
    try:
        db.write_sync(lambda tx: tx.execute("PRAGMA query_only = ON"))
        with pytest.raises(StorageError, match="cannot be written") as raised:
            db.write_sync(note_a_job)
        assert not isinstance(raised.value, DatabaseUnavailable)
    finally:
        db.close()


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        psycopg.errors.CannotConnectNow("the database system is shutting down"),
        psycopg.errors.CrashShutdown("terminating connection because of crash of another"),
        psycopg.errors.ConnectionFailure("connection failure"),
        psycopg.errors.TooManyConnections("sorry, too many clients already"),
        psycopg.errors.IdleInTransactionSessionTimeout("terminating connection due to idle"),
        psycopg.OperationalError("consuming input failed: server closed the connection"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_postgresql_going_away_is_unavailable(error: psycopg.Error) -> None:
    """A server shutting down, restarting, ending the session or dropping the connection (no
    SQLSTATE from libpq) is an outage."""
    translated = _storage_error(error, "postgresql://vivy@db.example/vivy")
    assert isinstance(translated, DatabaseUnavailable)
    assert "db.example" in str(translated)


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"),
        psycopg.errors.DiskFull("could not extend file: No space left on device"),
        psycopg.errors.DatabaseDropped("terminating connection because database was dropped"),
        psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"),
        psycopg.errors.UndefinedTable('relation "notes" does not exist'),
        psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_postgresql_refusing_for_good_is_a_permanent_error(error: psycopg.Error) -> None:
    """A read-only transaction, a full disk, a dropped database, a constraint violation, a
    schema mismatch or a statement over the server's time-out is not waited for."""
    translated = _storage_error(error)
    assert isinstance(translated, StorageError)
    assert not isinstance(translated, DatabaseUnavailable)
