"""Tests of the nightly schedule: midnights across DST, owed days, cluster validation."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from vivy.llm.schemas import ClusterDraft, DraftCluster
from vivy.state.schedule import (
    day_bounds,
    local_day,
    missed_days,
    next_midnight,
    validate_clusters,
)

NEW_YORK = ZoneInfo("America/New_York")


def utc(text: str) -> float:
    """Epoch seconds of an ISO UTC time."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_next_midnight_in_utc() -> None:
    """In UTC the next midnight is the start of the next calendar day."""
    assert next_midnight(utc("2026-03-02T17:00:00"), ZoneInfo("UTC")) == utc("2026-03-03T00:00:00")


def test_next_midnight_across_spring_forward() -> None:
    """Across the DST change the local midnights are 23 hours apart, not 24."""
    first = next_midnight(utc("2026-03-07T17:00:00"), NEW_YORK)
    second = next_midnight(first, NEW_YORK)
    assert first == utc("2026-03-08T05:00:00")
    assert second == utc("2026-03-09T04:00:00")
    assert second - first == 23 * 3600


def test_day_bounds_of_fall_back_day_last_25_hours() -> None:
    """The day clocks fall back lasts 25 hours."""
    start, end = day_bounds(date(2026, 11, 1), NEW_YORK)
    assert end - start == 25 * 3600


def test_missed_days_oldest_first_skipping_completed() -> None:
    """Days after the first activity, before today, without a run, are owed in order."""
    now = utc("2026-03-05T10:00:00")
    days = missed_days(now, ZoneInfo("UTC"), [date(2026, 3, 3)], first_activity=date(2026, 3, 2))
    assert days == [date(2026, 3, 2), date(2026, 3, 4)]


def test_no_activity_owes_nothing() -> None:
    """A database without notes owes no day."""
    assert missed_days(utc("2026-03-05T10:00:00"), ZoneInfo("UTC"), [], first_activity=None) == []


def test_local_day_uses_the_zone() -> None:
    """03:00 UTC is still the previous day in New York."""
    assert local_day(utc("2026-03-03T03:00:00"), NEW_YORK) == date(2026, 3, 2)


def test_clusters_citing_other_days_notes_lose_those_ids() -> None:
    """Source ids that are not the day's notes are dropped, and empty clusters with them."""
    draft = ClusterDraft(
        clusters=[
            DraftCluster(title="Games", summary="Game night.", source_note_ids=[1, 2, 99]),
            DraftCluster(title="Ghost", summary="Nothing real.", source_note_ids=[77]),
        ]
    )
    valid = validate_clusters(draft.topics(), [1, 2, 3])
    assert [(c.title, c.source_note_ids) for c in valid] == [("Games", (1, 2))]
