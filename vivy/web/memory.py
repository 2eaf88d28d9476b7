"""The memory page's small interface to Vivy: what it reads and the corrections it makes.

:class:`MemorySource` is all the page asks of the rest of Vivy; :class:`StoreMemory`
implements it over the storage port's ``pages`` and ``search`` areas and the reply path's
:class:`~vivy.retrieval.Retriever`, in the event loop the server runs in. Every method takes
the guild first and checks nothing about who asks: the routes check the token's guilds
before calling. A member who opted out shows no content: their facts are not listed and
their messages are not quoted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Protocol

from vivy.memory.guards import content_tokens
from vivy.memory.members import BufferedRef, ForgetReport, GuildStatus
from vivy.memory.notes import Note
from vivy.memory.page import (
    Correction,
    DayActivity,
    GuildHealth,
    JobRun,
    MemberRow,
    PageFact,
    TimelineNote,
)
from vivy.retrieval import Retriever
from vivy.retrieval.context import quoted_text
from vivy.retrieval.ranked import NoteHit
from vivy.storage.port import Store
from vivy.text.markup import readable

__all__ = [
    "CHART_DAYS",
    "TIMELINE_DAYS",
    "MemorySource",
    "NoteView",
    "ProfileView",
    "SearchView",
    "StoreMemory",
    "TimelineView",
]

#: Days the timeline lists at once.
TIMELINE_DAYS = 7
#: Days the activity chart covers, ending with the timeline's last day.
CHART_DAYS = 30
#: Nightly passes and corrections listed.
LOG_ROWS = 50
#: Search hits shown.
SEARCH_HITS = 8

#: Tells the channel actors that buffered messages are gone (forget-me's open messages).
DropMessages = Callable[[int, Sequence[BufferedRef]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class TimelineView:
    """A window of days of a guild's notes, with the activity chart's days."""

    first: str
    last: str
    notes: tuple[TimelineNote, ...]
    chart: tuple[DayActivity, ...]
    #: The last day of the window before this one.
    older: str
    #: The last day of the window after this one, None when this one holds the newest note.
    newer: str | None


@dataclass(frozen=True, slots=True)
class QuotedLine:
    """A message quoted under a note."""

    author: str
    text: str
    at: float


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A search hit with its score parts and quoted messages."""

    note: Note
    score: float
    vector_score: float | None
    keyword_score: float | None
    lines: tuple[QuotedLine, ...]


@dataclass(frozen=True, slots=True)
class MatchedFact:
    """An active fact of a member matching the search."""

    user_id: int
    name: str
    fact: PageFact


@dataclass(frozen=True, slots=True)
class SearchView:
    """What a search found."""

    query: str
    hits: tuple[SearchHit, ...]
    facts: tuple[MatchedFact, ...]


@dataclass(frozen=True, slots=True)
class ProfileView:
    """A member's profile: facts with sources and history (none when opted out)."""

    member: MemberRow
    facts: tuple[PageFact, ...]


@dataclass(frozen=True, slots=True)
class NoteView:
    """A note with its kept messages."""

    note: Note
    lines: tuple[QuotedLine, ...]


class MemorySource(Protocol):
    """What the memory page reads and corrects."""

    async def guild_ids(self) -> list[int]:
        """Every guild with a memory."""
        ...

    async def guild_names(self) -> dict[int, str]:
        """The names of the guilds whose name is known, by id."""
        ...

    async def timeline(self, guild_id: int, last: str | None) -> TimelineView:
        """The days up to ``last`` (default: the newest note's) with the activity chart."""
        ...

    async def search(self, guild_id: int, query: str) -> SearchView:
        """The notes the reply path would find for ``query``, and matching facts."""
        ...

    async def members(self, guild_id: int) -> list[MemberRow]:
        """The guild's members."""
        ...

    async def profile(self, guild_id: int, user_id: int) -> ProfileView | None:
        """A member's profile, or None when the guild does not know them."""
        ...

    async def note(self, guild_id: int, note_id: int) -> NoteView | None:
        """A note with its evidence, or None when the guild has no such note."""
        ...

    async def health(self, guild_id: int) -> tuple[GuildStatus, GuildHealth, list[JobRun]]:
        """Counts, evidence kept, last errors and the nightly job log."""
        ...

    async def corrections(self, guild_id: int) -> list[Correction]:
        """The corrections log, newest first."""
        ...

    async def remove_fact(self, guild_id: int, user_id: int, fact_id: int, who: str) -> str | None:
        """Remove an active fact; its text, or None when there is no such fact."""
        ...

    async def remove_note(self, guild_id: int, note_id: int, who: str) -> int | None:
        """Remove a note and what was derived from it; notes removed, or None."""
        ...

    async def forget_member(self, guild_id: int, user_id: int, who: str) -> ForgetReport:
        """Forget a member as forget-me does."""
        ...


