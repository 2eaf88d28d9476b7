"""Members' profiles: sections, facts as stored and shown, the operations a model proposes
on them, what a plan writes, and the pending profile updates of the outbox."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from vivy.memory.notes import Note

__all__ = [
    "PROFILE_SECTIONS",
    "AddFact",
    "ExistingFact",
    "Fact",
    "FactOperation",
    "FactRecord",
    "InvalidateFact",
    "KeepFact",
    "LoreRecord",
    "MergeFacts",
    "NewFact",
    "PendingUpdate",
    "ProfileSection",
    "RetiredFact",
    "UpdateContext",
]


#: The sections of a user profile .
ProfileSection = Literal["bio", "interests", "skills", "opinions", "relationships", "other"]


#: The profile sections in display order.
PROFILE_SECTIONS: tuple[ProfileSection, ...] = (
    "bio",
    "interests",
    "skills",
    "opinions",
    "relationships",
    "other",
)


@dataclass(frozen=True, slots=True)
class Fact:
    """An active fact, as retrieval and commands show it."""

    id: int
    section: str
    text: str
    source_kind: str
    source_note_id: int | None
    source_label: str
    created_at: float

    def existing(self) -> ExistingFact:
        """The view the operation planner needs."""
        return ExistingFact(self.id, self.section, self.text, self.source_kind, self.created_at)


@dataclass(frozen=True, slots=True)
class PendingUpdate:
    """A profile update waiting to be applied: one (note, member) pair.

    ``operations`` are the ones the note call returned for this member, as stored JSON
    (:func:`vivy.llm.schemas.decode_operations` reads them), computed against profile version
    ``basis_version``; None when the update needs a call of its own.
    """

    id: int
    guild_id: int
    user_id: int
    note_id: int
    attempts: int
    next_attempt_at: float
    operations: str | None = None
    basis_version: int | None = None


@dataclass(frozen=True, slots=True)
class UpdateContext:
    """Everything one profile update call needs, read in one go."""

    version: int
    facts: list[Fact]
    notes: list[Note]
    #: By note id: the note's lines as (message id, author name, text, time).
    lines: dict[int, list[tuple[int, str, str, float]]]


@dataclass(frozen=True, slots=True)
class FactRecord:
    """A profile fact with its history, as ``vivy profile`` shows it."""

    id: int
    section: str
    text: str
    source_kind: str
    source_label: str
    created_at: float
    invalidated_at: float | None
    invalidation_reason: str | None
    superseded_by: int | None
    superseded_text: str | None
    #: The note the fact was learned from (None for stated, migrated or removed sources).
    source_note_id: int | None = None


@dataclass(frozen=True, slots=True)
class LoreRecord:
    """An entry of server lore with its history, as ``vivy export`` writes it."""

    id: int
    text: str
    author_id: int
    created_at: float
    invalidated_at: float | None


@dataclass(frozen=True, slots=True)
class ExistingFact:
    """An active fact of the member's profile."""

    id: int
    section: str
    text: str
    source_kind: str
    created_at: float


@dataclass(frozen=True, slots=True)
class NewFact:
    """A fact to insert; ``supersedes`` are fact ids it replaces (a merge)."""

    section: str
    text: str
    source_kind: str
    source_note_id: int | None
    source_label: str
    supersedes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RetiredFact:
    """A fact to invalidate, with the reason kept in its history."""

    fact_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class AddFact:
    """Add a new third-person fact to a section; ``note_id`` names its source note when the
    answer covered several notes (ADD)."""

    section: str
    text: str
    note_id: int | None = None


@dataclass(frozen=True, slots=True)
class MergeFacts:
    """Replace one or more existing facts by a single richer fact (MERGE)."""

    fact_ids: tuple[int, ...]
    text: str
    section: str
    note_id: int | None = None


@dataclass(frozen=True, slots=True)
class InvalidateFact:
    """Retire an existing fact that newer information contradicts (INVALIDATE)."""

    fact_id: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class KeepFact:
    """Leave an existing fact as it is (KEEP)."""

    fact_id: int


#: One operation on a profile.
FactOperation: TypeAlias = AddFact | MergeFacts | InvalidateFact | KeepFact
