"""Catch-up from Discord's history: the decisions, apart from the hikari adapter that acts.

Discord does not redeliver gateway events to a new session: a message sent while no process
of Vivy listened to its shard, or one a killed process had received but not yet stored, never
arrives again. So when a guild becomes available (GUILD_CREATE after READY, or after a
reconnect that was not a RESUME), :class:`~vivy.bot.gateway.Gateway` reads every channel of
it that Vivy stored a message of from Discord's history, after the highest message id stored,
oldest first, and feeds what it reads through the live capture path (same filters; never
answered).

Rules of this module:

* Nothing here does I/O, reads a clock or logs: the gateway asks, this module decides.
* A channel is *held* from the moment its guild becomes available, before the first await of
  the catch-up, until its history has been stored and every live event that arrived meanwhile
  has been released. A live create, edit or delete of a held channel waits in
  :class:`ChannelHolds` instead of reaching the router, so it can never overtake the older
  messages the catch-up stores (the channel machine drops ids at or below its watermark, so an
  overtaking message could make the older ones be dropped, that is lost).
* Held events are released in arrival order, and the hold ends only when none is left; taking
  the last batch and ending the hold happen in one synchronous call, so no event can slip in
  between and pass the ones still being released.
* A channel is caught up after its highest stored id, or, when nothing of it is stored, after
  the guild's if Discord's newest message of it is newer (:func:`channels_to_catch_up`); the
  read is bounded by the ``VIVY_CATCHUP_MESSAGES`` cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = [
    "CATCHUP_CONCURRENCY",
    "ChannelCatchUp",
    "ChannelHolds",
    "GuildCatchUp",
    "HoldStatistics",
    "channels_to_catch_up",
]

T = TypeVar("T")

#: Channels of one guild read at once. Hikari keeps to Discord's rate limits (per channel
#: route and global); this only bounds how many channels hold their live events at a time.
CATCHUP_CONCURRENCY = 4


@dataclass(frozen=True, slots=True)
class HoldStatistics:
    """A snapshot of the holds (trio-style ``statistics()``)."""

    #: Channels whose live events are held.
    channels: int
    #: Live events waiting for their channel's catch-up to end.
    held_events: int


@dataclass(eq=False, slots=True)
class _Hold(Generic[T]):
    """One channel's hold: the catch-up that owns it and the events waiting."""

    owner: object
    events: list[T] = field(default_factory=list)


@dataclass(eq=False)
class ChannelHolds(Generic[T]):
    """The channels catching up, and the live events held for each, in arrival order."""

    _held: dict[int, _Hold[T]] = field(default_factory=dict)

    def hold(self, channel_ids: Iterable[int], owner: object) -> list[int]:
        """Start holding the channels' live events for the catch-up ``owner``; returns the
        channels newly held (a channel already catching up is left to its own catch-up)."""
        started: list[int] = []
        for channel_id in dict.fromkeys(channel_ids):
            if channel_id not in self._held:
                self._held[channel_id] = _Hold(owner)
                started.append(channel_id)
        return started

    def is_held(self, channel_id: int) -> bool:
        """Whether the channel's live events are held."""
        return channel_id in self._held

    def offer(self, channel_id: int, event: T) -> bool:
        """Hold ``event`` if its channel is catching up (True); False means: handle it now."""
        hold = self._held.get(channel_id)
        if hold is None:
            return False
        hold.events.append(event)
        return True

    def release(self, channel_id: int) -> list[T]:
        """The events held so far, oldest first, which the caller handles before calling
        again; when none is left the hold ends and ``[]`` is returned."""
        hold = self._held.get(channel_id)
        if hold is None:
            return []
        if not hold.events:
            del self._held[channel_id]
            return []
        events, hold.events = hold.events, []
        return events

    def abandon(self, owner: object) -> int:
        """End the holds ``owner`` still has without releasing their events (its catch-up was
        cancelled: they come again from history on the next catch-up); returns how many
        events were dropped. Holds another catch-up took since are left alone."""
        mine = [c for c, hold in self._held.items() if hold.owner is owner]
        return sum(len(self._held.pop(c).events) for c in mine)

    def statistics(self) -> HoldStatistics:
        """Channels held and events waiting."""
        return HoldStatistics(len(self._held), sum(len(h.events) for h in self._held.values()))


def channels_to_catch_up(
    channel_ids: Iterable[int],
    marks: Mapping[int, int],
    blacklisted: Iterable[int] = (),
    latest: Mapping[int, int] | None = None,
) -> dict[int, int]:
    """The channels to read, each with the id to read after, none of them blacklisted.

    A channel with a stored message (``marks``, the highest stored id per channel) is read
    after it. A channel with none (new, or its first messages came while Vivy was down) is
    read after the guild's highest stored id when Discord says (``latest``, each channel's
    newest message id from GUILD_CREATE) that it holds a newer message: those came after the
    last message Vivy heard from the guild. A guild Vivy never stored a message of is not read.
    """
    skip = frozenset(blacklisted)
    ordered = [c for c in dict.fromkeys(channel_ids) if c not in skip]
    guild_mark = max((marks.get(c, 0) for c in ordered), default=0)
    newest = latest or {}
    due: dict[int, int] = {}
    for channel_id in ordered:
        mark = marks.get(channel_id, 0)
        if mark > 0:
            due[channel_id] = mark
        elif guild_mark > 0 and newest.get(channel_id, 0) > guild_mark:
            due[channel_id] = guild_mark
    return due


@dataclass(frozen=True, slots=True)
class ChannelCatchUp:
    """What the catch-up of one channel did."""

    channel_id: int
    #: Messages read from the history.
    read: int = 0
    #: Of those, messages the router stored (others were bots, opted out, duplicates...).
    stored: int = 0
    #: Whether the read stopped at the cap (older messages past it were not read).
    capped: bool = False
    #: Why the history could not be read (for example ``403 Forbidden``), or None.
    error: str | None = None


@dataclass(frozen=True, slots=True)
class GuildCatchUp:
    """The catch-up of one guild, summed over its channels (the log line)."""

    channels: int
    read: int
    stored: int
    capped: int
    unreadable: int

    @classmethod
    def of(cls, reports: Iterable[ChannelCatchUp]) -> GuildCatchUp:
        """Sum the channels' reports."""
        done = list(reports)
        return cls(
            channels=len(done),
            read=sum(r.read for r in done),
            stored=sum(r.stored for r in done),
            capped=sum(r.capped for r in done),
            unreadable=sum(r.error is not None for r in done),
        )
