"""Helpers shared by the tests that look into storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from psycopg import sql as pgsql

from vivy.storage import buffers as store
from vivy.storage import evidence
from vivy.storage.dialect import Tx
from vivy.storage.postgres.db import PgConnection, PgDatabase
from vivy.storage.postgres.evidence import postings_problems
from vivy.storage.sqlite.db import Connection, Database

__all__ = ["PgProbe", "Probe", "SqliteProbe", "count_buffers", "on_conn"]

P = ParamSpec("P")
T = TypeVar("T")


def count_buffers(tx: Tx) -> dict[str, int]:
    """Number of buffers by status (``open`` and ``closed``), through the storage queries."""
    return {
        "open": len(store.open_buffer_rows(tx)),
        "closed": len(store.closed_buffer_ids(tx)),
    }


def on_conn(fn: Callable[Concatenate[Any, P], T]) -> Callable[Concatenate[Tx, P], T]:
    """``fn``, a function of the engine's own connection (an engine-specific search), as
    the owner runs a storage function: on the call's transaction."""

    def call(tx: Tx, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return fn(tx.conn, *args, **kwargs)

    return call


class Probe(Protocol):
    """Plain SQL (``?`` placeholders) on the database behind a store, for what a test checks or
    arranges that the port does not show; each engine of the suite has one."""

    async def rows(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        """The rows ``sql`` selects, as tuples."""

    async def scalar(self, sql: str, *args: object) -> object:
        """The single value ``sql`` selects."""

    async def count(self, sql: str, *args: object) -> int:
        """The single number ``sql`` selects."""

    async def execute(self, sql: str, *args: object) -> None:
        """Run ``sql`` in a transaction of its own."""

    async def notes_matching(self, word: str) -> int:
        """How many notes the engine's keyword index finds for ``word``."""

    async def evidence_problems(self) -> list[str]:
        """What ``vivy db check`` reports of the evidence rows (the read-only view's check)."""

    async def every_value(self) -> list[tuple[str, str, object]]:
        """(table, column, value) for every value of every table of the database, so a test
        can look for what a deletion left behind anywhere."""


class SqliteProbe:
    """Plain SQL on the database behind a SQLite store: what a test checks or arranges that
    the port does not show (internal columns, indexes, rows the bot never writes)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def rows(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        """The rows ``sql`` selects, as tuples."""
        return await self._db.read(lambda c: [tuple(r) for r in c.execute(sql, args)])

    async def scalar(self, sql: str, *args: object) -> object:
        """The single value ``sql`` selects."""
        return await self._db.read(lambda c: c.execute(sql, args).fetchone()[0])

    async def count(self, sql: str, *args: object) -> int:
        """The single number ``sql`` selects."""
        return int(await self._db.read(lambda c: c.execute(sql, args).fetchone()[0]))

    async def execute(self, sql: str, *args: object) -> None:
        """Run ``sql`` in a transaction of its own."""
        await self._db.write(lambda c: c.execute(sql, args))

    async def notes_matching(self, word: str) -> int:
        """How many notes the FTS5 index ``notes_fts`` finds for ``word``."""
        return await self.count("SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH ?", word)

    async def evidence_problems(self) -> list[str]:
        """What ``vivy db check`` reports of the evidence rows."""
        return await self._db.read(evidence.evidence_problems)

    async def every_value(self) -> list[tuple[str, str, object]]:
        """(table, column, value) for every value of every table ``sqlite_master`` lists
        (virtual tables and their shadow tables included)."""
        return await self._db.read(lambda tx: _sqlite_values(tx.conn))

    async def read(
        self, fn: Callable[Concatenate[Tx, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a storage function the port does not offer yet (retrieval's reads)."""
        return await self._db.read(fn, *args, **kwargs)


class PgProbe:
    """Plain SQL on the database behind a PostgreSQL store, in SQLite's spelling (``?``
    placeholders), as the storage areas write it."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def rows(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        """The rows ``sql`` selects, as tuples."""
        return await self._db.read(lambda tx: [tuple(r) for r in tx.all(sql, args)])

    async def scalar(self, sql: str, *args: object) -> object:
        """The single value ``sql`` selects."""
        rows = await self.rows(sql, *args)
        return rows[0][0]

    async def count(self, sql: str, *args: object) -> int:
        """The single number ``sql`` selects."""
        return int(str(await self.scalar(sql, *args)))

    async def execute(self, sql: str, *args: object) -> None:
        """Run ``sql`` in a transaction of its own."""
        await self._db.write(lambda tx: tx.execute(sql, args))

    async def notes_matching(self, word: str) -> int:
        """How many notes the ``notes_fts`` column finds for ``word``."""
        return await self.count(
            "SELECT COUNT(*) FROM interaction_notes"
            " WHERE notes_fts @@ plainto_tsquery('simple', ?)",
            word,
        )

    async def evidence_problems(self) -> list[str]:
        """What ``vivy db check`` reports of the evidence rows."""
        return await self._db.read(
            lambda tx: evidence.evidence_problems(tx) + postings_problems(tx.conn)
        )

    async def every_value(self) -> list[tuple[str, str, object]]:
        """(table, column, value) for every value of every table of the store's schema."""
        return await self._db.read(lambda tx: _pg_values(tx.conn))


def _sqlite_values(conn: Connection) -> list[tuple[str, str, object]]:
    """Every value of every SQLite table, with its table and column."""
    found: list[tuple[str, str, object]] = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        cursor = conn.execute(f'SELECT * FROM "{table}"')
        columns = [d[0] for d in cursor.description]
        for row in cursor.fetchall():
            found.extend((table, column, value) for column, value in zip(columns, row, strict=True))
    return found


def _pg_values(conn: PgConnection) -> list[tuple[str, str, object]]:
    """Every value of every table of the connection's current schema, with its table and
    column."""
    found: list[tuple[str, str, object]] = []
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
    ]
    for table in tables:
        cursor = conn.execute(pgsql.SQL("SELECT * FROM {}").format(pgsql.Identifier(table)))
        columns = [d.name for d in cursor.description or ()]
        for row in cursor.fetchall():
            found.extend((table, column, value) for column, value in zip(columns, row, strict=True))
    return found
