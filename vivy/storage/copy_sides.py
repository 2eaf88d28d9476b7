"""The two engines of ``vivy db copy``: a SQLite file and a PostgreSQL database, each read or
written in the copy's neutral row form (see :mod:`vivy.storage.copy`)."""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, Protocol

import psycopg
import sqlean
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from vivy.errors import StorageError
from vivy.storage.copy_plan import (
    PROGRESS_KEY,
    ROWID_COLUMNS,
    SQLITE_DERIVED,
    CopiedTable,
    Database,
)
from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.postgres.connect import with_timeouts
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.db import migrate as pg_migrate
from vivy.storage.postgres.db import schema_version as pg_schema_version
from vivy.storage.postgres.readonly import connection_error, shown_url
from vivy.storage.postgres.schema import POSTINGS_TABLES, note_vector_dimension
from vivy.storage.postgres.schema import vec_notes_ddl as pg_vec_notes_ddl
from vivy.storage.sqlite import checks
from vivy.storage.sqlite.db import Connection
from vivy.storage.sqlite.db import connect as sqlite_connect
from vivy.storage.sqlite.db import migrate as sqlite_migrate
from vivy.storage.sqlite.writer_lock import hold_writer_lock
from vivy.storage.vectors import binary_dimensions

__all__ = ["PgSide", "Side", "SqliteSide", "open_side"]


