"""What members' commands and the reply context read and change: a member's profile view,
forget-me and opt-out reports, a guild's counts, server lore and the operator's member card."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from vivy.memory.facts import Fact

__all__ = [
    "BufferedRef",
    "ForgetReport",
    "GuildStatus",
    "LoreItem",
    "MemberCard",
    "MemberProfile",
    "PeopleReads",
    "RememberOutcome",
]


@dataclass(frozen=True, slots=True)
class MemberProfile:
    """What Vivy holds about one member of one guild."""

    user_id: int
    display_name: str | None
    opted_out: bool
    facts: tuple[Fact, ...]
    note_count: int


@dataclass(frozen=True, slots=True)
class BufferedRef:
    """A buffered message of an open buffer, so its channel actor can be told it is gone."""

    channel_id: int
    message_id: int


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What :func:`forget_member` removed."""

    facts: int
    messages: int
    notes: int
    other_facts: int
    pending_updates: int
    open_messages: tuple[BufferedRef, ...]


@dataclass(frozen=True, slots=True)
class GuildStatus:
    """Counts of a guild's memory, for server managers."""

    conversation_notes: int
    topic_clusters: int
    active_facts: int
    members_with_facts: int
    open_buffers: int
    closed_buffers: int
    pending_updates: int
    lore: int
    last_nightly_job: float | None


class RememberOutcome(StrEnum):
    """What became of a fact a member stated."""

    STORED = "stored"
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class LoreItem:
    """One active piece of server lore."""

    id: int
    text: str
    created_at: float


@dataclass(frozen=True, slots=True)
class MemberCard:
    """What the operator API shows of a member: name, opt-out, facts and newest notes."""

    name: str
    opted_out: bool
    facts: tuple[Fact, ...]
    #: (note id, date, title) of their newest notes, newest first.
    recent_notes: tuple[tuple[int, str, str], ...]


@dataclass(frozen=True, slots=True)
class PeopleReads:
    """The profiles, activity and lore of one reply context."""

    names: dict[int, str]
    facts: dict[int, list[Fact]]
    #: Per active member, the (date, title) of their recent conversation notes.
    activity: dict[int, list[tuple[str, str]]]
    lore: list[LoreItem]
