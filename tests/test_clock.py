"""The one time source: wall time derived from the event loop's monotonic clock."""

from __future__ import annotations

import pytest
import trio

from vivy.clock import Clock, system_now

pytestmark = pytest.mark.anyio


async def test_starting_at_derives_wall_time_from_virtual_time() -> None:
    """A clock started at a wall time follows the loop's clock second for second."""
    clock = Clock.starting_at(1_000.0)
    await trio.sleep(25.0)
    assert clock.now() == 1_025.0
    assert clock.to_monotonic(1_100.0) == clock.monotonic() + 75.0


async def test_wall_starts_at_the_system_time() -> None:
    """``Clock.wall()`` reads the system's UTC time once, at its start."""
    before = system_now()
    clock = Clock.wall()
    after = system_now()
    assert before <= clock.wall_origin <= after
    await trio.sleep(60.0)
    assert clock.now() == clock.wall_origin + 60.0
