"""Helpers shared by the tests that look into storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from vivy.storage import buffers as store
from vivy.storage import evidence
from vivy.storage.db import Connection, Database
from vivy.storage.postgres import evidence as pg_evidence
from vivy.storage.postgres.db import PgDatabase

__all__ = ["PgProbe", "Probe", "SqliteProbe", "count_buffers"]

P = ParamSpec("P")
T = TypeVar("T")


def count_buffers(conn: Connection) -> dict[str, int]:
    """Number of buffers by status (``open`` and ``closed``), through the storage queries."""
    return {
        "open": len(store.open_buffer_rows(conn)),
        "closed": len(store.closed_buffer_ids(conn)),
    }


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

    async def read(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a storage function the port does not offer yet (retrieval's reads)."""
        return await self._db.read(fn, *args, **kwargs)


class PgProbe:
    """Plain SQL on the database behind a PostgreSQL store; the ``?`` placeholders the tests
    write are bound as psycopg's ``%s`` (probe SQL holds no other ``?`` or ``%``)."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def rows(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        """The rows ``sql`` selects, as tuples."""
        query = _pg(sql)
        return await self._db.read(lambda c: list(c.execute(query, args).fetchall()))

    async def scalar(self, sql: str, *args: object) -> object:
        """The single value ``sql`` selects."""
        rows = await self.rows(sql, *args)
        return rows[0][0]

    async def count(self, sql: str, *args: object) -> int:
        """The single number ``sql`` selects."""
        return int(str(await self.scalar(sql, *args)))

    async def execute(self, sql: str, *args: object) -> None:
        """Run ``sql`` in a transaction of its own."""
        query = _pg(sql)
        await self._db.write(lambda c: c.execute(query, args))

    async def notes_matching(self, word: str) -> int:
        """How many notes the ``notes_fts`` column finds for ``word``."""
        return await self.count(
            "SELECT COUNT(*) FROM interaction_notes"
            " WHERE notes_fts @@ plainto_tsquery('simple', ?)",
            word,
        )

    async def evidence_problems(self) -> list[str]:
        """What ``vivy db check`` reports of the evidence rows."""
        return await self._db.read(pg_evidence.evidence_problems)


def _pg(sql: str) -> bytes:
    """``sql`` with psycopg's placeholders instead of SQLite's."""
    return sql.replace("?", "%s").encode()
