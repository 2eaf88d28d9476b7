"""The search area of the storage port on PostgreSQL (:class:`PgSearchStore`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from vivy.storage.candidates import chosen_and_loaded
from vivy.storage.postgres import context_reads, search
from vivy.storage.postgres.db import PgConnection, PgDatabase, PgSide

if TYPE_CHECKING:
    from vivy.memory.evidence import EvidenceLine
    from vivy.memory.members import MemberCard, PeopleReads
    from vivy.memory.notes import Note
    from vivy.storage.search_types import Chosen, Loaded, NoteSearch, NoteSearchResult

__all__ = ["PgSearchStore"]

#: The value a search caller chooses (see :meth:`PgSearchStore.find_and_load`).
T = TypeVar("T")


class PgSearchStore:
    """Note search and context reads on PostgreSQL: :mod:`vivy.storage.postgres.search` and
    :mod:`~vivy.storage.postgres.context_reads` through the owner. The searches of one call
    run one after the other in one read, each with its keyword searches on the owner's side
    connections; the HNSW index stands in for SQLite's in-memory binary vectors."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def memory_version(self, guild_id: int) -> tuple[int | float | None, ...]:
        """A fingerprint of everything a guild's context is built from; it changes with it."""
        return await self._db.read(context_reads.memory_version, guild_id)

    async def find_notes(self, searches: Sequence[NoteSearch]) -> list[NoteSearchResult]:
        """Run each search and return its ranking candidates, in order (one read)."""

        def find(conn: PgConnection, sides: tuple[PgSide, ...]) -> list[NoteSearchResult]:
            return [search.search_notes(conn, s, sides) for s in searches]

        return await self._db.read_with_sides(find)

    async def note_hits(
        self, guild_id: int, note_ids: Sequence[int], window_ids: Sequence[int]
    ) -> tuple[list[Note], dict[int, tuple[EvidenceLine, ...]]]:
        """The guild's notes by id in the order given, and the lines of each evidence window."""

        def read(conn: PgConnection) -> tuple[list[Note], dict[int, tuple[EvidenceLine, ...]]]:
            found, lines = search.load_hits(conn, guild_id, note_ids, window_ids)
            return found, {w: tuple(ls) for w, ls in lines.items()}

        return await self._db.read(read)

    async def find_and_load(
        self,
        guild_id: int,
        searches: Sequence[NoteSearch],
        choose: Callable[[list[NoteSearchResult]], Chosen[T]],
    ) -> Loaded[T]:
        """Search, choose and load in one read (see the port)."""

        def find(conn: PgConnection, sides: tuple[PgSide, ...]) -> Loaded[T]:
            results = [search.search_notes(conn, s, sides) for s in searches]
            return chosen_and_loaded(
                results,
                choose,
                lambda notes, windows: search.load_hits(conn, guild_id, notes, windows),
            )

        return await self._db.read_with_sides(find)

    async def opted_out(self, guild_id: int, user_ids: Sequence[int]) -> set[int]:
        """The members among ``user_ids`` who opted out of memory in this guild."""
        return await self._db.read(context_reads.opted_out, guild_id, user_ids)

    async def people(
        self,
        guild_id: int,
        users: Sequence[int],
        active: Sequence[int],
        *,
        since: float,
        activity_limit: int,
        lore_limit: int,
    ) -> PeopleReads:
        """Names and facts of ``users``, recent notes of ``active`` members, and lore."""
        return await self._db.read(
            context_reads.people_reads,
            guild_id,
            users,
            active,
            since=since,
            activity_limit=activity_limit,
            lore_limit=lore_limit,
        )

    async def member_card(self, guild_id: int, user_id: int, notes: int) -> MemberCard | None:
        """What the operator API shows of a member; None when the guild does not know them."""
        return await self._db.read(context_reads.member_card, guild_id, user_id, notes)
