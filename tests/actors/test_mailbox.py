"""An actor's mailbox: batches in order, backpressure in order, the timer's doorbell, closing."""

from __future__ import annotations

import anyio
import pytest

from vivy.actors.mailbox import Mailbox

pytestmark = pytest.mark.anyio


async def test_items_are_taken_in_order_up_to_the_limit() -> None:
    """take() hands the oldest items first and never more than asked for."""
    mailbox: Mailbox[int] = Mailbox(10)
    for n in range(5):
        assert mailbox.put_nowait(n)
    assert len(mailbox) == 5
    assert mailbox.take(3) == [0, 1, 2]
    assert mailbox.take(3) == [3, 4]
    assert mailbox.take(3) == []


async def test_a_sleeping_actor_wakes_for_an_item_and_for_its_timer() -> None:
    """wait() returns once an item is queued or the timer rings, and not before."""
    mailbox: Mailbox[str] = Mailbox(4)
    woke: list[float] = []

    async def actor() -> None:
        await mailbox.wait()
        woke.append(anyio.current_time())
        assert mailbox.take(4) == ["hello"]
        await mailbox.wait()
        woke.append(anyio.current_time())

    async with anyio.create_task_group() as tg:
        start = anyio.current_time()
        tg.start_soon(actor)
        await anyio.sleep(5)
        assert woke == []
        mailbox.put_nowait("hello")
        await anyio.sleep(5)
        assert mailbox.rung is None
        mailbox.ring(1234.5)
    assert woke == [start + 5, start + 10]
    assert mailbox.rung == 1234.5  # the actor answers the doorbell by clearing it
    await mailbox.wait()  # returns at once while rung
    mailbox.ring(1000.0)
    assert mailbox.rung == 1234.5  # two rings before an answer keep the later deadline


async def test_a_full_mailbox_makes_senders_wait_and_lets_them_in_in_order() -> None:
    """Waiting senders get in oldest first as room is taken; a new one never overtakes them."""
    mailbox: Mailbox[str] = Mailbox(2)
    assert mailbox.put_nowait("a") and mailbox.put_nowait("b")
    assert not mailbox.put_nowait("refused")
    delivered: list[str] = []

    async def sender(item: str) -> None:
        await mailbox.put(item)
        delivered.append(item)

    async with anyio.create_task_group() as tg:
        for item in ("c", "d", "e"):
            tg.start_soon(sender, item)
            await anyio.sleep(1)
        assert mailbox.waiting_senders == 3
        assert not mailbox.put_nowait("late")  # would overtake the waiting senders
        assert mailbox.take(1) == ["a"]  # one place: the oldest waiting sender's item
        assert mailbox.waiting_senders == 2
        assert mailbox.take(10) == ["b", "c"]
        await anyio.sleep(1)
        assert mailbox.take(10) == ["d", "e"]
    assert sorted(delivered) == ["c", "d", "e"]  # every put returned (the order is take's)
    assert mailbox.put_nowait("f")


async def test_a_cancelled_sender_leaves_nothing_behind() -> None:
    """A sender cancelled while waiting takes its item away with it."""
    mailbox: Mailbox[str] = Mailbox(1)
    mailbox.put_nowait("a")
    with anyio.move_on_after(1):
        await mailbox.put("never")
    assert mailbox.waiting_senders == 0
    assert mailbox.take(5) == ["a"]
    assert len(mailbox) == 0


async def test_closing_refuses_items_and_only_an_empty_mailbox_closes() -> None:
    """A retired actor's mailbox raises ClosedResourceError; queued items forbid closing."""
    mailbox: Mailbox[int] = Mailbox(2)
    mailbox.put_nowait(1)
    with pytest.raises(RuntimeError, match="queued items"):
        mailbox.close()
    assert not mailbox.closed
    mailbox.take(2)
    mailbox.close()
    assert mailbox.closed
    with pytest.raises(anyio.ClosedResourceError):
        mailbox.put_nowait(2)
    with pytest.raises(anyio.ClosedResourceError):
        await mailbox.put(2)


def test_a_mailbox_holds_at_least_one_item() -> None:
    """A capacity below one is refused."""
    with pytest.raises(ValueError, match="at least one"):
        Mailbox(0)
