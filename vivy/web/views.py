"""Rendering of the memory page's views: Jinja2 templates (autoescaped) and the chart.

Each view is an HTML fragment the page's script places in its shell; links between views
are ``#/...`` fragments the script turns into requests carrying the token. Nothing here
reads storage: the routes pass in what :mod:`vivy.web.memory` returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from vivy.memory.page import DayActivity
from vivy.retrieval.context import SECTION_TITLES

__all__ = ["Bar", "chart_bars", "render"]

#: Height of the activity chart's drawing area, in SVG units.
CHART_HEIGHT = 120
#: Width of one day's column, in SVG units.
DAY_WIDTH = 14

_env = Environment(
    loader=PackageLoader("vivy.web", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(seconds: float | None) -> str:
    """A UTC wall time as ``2026-03-02 18:04``."""
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


_env.filters["when"] = _when
_env.filters["score"] = _score
_env.globals["SECTION_TITLES"] = dict(SECTION_TITLES)


@dataclass(frozen=True, slots=True)
class Bar:
    """One day's column of the activity chart."""

    day: str
    x: int
    notes_height: int
    messages_height: int
    notes: int
    messages: int
    clusters: int


def chart_bars(days: Sequence[DayActivity], last: str, count: int) -> list[Bar]:
    """``count`` days ending with ``last`` as bars scaled to the busiest day; notes and
    messages each on their own scale, so both show."""
    by_day = {d.day: d for d in days}
    end = date.fromisoformat(last)
    most_notes = max((d.notes for d in days), default=0) or 1
    most_messages = max((d.messages for d in days), default=0) or 1
    bars = []
    for i in range(count):
        day = (end - timedelta(days=count - 1 - i)).isoformat()
        found = by_day.get(day, DayActivity(day, 0, 0, 0))
        bars.append(
            Bar(
                day,
                i * DAY_WIDTH,
                round(CHART_HEIGHT * found.notes / most_notes),
                round(CHART_HEIGHT * found.messages / most_messages),
                found.notes,
                found.messages,
                found.clusters,
            )
        )
    return bars


def render(template: str, **values: Any) -> str:
    """The named template rendered with ``values``."""
    return _env.get_template(template).render(
        chart_height=CHART_HEIGHT, day_width=DAY_WIDTH, **values
    )