class StoreMemory:
    """:class:`MemorySource` over a store and the retriever of replies.

    ``now`` gives the UTC wall time of corrections; ``drop_messages`` (the running bot's
    router) drops a forgotten member's messages from open buffers, as forget-me does;
    ``on_change`` runs after every correction (the running bot empties its replies' cache,
    whose memory fingerprint a fact removed in the same instant as another leaves alike).
    """

    def __init__(
        self,
        store: Store,
        retriever: Retriever,
        *,
        now: Callable[[], float],
        drop_messages: DropMessages | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._retriever = retriever
        self._now = now
        self._drop = drop_messages
        self._on_change = on_change

    async def guild_ids(self) -> list[int]:
        """Every guild with a member or a note."""
        return await self._store.pages.guild_ids()

    async def guild_names(self) -> dict[int, str]:
        """The names of the guilds whose name is known, by id."""
        return await self._store.pages.guild_names()

    async def timeline(self, guild_id: int, last: str | None) -> TimelineView:
        """Seven days up to ``last``, and thirty days of activity ending with them."""
        pages = self._store.pages
        newest = await pages.newest_day(guild_id)
        end = date.fromisoformat(last) if last else _day(newest)
        first = end - timedelta(days=TIMELINE_DAYS - 1)
        notes = await pages.timeline(guild_id, first.isoformat(), end.isoformat())
        chart = await pages.activity(
            guild_id, (end - timedelta(days=CHART_DAYS - 1)).isoformat(), end.isoformat()
        )
        newer = (end + timedelta(days=TIMELINE_DAYS)).isoformat()
        return TimelineView(
            first.isoformat(),
            end.isoformat(),
            tuple(notes),
            tuple(chart),
            (first - timedelta(days=1)).isoformat(),
            newer if newest is not None and end.isoformat() < newest else None,
        )

    async def search(self, guild_id: int, query: str) -> SearchView:
        """The retriever's note search, and the active facts sharing the query's words."""
        hits = await self._retriever.search_notes(guild_id, query, SEARCH_HITS)
        members = await self._store.pages.members(guild_id)
        hidden = {m.user_id for m in members if m.opted_out}
        found = tuple(_hit(hit, hidden) for hit in hits)
        words = _words(query)
        facts: list[MatchedFact] = []
        if words:
            held = await self._store.pages.guild_facts(guild_id)
            for member in members:
                if member.opted_out:
                    continue
                for fact in held.get(member.user_id, ()):
                    if words & _words(fact.text):
                        facts.append(MatchedFact(member.user_id, member.name, fact))
        return SearchView(query, found, tuple(facts))

    async def members(self, guild_id: int) -> list[MemberRow]:
        """The guild's named members."""
        return await self._store.pages.members(guild_id)

    async def profile(self, guild_id: int, user_id: int) -> ProfileView | None:
        """The member and their facts with history; no facts when they opted out."""
        member = await self._store.pages.member(guild_id, user_id)
        if member is None:
            return None
        if member.opted_out:
            return ProfileView(member, ())
        return ProfileView(member, tuple(await self._store.pages.fact_history(guild_id, user_id)))

    async def note(self, guild_id: int, note_id: int) -> NoteView | None:
        """The note and its kept messages, without those of members who opted out."""
        found = await self._store.pages.note(guild_id, note_id)
        if found is None:
            return None
        note, lines = found
        authors = sorted({line.author_id for line in lines})
        hidden = await self._store.search.opted_out(guild_id, authors)
        names = {p.user_id: p.display_name for p in note.participants}
        return NoteView(
            note,
            tuple(
                QuotedLine(line.author_name, readable(line.text, names), line.created_at)
                for line in lines
                if line.author_id not in hidden
            ),
        )

    async def health(self, guild_id: int) -> tuple[GuildStatus, GuildHealth, list[JobRun]]:
        """Counts, evidence, errors and the newest nightly passes."""
        status, health = await self._store.pages.health(guild_id)
        return status, health, await self._store.pages.job_log(guild_id, LOG_ROWS)

    async def corrections(self, guild_id: int) -> list[Correction]:
        """The newest corrections."""
        return await self._store.pages.corrections(guild_id, LOG_ROWS)

    async def remove_fact(self, guild_id: int, user_id: int, fact_id: int, who: str) -> str | None:
        """Invalidate the fact as ``/memory forget`` does, logged as ``who``."""
        removed = await self._store.pages.remove_fact(guild_id, user_id, fact_id, who, self._now())
        self._changed()
        return removed

    async def remove_note(self, guild_id: int, note_id: int, who: str) -> int | None:
        """Delete the note, its evidence and what was learnt from it, logged as ``who``."""
        removed = await self._store.pages.remove_note(guild_id, note_id, who, self._now())
        self._changed()
        return removed

    async def forget_member(self, guild_id: int, user_id: int, who: str) -> ForgetReport:
        """Forget the member as forget-me does, logged as ``who``."""
        report = await self._store.pages.forget_member(guild_id, user_id, who, self._now())
        self._changed()
        if self._drop is not None and report.open_messages:
            await self._drop(guild_id, report.open_messages)
        return report

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


def _day(text: str | None) -> date:
    return date.fromisoformat(text) if text else date(1970, 1, 1)


def _words(text: str) -> set[str]:
    return set(content_tokens(text))


def _hit(hit: NoteHit, hidden: set[int]) -> SearchHit:
    return SearchHit(
        hit.note,
        hit.score,
        hit.vector_score,
        hit.keyword_score,
        tuple(
            QuotedLine(line.author_name, quoted_text(line, hit.note), line.created_at)
            for line in hit.said
            if line.author_id not in hidden
        ),
    )
