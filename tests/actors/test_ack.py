"""The reply to one inbox item: waited for, or read once it is in."""

from __future__ import annotations

import anyio
import pytest

from vivy.actors.channel import Ack
from vivy.errors import StorageError
from vivy.state.gate import IngestOutcome

pytestmark = pytest.mark.anyio


async def test_a_waiter_wakes_with_the_outcome() -> None:
    """A task waiting before the reply is in gets the outcome once it is resolved."""
    ack = Ack()
    got: list[IngestOutcome] = []

    async def waiter() -> None:
        got.append(await ack.wait())

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.sleep(1)
        assert got == [] and not ack.done
        ack.resolve(IngestOutcome.STORED)
    assert got == [IngestOutcome.STORED]
    assert ack.result() is IngestOutcome.STORED


async def test_a_failed_item_raises_its_error_from_wait_and_result() -> None:
    """The error that kept an item from storage is raised to whoever collects the reply."""
    ack = Ack()
    ack.fail(StorageError("disk full"))
    assert ack.done
    with pytest.raises(StorageError, match="disk full"):
        await ack.wait()
    with pytest.raises(StorageError, match="disk full"):
        ack.result()


def test_result_before_the_reply_is_in_is_an_error() -> None:
    """Reading an unanswered ack is a caller's bug, reported as such rather than as None."""
    with pytest.raises(RuntimeError, match="not been answered"):
        Ack().result()
