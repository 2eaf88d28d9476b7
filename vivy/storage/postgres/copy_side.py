"""PostgreSQL's side of ``vivy db copy``: a database read in read-only transactions, or
written as a target, in the copy's neutral row form
(:class:`~vivy.storage.copy_plan.CopySide`)."""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import Format
from psycopg.types import TypeInfo

from vivy.errors import StorageError
from vivy.storage.copy_plan import PROGRESS_KEY, CopiedTable, keyset, quoted, update_by_key
from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.postgres.connect import with_timeouts
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.db import migrate as pg_migrate
from vivy.storage.postgres.db import schema_version as pg_schema_version
from vivy.storage.postgres.readonly import connection_error, shown_url
from vivy.storage.postgres.schema import POSTINGS_TABLES, note_vector_dimension
from vivy.storage.postgres.schema import vec_notes_ddl as pg_vec_notes_ddl

__all__ = ["PgCopySide", "identity"]


def identity(uri: str) -> str:
    """What names a PostgreSQL database across copies: its connection string without its
    password."""
    try:
        info = conninfo_to_dict(uri)
    except psycopg.Error:  # never connected to, so never recorded
        return f"postgresql:{uri}"
    info.pop("password", None)
    return "postgresql:" + make_conninfo(**{key: str(value) for key, value in info.items()})


class PgCopySide:
    """A PostgreSQL database: read in read-only transactions, or written as a target."""

    def __init__(self, uri: str, conn: PgConnection) -> None:
        self.shown = shown_url(uri)
        self._conn = conn
        self._vectors_sent = False

    @classmethod
    def open(cls, uri: str, *, read_only: bool) -> PgCopySide:
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
            f"{quoted(c)}::real[]" if c in table.vectors else quoted(c) for c in columns
        ]
        keys = [quoted(key) for key in table.key]
        query = (
            f"SELECT {', '.join(shown_columns)} FROM {quoted(table.name)}"
            + keyset(keys, ["%s"] * len(keys), after)
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
        names = ", ".join(quoted(c) for c in columns)
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
            f"INSERT INTO {quoted(table.name)} ({names}) OVERRIDING SYSTEM VALUE VALUES ({marks})"
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
        update, values = update_by_key(table, rows, quoted, mark="%s")

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
