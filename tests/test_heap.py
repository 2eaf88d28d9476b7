"""The collector settings a long-running process applies once it has started."""

from __future__ import annotations

import gc

from vivy.heap import YOUNG_THRESHOLD, settle_heap


def test_settle_heap_freezes_start_up_objects_and_raises_the_young_threshold() -> None:
    """Objects made before the call are frozen; the young generation is collected less often.

    The autouse ``_restored_collector`` fixture puts the collector back afterwards.
    """
    made_at_start_up: list[list[int]] = [[n] for n in range(10)]
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    assert any(o is made_at_start_up[0] for o in gc.get_objects())
    settle_heap()
    assert gc.get_freeze_count() >= len(made_at_start_up)
    assert not any(o is made_at_start_up[0] for o in gc.get_objects())  # frozen: never walked
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD > 700