class Side(Protocol):
    """One database of a copy, read or written in the copy's neutral row form: Python values
    of the logical columns, vectors as float32 blobs (or None)."""

    shown: str

    def close(self) -> None: ...
    def schema_version(self) -> int: ...
    def has_table(self, name: str) -> bool: ...
    def columns(self, name: str) -> list[str] | None: ...
    def count(self, name: str) -> int: ...
    def meta(self, key: str) -> str | None: ...
    def vector_dimension(self) -> int | None: ...
    def high_water(self, name: str) -> int | None: ...
    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]: ...
    def migrate(self) -> None: ...
    def clear(self, names: Sequence[str]) -> None: ...
    def fit_vectors(self, dimension: int) -> None: ...
    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None: ...
    def update(
        self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None: ...
    def finish(self, high_waters: dict[str, int | None], progress: str) -> None: ...
    def forget_progress(self) -> None: ...


def open_side(database: Database, *, read_only: bool) -> closing[Side]:
    """Open ``database`` as a source (``read_only``) or as a target, closed with the block."""
    if isinstance(database, Path):
        return closing(SqliteSide.open(database, read_only=read_only))
    return closing(PgSide.open(database, read_only=read_only))


def _keyset(keys: Sequence[str], marks: Sequence[str], after: Sequence[Any] | None) -> str:
    """``WHERE (keys) > (after)`` when resuming after a key, else nothing."""
    if after is None:
        return ""
    return f" WHERE ({', '.join(keys)}) > ({', '.join(marks)})"


def _update_by_key(
    table: CopiedTable,
    rows: Sequence[tuple[Any, ...]],
    key_column: Callable[[str], str],
    *,
    mark: str,
) -> tuple[str, list[tuple[Any, ...]]]:
    """The UPDATE that sets ``table``'s deferred columns by its key (each key named by
    ``key_column``, parameters written ``mark``), and its parameters from ``rows`` (each the
    key's values, then the deferred columns')."""
    keys = " AND ".join(f"{key_column(k)} = {mark}" for k in table.key)
    sets = ", ".join(f"{_quoted(c)} = {mark}" for c in table.deferred)
    width = len(table.key)
    values = [(*row[width:], *row[:width]) for row in rows]
    return f"UPDATE {_quoted(table.name)} SET {sets} WHERE {keys}", values


def _quoted(name: str) -> str:
    """An identifier quoted for SQL (both engines quote with double quotes)."""
    return '"' + name.replace('"', '""') + '"'


class SqliteSide:
    """A SQLite file: read through a read-only connection, or written as a target."""

    def __init__(self, path: Path, conn: Connection | None) -> None:
        self.shown = str(path)
        self._path = path
        self._conn = conn
        self._writable = False
        self._release: Callable[[], None] | None = None

    @classmethod
    def open(cls, path: Path, *, read_only: bool) -> SqliteSide:
        """A source must exist; a target is looked at read-only (if it exists) until the
        first write, which creates it if needed."""
        if read_only or path.exists():
            return cls(path, checks.open_readonly(path))
        if not path.parent.is_dir():
            raise StorageError(f"no such directory: {path.parent}")
        return cls(path, None)

    @property
    def _db(self) -> Connection:
        """The connection to read with."""
        if self._conn is None:
            return self._writer()
        return self._conn

    def _writer(self) -> Connection:
        """The connection to write with, opened (and the file created) on first use."""
        if not self._writable:
            self._release = hold_writer_lock(self._path)
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            self._conn = sqlite_connect(self._path)
            self._writable = True
        assert self._conn is not None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._release is not None:
            self._release()
            self._release = None

    def schema_version(self) -> int:
        return 0 if self._conn is None else checks.schema_version(self._conn)

    def has_table(self, name: str) -> bool:
        return self.columns(name) is not None

    def columns(self, name: str) -> list[str] | None:
        if self._conn is None:
            return None
        found = [str(r[1]) for r in self._conn.execute(f"PRAGMA table_info({_quoted(name)})")]
        if not found:
            return None
        derived = SQLITE_DERIVED.get(name, frozenset())
        rowid = [ROWID_COLUMNS[name]] if name in ROWID_COLUMNS else []
        return rowid + [column for column in found if column not in derived]

    def count(self, name: str) -> int:
        if self._conn is None:
            return 0
        return int(self._conn.execute(f"SELECT COUNT(*) FROM {_quoted(name)}").fetchone()[0])

    def meta(self, key: str) -> str | None:
        if self._conn is None:
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def vector_dimension(self) -> int | None:
        return None if self._conn is None else checks.vec_notes_dimension(self._conn)

    def high_water(self, name: str) -> int | None:
        if self._conn is None:
            return None
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (name,))
        found = row.fetchone()
        return None if found is None else int(found[0])

    def _column(self, table: str, column: str) -> str:
        """The SQL naming ``column``: SQLite's rowid where PostgreSQL has a column for it."""
        return "rowid" if ROWID_COLUMNS.get(table) == column else _quoted(column)

    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        keys = [self._column(table.name, key) for key in table.key]
        query = (
            f"SELECT {', '.join(self._column(table.name, c) for c in columns)}"
            f" FROM {_quoted(table.name)}"
            + _keyset(keys, ["?"] * len(keys), after)
            + f" ORDER BY {', '.join(keys)} LIMIT ?"
        )
        try:
            rows = self._db.execute(query, [*(after or ()), limit]).fetchall()
        except sqlean.Error as exc:
            raise StorageError(f"reading {table.name} from {self.shown}: {exc}") from exc
        return [tuple(row) for row in rows]

    def migrate(self) -> None:
        sqlite_migrate(self._writer())

    def _transaction(self, work: Callable[[Connection], None]) -> None:
        conn = self._writer()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                work(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlean.Error as exc:
            raise StorageError(f"writing {self.shown}: {exc}") from exc

    def clear(self, names: Sequence[str]) -> None:
        def work(conn: Connection) -> None:
            for name in names:
                conn.execute(f"DELETE FROM {_quoted(name)}")
            conn.execute("DELETE FROM sqlite_sequence")
            conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")

        self._transaction(work)

    def fit_vectors(self, dimension: int) -> None:
        """Nothing to do: SQLite's vectors are blobs of any length."""

    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None:
        names = [self._column(table.name, c) for c in columns]
        marks = ["?"] * len(columns)
        deferred = {columns.index(c) for c in table.deferred}
        bits = table.name in SQLITE_DERIVED
        if bits:
            names.append("embedding_bits")
            marks.append("vec_quantize_binary(vec_slice(?, 0, ?))")
            vector = columns.index("embedding")
        values = []
        for row in rows:
            value = [None if i in deferred else v for i, v in enumerate(row)]
            if bits:
                blob = row[vector]
                value += [blob, binary_dimensions(len(blob) // 4)]
            values.append(value)
        insert = (
            f"INSERT INTO {_quoted(table.name)} ({', '.join(names)}) VALUES ({', '.join(marks)})"
        )

        def work(conn: Connection) -> None:
            conn.executemany(insert, values)
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def update(self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str) -> None:
        update, values = _update_by_key(
            table, rows, lambda key: self._column(table.name, key), mark="?"
        )

        def work(conn: Connection) -> None:
            conn.executemany(update, values)
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def finish(self, high_waters: dict[str, int | None], progress: str) -> None:
        def work(conn: Connection) -> None:
            for name, seq in high_waters.items():
                if seq is None:
                    continue
                conn.execute(
                    "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (seq, name)
                )
                conn.execute(
                    "INSERT INTO sqlite_sequence (name, seq) SELECT ?, ?"
                    " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)"
                    " AND EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?"
                    " AND sql LIKE '%AUTOINCREMENT%')",
                    (name, seq, name, name),
                )
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def forget_progress(self) -> None:
        def work(conn: Connection) -> None:
            conn.execute("DELETE FROM meta WHERE key = ?", (PROGRESS_KEY,))

        self._transaction(work)


def _set_sqlite_progress(conn: Connection, progress: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (PROGRESS_KEY, progress),
    )


class PgSide:
    """A PostgreSQL database: read in read-only transactions, or written as a target."""

    def __init__(self, uri: str, conn: PgConnection) -> None:
        self.shown = shown_url(uri)
        self._conn = conn
        self._vectors_sent = False

    @classmethod
    def open(cls, uri: str, *, read_only: bool) -> PgSide:
        try:
            # A copy's batches and index builds are bulk work: no limit on a statement.
            conninfo = with_timeouts(uri, read_only=read_only, bounded=False)
            conn = psycopg.connect(conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise connection_error(uri, exc) from exc
        return cls(uri, conn)

    def close(self) -> None:
        self._conn.close()

    def _fail(self, doing: str, exc: psycopg.Error) -> StorageError:
        first = next((line for line in str(exc).splitlines() if line.strip()), "failed")
        return StorageError(f"{doing} {self.shown}: {first}")

    def _fetch(self, query: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(query, params).fetchall()
        except psycopg.Error as exc:
            raise self._fail("reading", exc) from exc

    def schema_version(self) -> int:
        return pg_schema_version(self._conn)

    def has_table(self, name: str) -> bool:
        return bool(self._fetch("SELECT to_regclass(%s) IS NOT NULL", (name,))[0][0])

    def columns(self, name: str) -> list[str] | None:
        if not self.has_table(name):
            return None
        rows = self._fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0"
            " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            (name,),
        )
        return [str(r[0]) for r in rows]

    def count(self, name: str) -> int:
        query = sql.SQL("SELECT COUNT(*) FROM {}").format(sql.Identifier(name))
        return int(self._fetch(query)[0][0])

    def meta(self, key: str) -> str | None:
        rows = self._fetch("SELECT value FROM meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def vector_dimension(self) -> int | None:
        if not self._fetch("SELECT EXISTS (SELECT 1 FROM vec_notes)")[0][0]:
            return None
        return note_vector_dimension(self._conn)

    def _sequence(self, name: str) -> tuple[str, str] | None:
        """The table's identity column and its sequence, if it has one."""
        rows = self._fetch(
            "SELECT attname, pg_get_serial_sequence(%s, attname) FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attidentity <> ''",
            (name, name),
        )
        return None if not rows else (str(rows[0][0]), str(rows[0][1]))

    def high_water(self, name: str) -> int | None:
        found = self._sequence(name)
        if found is None:
            return None
        row = self._fetch(
            sql.SQL("SELECT last_value, is_called FROM {}").format(sql.SQL(found[1]))
        )[0]
        return int(row[0]) if row[1] else None

    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        shown_columns = [
            f"{_quoted(c)}::real[]" if c in table.vectors else _quoted(c) for c in columns
        ]
        keys = [_quoted(key) for key in table.key]
        query = (
            f"SELECT {', '.join(shown_columns)} FROM {_quoted(table.name)}"
            + _keyset(keys, ["%s"] * len(keys), after)
            + f" ORDER BY {', '.join(keys)} LIMIT %s"
        )
        vectors = [i for i, c in enumerate(columns) if c in table.vectors]
        try:
            with self._conn.cursor(binary=True) as cursor:
                rows = cursor.execute(query.encode(), [*(after or ()), limit]).fetchall()
        except psycopg.Error as exc:
            raise self._fail(f"reading {table.name} from", exc) from exc
        if not vectors:
            return rows
        return [_blobs(row, vectors) for row in rows]

    def _transaction(self, doing: str, work: Callable[[PgConnection], None]) -> None:
        try:
            with self._conn.transaction():
                work(self._conn)
        except psycopg.Error as exc:
            raise self._fail(doing, exc) from exc

    def migrate(self) -> None:
        pg_migrate(self._conn)

    def clear(self, names: Sequence[str]) -> None:
        # The keyword postings go with the rows they index: TRUNCATE fires no row trigger.
        emptied = [*names, *POSTINGS_TABLES]
        tables = sql.SQL(", ").join(sql.Identifier(name) for name in emptied)

        def work(conn: PgConnection) -> None:
            conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY").format(tables))
            conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")

        self._transaction("emptying", work)

    def fit_vectors(self, dimension: int) -> None:
        """Create ``vec_notes`` for ``dimension`` while it is empty and made for another."""
        if note_vector_dimension(self._conn) == dimension or self.count("vec_notes"):
            return

        def work(conn: PgConnection) -> None:
            conn.execute("DROP TABLE vec_notes")
            conn.execute(pg_vec_notes_ddl(dimension).encode())

        self._transaction("creating vec_notes in", work)

    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None:
        names = ", ".join(_quoted(c) for c in columns)
        marks = ", ".join("%b" if c in table.vectors else "%s" for c in columns)
        vectors = {i for i, c in enumerate(columns) if c in table.vectors}
        deferred = {columns.index(c) for c in table.deferred}
        if vectors:
            self._send_vectors()
        values = [
            [
                None if i in deferred or v is None else _Vector(v) if i in vectors else v
                for i, v in enumerate(row)
            ]
            for row in rows
        ]
        insert = (
            f"INSERT INTO {_quoted(table.name)} ({names}) OVERRIDING SYSTEM VALUE VALUES ({marks})"
        )

        def work(conn: PgConnection) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(insert.encode(), values)
            _set_pg_progress(conn, progress)

        self._transaction(f"writing {table.name} to", work)

    def _send_vectors(self) -> None:
        """Send :class:`_Vector` values in pgvector's binary form (once the extension is
        there): no text to format and parse, which makes loading many vectors several times
        faster than through ``::vector`` text."""
        if self._vectors_sent:
            return
        info = TypeInfo.fetch(self._conn, "vector")
        if info is None:
            raise StorageError(f"the target {self.shown} has no vector type")
        dumper = type("_VectorDumper", (_VectorBinaryDumper,), {"oid": info.oid})
        self._conn.adapters.register_dumper(_Vector, dumper)
        self._vectors_sent = True

    def update(self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str) -> None:
        update, values = _update_by_key(table, rows, _quoted, mark="%s")

        def work(conn: PgConnection) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(update.encode(), values)
            _set_pg_progress(conn, progress)

        self._transaction(f"writing {table.name} to", work)

    def finish(self, high_waters: dict[str, int | None], progress: str) -> None:
        def work(conn: PgConnection) -> None:
            for name, seq in high_waters.items():
                found = self._sequence(name)
                if found is None:
                    continue
                column, sequence = found
                conn.execute(
                    sql.SQL(
                        "SELECT setval({seq}, m) FROM (SELECT GREATEST(MAX({col}), %s) AS m"
                        " FROM {table}) s WHERE m IS NOT NULL"
                    ).format(
                        seq=sql.Literal(sequence),
                        col=sql.Identifier(column),
                        table=sql.Identifier(name),
                    ),
                    (seq,),
                )
            _set_pg_progress(conn, progress)

        self._transaction("finishing the copy in", work)

    def forget_progress(self) -> None:
        def work(conn: PgConnection) -> None:
            conn.execute("DELETE FROM meta WHERE key = %s", (PROGRESS_KEY,))

        self._transaction("concluding the copy in", work)


class _Vector(bytes):
    """A float32 blob bound as a pgvector ``vector``."""


class _VectorBinaryDumper(Dumper):
    """pgvector's binary form of a float32 blob: the dimension and a reserved word (two
    unsigned 16-bit integers), then the floats, all big-endian (``vector_recv``)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        """``obj`` (a :class:`_Vector`) as pgvector reads it."""
        floats = array("f", bytes(obj))
        if sys.byteorder == "little":
            floats.byteswap()
        return struct.pack(">HH", len(floats), 0) + floats.tobytes()


def _set_pg_progress(conn: PgConnection, progress: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (PROGRESS_KEY, progress),
    )


def _blobs(row: tuple[Any, ...], vectors: Sequence[int]) -> tuple[Any, ...]:
    """``row`` with its ``real[]`` vectors as float32 blobs."""
    values = list(row)
    for i in vectors:
        if values[i] is not None:
            values[i] = array("f", values[i]).tobytes()
    return tuple(values)
