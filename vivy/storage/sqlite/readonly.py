"""SQLite's read-only view of an existing database file, and its online backup."""

from __future__ import annotations

import os
from pathlib import Path

import sqlean

from vivy.errors import StorageError
from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.readonly import ReadOnlyDatabase
from vivy.storage.sqlite import checks
from vivy.storage.sqlite.db import Connection
from vivy.storage.sqlite.dialect import sqlite_tx

__all__ = ["backup_database", "open_sqlite_readonly"]


class _SqliteInspector:
    """SQLite's own checks of a database file."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def schema_version(self) -> int:
        """``PRAGMA user_version``."""
        return checks.schema_version(self._conn)

    def integrity_problems(self) -> list[str]:
        """What ``PRAGMA integrity_check`` reports."""
        return checks.check_integrity(self._conn)

    def foreign_key_problems(self) -> list[str]:
        """What ``PRAGMA foreign_key_check`` reports."""
        return checks.check_foreign_keys(self._conn)

    def index_problems(self) -> list[str]:
        """None: FTS5's triggers keep the keyword indexes in the rows' own transactions."""
        return []

    def reembed_staged(self) -> bool:
        """Whether the staging table exists."""
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (REEMBED_STAGING,)
        ).fetchone()
        return row is not None

    def vector_dimension(self) -> int | None:
        """The longest stored note vector's dimension."""
        return checks.vec_notes_dimension(self._conn)


def open_sqlite_readonly(path: str | Path, *, require_schema: bool = True) -> ReadOnlyDatabase:
    """Open the SQLite database at ``path`` for reading; never creates or migrates it.

    With ``require_schema``, a file that is not a Vivy database of this version is refused
    (:class:`~vivy.errors.StorageError` or :class:`~vivy.errors.SchemaTooNew`).
    """
    conn = checks.open_readonly(path)
    try:
        if require_schema:
            checks.require_vivy_schema(conn, path)
    except BaseException:
        conn.close()
        raise
    return ReadOnlyDatabase(sqlite_tx(conn), _SqliteInspector(conn), conn.close)


def backup_database(source: Path, target: Path) -> tuple[int, list[str]]:
    """Copy ``source`` to ``target`` with SQLite's online backup API (safe while Vivy runs).

    The copy is written beside ``target`` and moved into place only once SQLite's integrity
    check passes on it. Returns the copy's page count and the integrity problems (``target``
    is left untouched when there are any).
    """
    conn = checks.open_readonly(source)
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        copy: Connection = sqlean.connect(str(partial), isolation_level=None)
        try:
            conn.backup(copy)
            # A single self-contained file: no -wal beside it to forget when copying it off.
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
        check = checks.open_readonly(partial)
        try:
            problems = checks.check_integrity(check)
            pages = int(check.execute("PRAGMA page_count").fetchone()[0])
        finally:
            check.close()
        if not problems:
            os.replace(partial, target)
    except sqlean.Error as exc:
        raise StorageError(f"backup failed: {exc}") from exc
    finally:
        conn.close()
        partial.unlink(missing_ok=True)
    return pages, problems
