"""The SQLite engine behind the storage port.

Every area runs its storage module's functions (:mod:`vivy.storage.areas`) through the one
:class:`~vivy.storage.sqlite.db.Database` owner; the note search keeps each guild's binary
vectors in memory (:class:`~vivy.storage.vector_index.BinaryIndex`) and runs its keyword
searches on the owner's side connections, beside the vector search.
"""

from __future__ import annotations

from pathlib import Path

from vivy.storage.dialect import Tx
from vivy.storage.port import Store, store_of
from vivy.storage.search_types import NoteSearch, NoteSearchResult
from vivy.storage.sqlite import checks, fts, search
from vivy.storage.sqlite.db import SIDE_CONNECTIONS, Connection, Database
from vivy.storage.vector_index import BinaryIndex

__all__ = ["open_sqlite_database", "open_sqlite_store", "sqlite_store"]


def sqlite_store(db: Database) -> Store:
    """Every storage area over the SQLite owner ``db``; closing the store closes ``db``."""
    vectors = BinaryIndex(search.SQLITE_VECTORS)
    # The sides only read, so each keeps the term counts it read (search.TermCounts).
    counted: dict[Connection, search.TermCounts] = {}

    def search_one(
        tx: Tx, sides: tuple[Connection, ...], note_search: NoteSearch
    ) -> NoteSearchResult:
        counts = {side: counted.setdefault(side, search.TermCounts()) for side in sides}
        return search.search_notes_sync(tx.conn, vectors, note_search, sides, counts)

    return store_of(
        db,
        tidy=lambda tx: fts.merge_step(tx.conn),
        search_one=search_one,
        closer=db.close,
    )


def open_sqlite_store(path: str | Path, *, inline: bool = False, read_only: bool = False) -> Store:
    """Open (creating and migrating as needed) the SQLite database at ``path`` as a store;
    see :func:`open_sqlite_database`."""
    return sqlite_store(open_sqlite_database(path, inline=inline, read_only=read_only))


def open_sqlite_database(
    path: str | Path, *, inline: bool = False, read_only: bool = False
) -> Database:
    """The owner of the SQLite database at ``path``, created and migrated as needed.

    ``inline`` runs calls on the event loop's thread (tests under trio's MockClock). A
    ``read_only`` owner only reads an existing Vivy database of this version, never creating,
    migrating or writing it, on read-only media too
    (:func:`~vivy.storage.sqlite.checks.open_readonly`).
    """
    if not read_only:
        return Database.open(path, inline=inline)
    conns: list[Connection] = []
    try:
        for _ in range(1 + SIDE_CONNECTIONS):
            conns.append(checks.open_readonly(path, threads=True))
        checks.require_vivy_schema(conns[0], path)
    except BaseException:
        for conn in conns:
            conn.close()
        raise
    return Database(conns[0], inline=inline, sides=tuple(conns[1:]))
