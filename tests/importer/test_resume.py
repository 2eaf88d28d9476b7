"""A re-run after a crash starts at the first message no run fed and repeats no model call."""

from __future__ import annotations

from pathlib import Path

import pytest

from vivy.config import Settings
from vivy.importer import ImportProgress, import_exports, load_exports
from vivy.llm.offline import OfflineLLM

from . import snapshot

DEMO = Path(__file__).parents[2] / "vivy" / "data" / "demo_export.json"


class Crash(Exception):
    """Stands in for a kill in the middle of the replay."""


def test_rerun_after_a_crash_at_60_percent_does_only_what_is_left(tmp_path: Path) -> None:
    """The re-run's first record is past every message fed before the crash, its model calls
    and the crashed run's add up to a fresh import's, and the result equals a fresh import."""
    total = len(load_exports([DEMO]).messages)
    stop = int(total * 0.6)
    crashed: list[ImportProgress] = []

    def crash_at_60_percent(p: ImportProgress) -> None:
        crashed.append(p)
        if p.seen == stop:
            raise Crash

    db = tmp_path / "v.db"
    with pytest.raises(Crash):
        import_exports(
            [DEMO], Settings(), llm=OfflineLLM(), database=db, progress=crash_at_60_percent
        )
    calls_before_crash = crashed[-1].calls
    resumed: list[ImportProgress] = []
    rerun = import_exports(
        [DEMO], Settings(), llm=OfflineLLM(), database=db, progress=resumed.append
    )
    fresh_db = tmp_path / "fresh.db"
    fresh = import_exports([DEMO], Settings(), llm=OfflineLLM(), database=fresh_db)

    assert resumed[0].phase == "replaying"
    assert stop - 30 <= resumed[0].seen <= stop  # at most the messages of open buffers
    assert resumed[0].duplicates == resumed[0].seen
    assert rerun.complete and rerun.stored + resumed[0].seen >= total - sum(fresh.excluded.values())
    assert calls_before_crash + rerun.llm_calls <= fresh.llm_calls + 2  # a note cut mid-write
    assert calls_before_crash + rerun.llm_calls >= fresh.llm_calls
    assert snapshot(db)["interaction_notes"][0] == snapshot(fresh_db)["interaction_notes"][0]
