"""Smoke tests of the router on asyncio with real threads: the database in thread mode.

The exact-time tests run under trio's MockClock with inline storage (``test_router.py``);
these check that the production arrangement (group commit on a worker thread, real time)
stores everything and fires its timers. Every wait is bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from tests.storage import count_buffers
from vivy.actors.router import Router
from vivy.clock import Clock
from vivy.config import BufferSettings
from vivy.state.gate import CapturePolicy, IncomingDelete, IncomingEdit, IngestOutcome
from vivy.storage import buffers as store
from vivy.storage.sqlite.db import Connection, Database
from vivy.storage.sqlite.stores import sqlite_store

from .harness import FIXED, GUILD, WALL0, CountingObserver, message

pytestmark = pytest.mark.anyio

#: A window short enough to wait for in real time.
QUICK = BufferSettings(inactivity_min_s=0.2, inactivity_max_s=0.2)


@pytest.fixture
def anyio_backend() -> str:
    """asyncio in real time, as in production."""
    return "asyncio"


@dataclass
class SignallingHandOff:
    """A NoteWriter stand-in that records handed-off buffers and signals the first one."""

    received: list[int] = field(default_factory=list)
    first: anyio.Event = field(default_factory=anyio.Event)

    def hand_off(self, buffer_id: int) -> None:
        """Record the buffer id and wake whoever waits for a hand-off."""
        self.received.append(buffer_id)
        self.first.set()


@dataclass
class Threaded:
    """A running router over a thread-mode database, with its recorders."""

    router: Router
    db: Database
    hand_off: SignallingHandOff
    observer: CountingObserver


async def wait_until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds (callers bound the wait with ``anyio.fail_after``)."""
    while True:
        if condition():
            return
        await anyio.sleep(0.01)


@asynccontextmanager
async def threaded_router(
    path: Path, *, settings: BufferSettings = FIXED
) -> AsyncIterator[Threaded]:
    """Open the database at ``path`` in thread mode and run a router on it until the block ends."""
    db = Database.open(path)
    assert not db.inline
    hand_off = SignallingHandOff()
    observer = CountingObserver()
    router = Router(
        store=sqlite_store(db),
        clock=Clock.starting_at(WALL0),
        buffers=settings,
        policy=CapturePolicy(own_user_id=1),
        hand_off=hand_off,
        observer=observer,
    )
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(router.run)
            yield Threaded(router, db, hand_off, observer)
            tg.cancel_scope.cancel()
    finally:
        db.close()


def rows_per_channel(conn: Connection) -> Counter[int]:
    """Buffered message rows counted by channel."""
    rows = conn.execute(
        "SELECT b.channel_id, COUNT(*) FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id GROUP BY b.channel_id"
    )
    return Counter({int(channel): int(count) for channel, count in rows})


def buffered_texts(conn: Connection) -> list[str]:
    """Texts of every buffered message in id order."""
    return [r[0] for r in conn.execute("SELECT text FROM buffer_messages ORDER BY message_id")]


async def test_concurrent_channels_are_all_durable(tmp_path: Path) -> None:
    """50 channels × 20 messages sent concurrently are all acknowledged and on disk."""
    path = tmp_path / "vivy.db"
    outcomes: Counter[IngestOutcome] = Counter()
    async with threaded_router(path) as h:

        async def send(channel: int) -> None:
            for k in range(20):
                outcomes[await h.router.ingest(message(channel * 100 + k, channel=channel))] += 1

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for channel in range(1, 51):
                    tg.start_soon(send, channel)
        assert h.router.statistics().active_actors == 50
    assert outcomes == {IngestOutcome.STORED: 1000}
    reopened = Database.open(path)
    try:
        assert reopened.read_sync(rows_per_channel) == Counter(dict.fromkeys(range(1, 51), 20))
        assert reopened.read_sync(count_buffers) == {"open": 50, "closed": 0}
    finally:
        reopened.close()


async def test_pipelined_submissions_are_durable_when_acknowledged(tmp_path: Path) -> None:
    """Messages submitted with many in flight per channel are each on disk when acknowledged."""
    path = tmp_path / "vivy.db"
    async with threaded_router(path) as h:
        with anyio.fail_after(30):
            acks = [
                await h.router.submit(message(k * 10 + channel, channel=channel))
                for k in range(1, 41)
                for channel in range(1, 6)
            ]
            assert [await ack.wait() for ack in acks] == [IngestOutcome.STORED] * 200
        stored = await h.db.read(rows_per_channel)
    assert stored == Counter(dict.fromkeys(range(1, 6), 40))
    assert sum(h.observer.outcomes.values()) == 200


async def test_quiet_channel_hands_off_after_its_window(tmp_path: Path) -> None:
    """A channel with a 0.2 s window closes its buffer for inactivity and its actor retires."""
    async with threaded_router(tmp_path / "vivy.db", settings=QUICK) as h:
        for k in range(1, 4):
            assert await h.router.ingest(message(k)) is IngestOutcome.STORED
        with anyio.fail_after(5):
            await h.hand_off.first.wait()
            await wait_until(lambda: h.router.statistics().active_actors == 0)
        # Normally one buffer; a stall over 0.2 s between two sends would split it in two.
        buffers = [await h.db.read(store.load_buffer, b) for b in h.hand_off.received]
        assert [m.message_id for b in buffers if b for m in b.messages] == [1, 2, 3]
        for stored in buffers:
            assert stored is not None and stored.row.close_reason == "inactivity"
            assert stored.row.closed_at is not None
            assert stored.row.closed_at >= stored.row.last_message_at + 0.2
        assert h.observer.closed == {"inactivity": len(buffers)}
        closed = [b for b, _ in await h.db.read(store.closed_buffer_ids)]
        assert closed == h.hand_off.received


async def test_edits_deletes_and_redelivery_on_threads(tmp_path: Path) -> None:
    """Edits and deletes reach their rows, and a redelivered message is a duplicate after flush."""
    async with threaded_router(tmp_path / "vivy.db", settings=QUICK) as h:
        await h.router.ingest(message(1, text="typo"))
        await h.router.ingest(message(2, text="gone soon"))
        assert await h.router.edit(IncomingEdit(GUILD, 1, 1, "fixed")) is IngestOutcome.EDITED
        assert await h.router.delete(IncomingDelete(GUILD, 1, 2)) is IngestOutcome.DELETED
        with anyio.fail_after(5):
            await h.hand_off.first.wait()
        assert await h.router.ingest(message(1, text="again")) is IngestOutcome.DUPLICATE
        assert await h.router.ingest(message(3, text="new talk")) is IngestOutcome.STORED
        texts = await h.db.read(buffered_texts)
        assert texts == ["fixed", "new talk"]
        buffer_of = await h.db.read(
            lambda c: dict(c.execute("SELECT message_id, buffer_id FROM buffer_messages"))
        )
        assert buffer_of[3] != buffer_of[1]
        assert buffer_of[1] in h.hand_off.received
