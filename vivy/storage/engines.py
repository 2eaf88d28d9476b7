"""The storage engine a configuration names, opened behind the port.

``VIVY_DB`` is a SQLite file (the embedded default) or a ``postgresql://`` URL. Both engines
implement every area of :class:`~vivy.storage.port.Store`; the rest of Vivy never asks which
one it has.
"""

from __future__ import annotations

from pathlib import Path

from vivy.shards import Fence
from vivy.storage.db import Database
from vivy.storage.port import Store
from vivy.storage.postgres.stores import open_postgres_store
from vivy.storage.sqlite import sqlite_store

__all__ = ["open_store"]


def open_store(
    path: Path, url: str | None, *, inline: bool = False, fence: Fence | None = None
) -> tuple[Store, Database | None]:
    """The store of the PostgreSQL database at ``url`` when given, else of the SQLite file at
    ``path``, with the SQLite owner itself (None for PostgreSQL), created and migrated as
    needed. ``inline`` runs calls on the event loop's thread (tests under trio's MockClock);
    ``fence`` (PostgreSQL only) scopes the store to a fleet process's leased shards."""
    if url is not None:
        return open_postgres_store(url, inline=inline, fence=fence), None
    assert fence is None, "a SQLite database has one process: it needs no fence"
    db = Database.open(path, inline=inline)
    return sqlite_store(db), db
