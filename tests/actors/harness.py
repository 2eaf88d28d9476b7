"""A running router over an inline database, for actor tests under trio's MockClock."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from vivy.actors.router import Router
from vivy.clock import Clock
from vivy.config import BufferSettings
from vivy.memory.buffers import CloseReason
from vivy.state.gate import CapturePolicy, IncomingMessage, IngestOutcome
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import sqlite_store

#: 2026-03-02T00:00:00Z, the wall time at virtual time zero of every test.
WALL0 = 1772409600.0
GUILD = 100


@dataclass
class CountingObserver:
    """An :class:`~vivy.actors.router.IngestObserver` that only counts what it is told."""

    outcomes: Counter[IngestOutcome] = field(default_factory=Counter)
    opened: int = 0
    closed: Counter[str] = field(default_factory=Counter)
    restarts: int = 0

    def ingested(self, outcome: IngestOutcome, count: int = 1) -> None:
        """Count ``count`` events of one outcome."""
        self.outcomes[outcome] += count

    def buffer_opened(self) -> None:
        """Count an opened buffer."""
        self.opened += 1

    def buffer_closed(self, reason: CloseReason) -> None:
        """Count a closed buffer by reason (its value, as the metric label shows it)."""
        self.closed[reason.value] += 1

    def actor_restarted(self) -> None:
        """Count an actor restart."""
        self.restarts += 1


@dataclass
class RecordingHandOff:
    """A NoteWriter stand-in that records the buffers handed to it, with the time."""

    clock: Clock
    received: list[tuple[int, float]] = field(default_factory=list)

    def hand_off(self, buffer_id: int) -> None:
        """Record the buffer id and the virtual time of the hand-off."""
        self.received.append((buffer_id, anyio.current_time()))


@dataclass
class Harness:
    """What a test needs: the router, its database, clock and the recorders."""

    router: Router
    db: Database
    clock: Clock
    hand_off: RecordingHandOff
    observer: CountingObserver


# A fixed window makes exact-time assertions easy to read.
FIXED = BufferSettings(inactivity_min_s=1500.0, inactivity_max_s=1500.0)


@asynccontextmanager
async def running_router(
    path: Path,
    *,
    settings: BufferSettings = FIXED,
    policy: CapturePolicy | None = None,
    wall0: float = WALL0,
    hand_off_type: type[RecordingHandOff] = RecordingHandOff,
) -> AsyncIterator[Harness]:
    """Open the database at ``path`` inline and run a router on it until the block ends."""
    db = Database.open(path, inline=True)
    clock = Clock(wall_origin=wall0, mono_origin=0.0)
    hand_off = hand_off_type(clock)
    observer = CountingObserver()
    router = Router(
        store=sqlite_store(db),
        clock=clock,
        buffers=settings,
        policy=policy or CapturePolicy(own_user_id=1),
        hand_off=hand_off,
        observer=observer,
    )
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(router.run)
            yield Harness(router, db, clock, hand_off, observer)
            tg.cancel_scope.cancel()
    finally:
        db.close()


def message(
    message_id: int,
    *,
    channel: int = 1,
    author: int = 7,
    text: str = "hello there",
    bot: bool = False,
    at: float = 0.0,
) -> IncomingMessage:
    """An incoming message in guild :data:`GUILD`."""
    return IncomingMessage(
        guild_id=GUILD,
        channel_id=channel,
        message_id=message_id,
        author_id=author,
        author_name=f"user{author}",
        text=text,
        created_at=at,
        author_is_bot=bot,
        channel_name=f"channel-{channel}",
    )
