"""When the nightly memory job runs and which days it owes, decided without I/O.

The job runs at every local midnight of the configured IANA time zone and processes the local
day that just ended. Midnights are computed on the calendar, not by adding 24 hours, so the
job stays at midnight across daylight-saving changes (a 23- or 25-hour day). At start-up the
days of the catch-up window that have no completed run are owed, oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from vivy.memory.notes import TopicCluster

__all__ = [
    "SchedulerPass",
    "day_bounds",
    "local_day",
    "missed_days",
    "next_midnight",
    "validate_clusters",
]


class SchedulerPass(StrEnum):
    """A pass of the nightly job (label ``pass``)."""

    #: Pass 1: the day's conversation notes grouped into topic clusters.
    CLUSTERING = "clustering"
    #: Pass 2: each member's profile consolidated against the day's notes.
    CONSOLIDATION = "consolidation"


def local_day(wall: float, zone: ZoneInfo) -> date:
    """The local calendar date of a UTC wall time."""
    return datetime.fromtimestamp(wall, tz=zone).date()


def _midnight(day: date, zone: ZoneInfo) -> float:
    return datetime.combine(day, time(0), tzinfo=zone).timestamp()


def day_bounds(day: date, zone: ZoneInfo) -> tuple[float, float]:
    """UTC wall times of the local midnights that open and close ``day``."""
    return _midnight(day, zone), _midnight(day + timedelta(days=1), zone)


def next_midnight(now: float, zone: ZoneInfo) -> float:
    """The first local midnight strictly after UTC wall time ``now``."""
    return _midnight(local_day(now, zone) + timedelta(days=1), zone)


def missed_days(
    now: float,
    zone: ZoneInfo,
    completed: Iterable[date],
    *,
    first_activity: date | None,
    window_days: int = 14,
) -> list[date]:
    """Days before today (local) within the window, after the first activity, without a run."""
    if first_activity is None:
        return []
    today = local_day(now, zone)
    start = max(first_activity, today - timedelta(days=window_days))
    done = set(completed)
    days = []
    day = start
    while day < today:
        if day not in done:
            days.append(day)
        day += timedelta(days=1)
    return days


def validate_clusters(
    clusters: Iterable[TopicCluster], day_note_ids: Sequence[int]
) -> list[TopicCluster]:
    """Keep only source ids that are the day's notes; drop clusters left without any."""
    allowed = set(day_note_ids)
    valid = []
    for cluster in clusters:
        ids = tuple(dict.fromkeys(i for i in cluster.source_note_ids if i in allowed))
        if ids:
            valid.append(TopicCluster(cluster.title, cluster.summary, ids))
    return valid
