"""The storage port: what the rest of Vivy may ask of a database, by area.

The areas are the classes of :mod:`vivy.storage.areas`: each of their methods runs one
function of its storage module through the engine's owner, with that function's signature
and docstring, so an operation is written once, in its area's module, and bound there. Here
are what the areas do not cover: the shard leases of a fleet (PostgreSQL's), the operator
commands' read-only view, and :class:`Store`, which bundles them.

Every method is ``async`` and takes and returns plain typed values (ids, floats, strings and
the frozen records of :mod:`vivy.memory`); vectors cross it as sequences of floats, which each
engine encodes its own way. No connection, cursor, SQL fragment or engine type crosses it, so
both engines (SQLite and PostgreSQL) serve the same areas and run the same tests.
A store serves one scope of shards: its lists of pending work (open and closed buffers,
profile updates, the nightly job's guilds and days) hold only the guilds of those shards, so
each process of a fleet resumes its own work and no other's.

A method is one unit of work: a method that writes commits its changes in one transaction
before it returns, and fails as a whole.

:class:`Store` bundles the areas; :func:`vivy.storage.engines.open_store` opens either
engine behind them (:func:`store_of` over its owner).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from vivy.storage.areas import (
    BufferStore,
    EvidenceStore,
    ImportStore,
    JobStore,
    MemberStore,
    MetaStore,
    NoteStore,
    PageStore,
    ProfileStore,
    ReembedStore,
    SearchOne,
    SearchStore,
    SidesOwner,
)
from vivy.storage.dialect import Tx
from vivy.storage.readonly import ReadOnlyDatabase

if TYPE_CHECKING:
    from vivy.memory.database import LeaseHolder


__all__ = [
    "BufferStore",
    "Closer",
    "EvidenceStore",
    "ImportStore",
    "JobStore",
    "LeaseStore",
    "MemberStore",
    "MetaStore",
    "NoteStore",
    "PageStore",
    "ProfileStore",
    "ReadOnlyStore",
    "ReembedStore",
    "SearchStore",
    "Store",
    "store_of",
]


#: The operator commands' read-only view of an existing database: synchronous (the commands
#: run outside any event loop), written once for both engines; it never creates, migrates or
#: changes a database.
ReadOnlyStore = ReadOnlyDatabase


class LeaseStore(Protocol):
    """Shard leases of a fleet of processes sharing one database (PostgreSQL only).

    Times are the processes' wall clocks; a lease is safe whatever they say, because every
    buffer write is fenced by the epoch (see :class:`~vivy.shards.Fence`).
    """

    async def acquire(
        self, shard_id: int, shard_count: int, owner: str, now: float, ttl_s: float
    ) -> int | None:
        """Take the shard's lease until ``now + ttl_s`` if it is free, expired or already
        ``owner``'s; its new epoch, or None while another owner's lease is live."""

    async def renew(
        self, owner: str, held: Mapping[int, int], now: float, ttl_s: float
    ) -> set[int]:
        """Extend the leases held at these epochs to ``now + ttl_s``; returns the shards
        still ours."""

    async def release(self, owner: str, held: Mapping[int, int]) -> None:
        """Let the leases go at once (a graceful stop)."""

    async def holders(self, shard_ids: Sequence[int]) -> list[LeaseHolder]:
        """The stored leases of these shards."""

    async def other_fleet(self, shard_count: int, now: float) -> list[LeaseHolder]:
        """Live leases taken with another shard count."""

    async def live(self, now: float) -> list[LeaseHolder]:
        """Every live lease: the processes of a fleet running on this database."""


class Closer(Protocol):
    """Releases an engine's connections."""

    def __call__(self) -> None:
        """Close; later calls on the store raise :class:`~vivy.errors.StorageError`."""


@dataclass(frozen=True, slots=True)
class Store:
    """Every area of storage, over one engine."""

    buffers: BufferStore
    notes: NoteStore
    profiles: ProfileStore
    members: MemberStore
    evidence: EvidenceStore
    jobs: JobStore
    meta: MetaStore
    reembed: ReembedStore
    search: SearchStore
    imports: ImportStore
    pages: PageStore
    closer: Closer
    #: Shard leases; None on SQLite, whose database one process owns.
    leases: LeaseStore | None = None

    def close(self) -> None:
        """Release the engine."""
        self.closer()


def store_of(
    owner: SidesOwner,
    *,
    tidy: Callable[[Tx], bool],
    search_one: SearchOne,
    closer: Closer,
    leases: LeaseStore | None = None,
) -> Store:
    """Every area of the port over ``owner``, with the engine's own keyword-index upkeep,
    note search and (PostgreSQL) shard leases; ``closer`` releases the engine."""
    return Store(
        buffers=BufferStore(owner),
        notes=NoteStore(owner),
        profiles=ProfileStore(owner),
        members=MemberStore(owner),
        evidence=EvidenceStore(owner),
        jobs=JobStore(owner, tidy),
        meta=MetaStore(owner),
        reembed=ReembedStore(owner),
        search=SearchStore(owner, search_one),
        imports=ImportStore(owner),
        pages=PageStore(owner),
        closer=closer,
        leases=leases,
    )
