"""The storage engine a configuration names, opened behind the port: the one way to open one.

``VIVY_DB`` (and every command's ``--db``) is a SQLite file (the embedded default) or a
``postgresql://`` URL: a :data:`Target`. :func:`open_store` opens either engine behind
:class:`~vivy.storage.port.Store`, created and migrated as needed, or, ``read_only``, an
existing Vivy database of this version without ever changing it (SQLite's read-only
connections, on read-only media too; a PostgreSQL session whose transactions are
read-only). :func:`open_view` opens the operator commands' synchronous read-only view of
either engine. The rest of Vivy never asks which engine it has.
"""

from __future__ import annotations

from pathlib import Path

from vivy.config import is_postgres_url
from vivy.shards import Fence
from vivy.storage.port import Store
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.readonly import open_postgres_readonly
from vivy.storage.postgres.stores import postgres_store
from vivy.storage.readonly import ReadOnlyDatabase
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.readonly import open_sqlite_readonly
from vivy.storage.sqlite.stores import open_sqlite_database, sqlite_store

__all__ = ["Target", "open_engine", "open_store", "open_view", "target_of"]

#: A database as ``VIVY_DB`` and ``--db`` name it: a SQLite file, or a PostgreSQL URL.
Target = Path | str


def target_of(text: str) -> Target:
    """The database ``text`` names: a ``postgresql://`` URL as it is, else a file's path."""
    return text if is_postgres_url(text) else Path(text)


def open_store(
    database: Target,
    *,
    read_only: bool = False,
    inline: bool = False,
    fence: Fence | None = None,
) -> Store:
    """The store of ``database`` (see the module docstring). ``inline`` runs calls on the
    event loop's thread (tests under trio's MockClock); ``fence`` (PostgreSQL only) scopes
    the store to a fleet process's leased shards."""
    store, _ = open_engine(database, read_only=read_only, inline=inline, fence=fence)
    return store


def open_engine(
    database: Target,
    *,
    read_only: bool = False,
    inline: bool = False,
    fence: Fence | None = None,
) -> tuple[Store, Database | None]:
    """:func:`open_store`, with the SQLite owner itself (None on PostgreSQL), which the app
    keeps for its database-size gauge."""
    if isinstance(database, str):
        owner = PgDatabase.open(database, inline=inline, fence=fence, read_only=read_only)
        return postgres_store(owner), None
    assert fence is None, "a SQLite database has one process: it needs no fence"
    db = open_sqlite_database(database, inline=inline, read_only=read_only)
    return sqlite_store(db), db


def open_view(database: Target, *, require_schema: bool = True) -> ReadOnlyDatabase:
    """The operator commands' read-only view of ``database``; never creates or migrates it.
    With ``require_schema`` a database that is not Vivy's of this version is refused."""
    if isinstance(database, str):
        return open_postgres_readonly(database, require_schema=require_schema)
    return open_sqlite_readonly(database, require_schema=require_schema)
