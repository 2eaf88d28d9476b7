"""Dates as notes and facts carry them: a note's UTC day, and how a fact cites its note."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["note_date", "short_date", "source_label"]


def note_date(wall: float) -> str:
    """The UTC date ``YYYY-MM-DD`` of a wall time."""
    return datetime.fromtimestamp(wall, tz=UTC).date().isoformat()


def short_date(day: str) -> str:
    """``Mon D`` for a ``YYYY-MM-DD`` date, as sources are cited (``Feb 23``)."""
    date = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    return f"{date.strftime('%b')} {date.day}"


def source_label(title: str, day: str) -> str:
    """How a fact cites its note: ``note title, Mon D``."""
    return f"{title}, {short_date(day)}"
