"""The PostgreSQL engine behind the storage port: :func:`open_postgres_store`.

Every area runs its storage module's functions (:mod:`vivy.storage.areas`) through the one
:class:`~vivy.storage.postgres.db.PgDatabase` owner, scoped to a process's shards and fenced
by its leases when it runs in a fleet; the note search runs its keyword searches on the
owner's side connections, and its vector search keeps each guild's vectors in memory as
SQLite's does (:class:`~vivy.storage.vector_index.BinaryIndex`). The shard leases run on a
connection of their own (:meth:`PgDatabase.beside`) with a short deadline, so a renewal never
waits behind a stuck statement of the actors.
"""

from __future__ import annotations

from vivy.shards import Fence
from vivy.storage.areas import Area, reads, writes
from vivy.storage.dialect import Tx
from vivy.storage.port import Store, store_of
from vivy.storage.postgres import leases, search
from vivy.storage.postgres.db import PgDatabase, PgSide
from vivy.storage.search_types import NoteSearch, NoteSearchResult
from vivy.storage.vector_index import BinaryIndex

__all__ = ["LEASE_CALL_DEADLINE_S", "LeaseArea", "open_postgres_store", "postgres_store"]

#: Seconds a lease call (take, renew, release) may take before its connection is cut.
LEASE_CALL_DEADLINE_S = 4.0


class LeaseArea(Area):
    """Shard leases of a fleet of processes sharing the database
    (:mod:`vivy.storage.postgres.leases`)."""

    acquire = writes(leases.acquire)
    renew = writes(leases.renew)
    release = writes(leases.release)
    holders = reads(leases.holders)
    other_fleet = reads(leases.other_fleet)
    live = reads(leases.live)


def _tidy(tx: Tx) -> bool:
    """Nothing to do: PostgreSQL's keyword postings are B-tree tables, which need no merging
    (SQLite's FTS5 segments do); autovacuum keeps their statistics and visibility maps."""
    return False


def postgres_store(db: PgDatabase) -> Store:
    """Every storage area over the PostgreSQL owner ``db`` (scoped and fenced as it is);
    closing the store closes ``db``."""
    vectors = BinaryIndex(search.PG_VECTORS)

    def search_one(tx: Tx, sides: tuple[PgSide, ...], note_search: NoteSearch) -> NoteSearchResult:
        return search.search_notes(tx.conn, vectors, note_search, sides)

    return store_of(
        db,
        tidy=_tidy,
        search_one=search_one,
        closer=db.close,
        leases=LeaseArea(db.beside(deadline_s=LEASE_CALL_DEADLINE_S)),
    )


def open_postgres_store(uri: str, *, inline: bool = False, fence: Fence | None = None) -> Store:
    """Open (migrating as needed) the PostgreSQL database at ``uri`` as a store.

    ``inline`` runs calls on the event loop's thread (tests under trio's MockClock). With a
    ``fence`` (a process of a fleet) the store serves the fence's shards and fences every
    buffer write; without one it serves every shard, unfenced.
    """
    return postgres_store(PgDatabase.open(uri, inline=inline, fence=fence))
