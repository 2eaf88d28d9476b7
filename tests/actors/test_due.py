"""Keys due at wall times: taken at exactly their time, earliest first, earlier time kept."""

from __future__ import annotations

import anyio
import pytest

from vivy.actors.due import DueQueue
from vivy.clock import Clock

pytestmark = pytest.mark.anyio

WALL0 = 1772409600.0


async def taken(queue: DueQueue[str], clock: Clock, count: int) -> list[tuple[str, float]]:
    """The next ``count`` keys with the wall time each was taken at."""
    return [(await queue.get(), clock.now()) for _ in range(count)]


async def test_keys_come_out_at_their_times_earliest_first() -> None:
    """Each key is taken at exactly its due time; a key queued twice keeps its earlier time."""
    clock = Clock.starting_at(WALL0)
    queue: DueQueue[str] = DueQueue(clock)
    queue.put("late", WALL0 + 30)
    queue.put("soon", WALL0 + 10)
    queue.put("soon", WALL0 + 20)  # later than queued: ignored
    queue.put("late", WALL0 + 25)  # earlier than queued: replaces
    assert len(queue) == 2
    assert await taken(queue, clock, 2) == [("soon", WALL0 + 10), ("late", WALL0 + 25)]
    assert len(queue) == 0


async def test_an_earlier_key_wakes_a_waiting_taker_and_a_later_one_waits_its_turn() -> None:
    """Putting a key earlier than all others while get() waits is taken at its own time."""
    clock = Clock.starting_at(WALL0)
    queue: DueQueue[str] = DueQueue(clock)
    queue.put("hour", WALL0 + 3600)
    got: list[tuple[str, float]] = []

    async def taker() -> None:
        got.extend(await taken(queue, clock, 3))

    async with anyio.create_task_group() as tg:
        tg.start_soon(taker)
        await anyio.sleep(1)
        queue.put("minute", WALL0 + 60)
        queue.put("two hours", WALL0 + 7200)
        queue.put("due already", WALL0)
    assert got == [
        ("due already", WALL0 + 1),
        ("minute", WALL0 + 60),
        ("hour", WALL0 + 3600),
    ]
    assert len(queue) == 1


async def test_get_due_also_says_which_due_time_was_reached() -> None:
    """The due time comes back exactly as queued, so the taker need not compare clocks again."""
    clock = Clock.starting_at(WALL0)
    queue: DueQueue[str] = DueQueue(clock)
    queue.put("channel", WALL0 + 1500.123)
    assert await queue.get_due() == ("channel", WALL0 + 1500.123)
    assert anyio.current_time() == clock.to_monotonic(WALL0 + 1500.123)
