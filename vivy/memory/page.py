"""What the memory page shows and the corrections it logs: timeline rows, a day's activity,
members, facts with their history, nightly passes, a guild's health and the corrections log."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "REMOVED_FACT_REASON",
    "Correction",
    "CorrectionKind",
    "DayActivity",
    "GuildHealth",
    "JobRun",
    "MemberRow",
    "NoteLine",
    "PageFact",
    "TimelineNote",
]

#: Why a fact removed on the memory page left the profile; ``{who}`` is the token's label.
REMOVED_FACT_REASON = "removed on the memory page by {who}"


class CorrectionKind(StrEnum):
    """What a server manager corrected."""

    REMOVE_FACT = "remove_fact"
    REMOVE_NOTE = "remove_note"
    FORGET_MEMBER = "forget_member"


@dataclass(frozen=True, slots=True)
class TimelineNote:
    """A note as the timeline lists it."""

    id: int
    note_type: str
    note_date: str
    channel_id: int
    channel_name: str
    title: str
    message_count: int
    started_at: float | None


@dataclass(frozen=True, slots=True)
class DayActivity:
    """A day's conversation notes and the messages they hold, and its topic clusters."""

    day: str
    notes: int
    messages: int
    clusters: int


@dataclass(frozen=True, slots=True)
class MemberRow:
    """A member of a guild as the member list shows them."""

    user_id: int
    name: str
    opted_out: bool
    facts: int


@dataclass(frozen=True, slots=True)
class PageFact:
    """A profile fact with its source and history."""

    id: int
    section: str
    text: str
    source_kind: str
    source_note_id: int | None
    source_label: str
    created_at: float
    invalidated_at: float | None
    invalidation_reason: str | None
    superseded_by_text: str | None


@dataclass(frozen=True, slots=True)
class NoteLine:
    """A message kept as a note's evidence."""

    author_id: int
    author_name: str
    text: str
    created_at: float


@dataclass(frozen=True, slots=True)
class JobRun:
    """One pass of the nightly job for a guild and day."""

    day: str
    job_pass: str
    completed_at: float


@dataclass(frozen=True, slots=True)
class GuildHealth:
    """What a guild's status does not hold: evidence kept and the last errors."""

    evidence_lines: int
    notes_failing: int
    updates_failing: int
    #: The newest error texts of unfinished work, newest first.
    last_errors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Correction:
    """One line of the corrections log."""

    id: int
    done_at: float
    who: str
    kind: str
    target: str
    #: What was removed, in its own words (a fact's text, a note's title); None once the
    #: member it concerned was forgotten.
    quote: str | None = None
