"""Opening a database read-only for the operator commands, and the checks of ``vivy db check``.

:func:`open_readonly` refuses a missing file instead of creating an empty database, and never
migrates or switches the journal mode.
"""

from __future__ import annotations

from pathlib import Path

import sqlean
import sqlite_vec

from vivy.errors import SchemaTooNew, StorageError
from vivy.storage.sqlite.db import BUSY_TIMEOUT_MS, Connection
from vivy.storage.sqlite.schema import SCHEMA_VERSION

__all__ = [
    "check_foreign_keys",
    "check_integrity",
    "open_readonly",
    "require_vivy_schema",
    "schema_version",
    "vec_notes_dimension",
]


def open_readonly(path: str | Path, *, threads: bool = False) -> Connection:
    """Open an existing database for reading only, with sqlite-vec loaded.

    Raises :class:`StorageError` when the file does not exist or is not a SQLite database; a
    missing file is never created. The connection is opened ``mode=rw`` with ``query_only``
    (so closing it checkpoints and removes the WAL files as usual); ``mode=ro`` when the file
    cannot be written; and ``immutable`` when not even the WAL's shared-memory file can be
    made beside it (read-only media, where nothing can change the file meanwhile). With
    ``threads`` the connection may be used by other threads than this one (one at a time).
    """
    file = Path(path)
    if not file.exists():
        raise StorageError(f"no such database file: {file}")
    if not file.is_file():
        raise StorageError(f"not a database file: {file}")
    uri = file.resolve().as_uri()
    failure: sqlean.Error | None = None
    for mode in READ_ONLY_MODES:
        try:
            conn = _connect_uri(f"{uri}?{mode}", threads=threads)
        except sqlean.OperationalError as exc:  # not allowed in this mode: try the next
            failure = exc
            continue
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlean.OperationalError as exc:  # opened, but the WAL index cannot be made
            conn.close()
            failure = exc
            continue
        except sqlean.Error as exc:  # not a database
            conn.close()
            raise StorageError(f"cannot open database {file}: {exc}") from exc
        return conn
    raise StorageError(f"cannot open database {file}: {failure}") from failure


#: How :func:`open_readonly` opens a file, most capable first.
READ_ONLY_MODES = ("mode=rw", "mode=ro", "mode=ro&immutable=1")


def _connect_uri(uri: str, *, threads: bool = False) -> Connection:
    conn: Connection = sqlean.connect(
        uri, uri=True, isolation_level=None, check_same_thread=not threads
    )
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.row_factory = sqlean.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def schema_version(conn: Connection) -> int:
    """The schema version (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def require_vivy_schema(conn: Connection, path: str | Path) -> None:
    """Refuse a file that is not a Vivy database of the version this Vivy reads."""
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version, SCHEMA_VERSION)
    if version == 0:
        raise StorageError(f"{path} is not a Vivy database (schema version 0)")
    if version < SCHEMA_VERSION:
        raise StorageError(
            f"{path} has schema version {version}, older than this Vivy's {SCHEMA_VERSION};"
            " start Vivy once (or run `vivy import`) to migrate it"
        )


def check_integrity(conn: Connection) -> list[str]:
    """Problems reported by ``PRAGMA integrity_check`` (empty when it says ``ok``)."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    return [] if rows == ["ok"] else rows


def check_foreign_keys(conn: Connection) -> list[str]:
    """Rows violating a foreign key, as ``table rowid -> parent``."""
    return [
        f"{r[0]} row {r[1]} references a missing {r[2]} row"
        for r in conn.execute("PRAGMA foreign_key_check").fetchall()
    ]


def vec_notes_dimension(conn: Connection) -> int | None:
    """The length of the stored note vectors (float32: four bytes a dimension), or None when
    none is stored; vectors of different lengths give the largest (``db check`` then reports
    them against the recorded model)."""
    row = conn.execute("SELECT MAX(length(embedding)) / 4 FROM vec_notes").fetchone()
    return None if row is None or row[0] is None else int(row[0])
