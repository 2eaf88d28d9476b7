"""The write frontier: which notes are still being written, and in what order they commit."""

from __future__ import annotations

import anyio
import pytest

from vivy.actors.frontier import WriteFrontier

pytestmark = pytest.mark.anyio


def test_written_through_looks_only_at_buffers_closed_by_then() -> None:
    """A buffer closed at 100 holds back time 100 and later, not 99; done releases it."""
    frontier = WriteFrontier()
    frontier.add(1, 100.0)
    frontier.add(2, 200.0)
    assert frontier.written_through(99.0)
    assert not frontier.written_through(100.0)
    frontier.done(1)
    assert frontier.written_through(199.0) and not frontier.written_through(250.0)
    frontier.done(2)
    assert frontier.written_through(1e12) and len(frontier) == 0


async def test_commits_take_turns_in_close_order() -> None:
    """Three notes whose calls end in reverse order still commit in the order they closed."""
    frontier = WriteFrontier()
    for buffer_id, closed_at in ((3, 30.0), (1, 10.0), (2, 20.0)):
        frontier.add(buffer_id, closed_at)
    committed: list[int] = []

    async def write(buffer_id: int, answer_after: float) -> None:
        await anyio.sleep(answer_after)  # the model call
        await frontier.wait_turn(buffer_id)
        committed.append(buffer_id)
        frontier.done(buffer_id)

    async with anyio.create_task_group() as tg:
        tg.start_soon(write, 1, 3.0)
        tg.start_soon(write, 2, 2.0)
        tg.start_soon(write, 3, 1.0)
    assert committed == [1, 2, 3]


async def test_waiters_wake_when_the_frontier_passes() -> None:
    """wait_written_through and wait_at_most return once enough buffers are done."""
    frontier = WriteFrontier()
    frontier.add(1, 10.0)
    frontier.add(2, 20.0)
    woke: list[str] = []
    calls: list[str] = []
    frontier.on_done = lambda: calls.append("done")

    async def through() -> None:
        await frontier.wait_written_through(15.0)
        woke.append("through 15")

    async def at_most() -> None:
        await frontier.wait_at_most(0)
        woke.append("empty")

    async with anyio.create_task_group() as tg:
        tg.start_soon(through)
        tg.start_soon(at_most)
        await anyio.sleep(1)
        assert woke == []
        frontier.done(1)
        await anyio.sleep(1)
        assert woke == ["through 15"]
        frontier.done(2)
    assert woke == ["through 15", "empty"]
    assert calls == ["done", "done"]
