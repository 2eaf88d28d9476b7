"""What goes into and comes out of the LLM: input payloads and strict output schemas.

The output models are the only shapes an LLM answer may take. They reject extra fields and
bound every string and list, so a rambling or hijacked answer fails validation (and is
retried) instead of reaching the database. Validated answers are turned into the domain's
records (:mod:`vivy.memory`) here (:meth:`NoteDraft.content`, :meth:`ClusterDraft.topics`,
:func:`fact_operations`), so nothing below this layer sees a pydantic model. The input
payloads are plain frozen dataclasses: the prompt builders render them as text, and the
offline provider reads them directly, so it never has to parse prompt text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)

from vivy.memory import facts
from vivy.memory.facts import FactOperation, ProfileSection
from vivy.memory.notes import NoteContent, TopicCluster

__all__ = [
    "MAX_SUMMARY_CHARS",
    "AddFact",
    "ClusterDraft",
    "ClusterInput",
    "ConversationDraft",
    "DraftCluster",
    "FactView",
    "InvalidateFact",
    "KeepFact",
    "MemberFacts",
    "MemberOperations",
    "MergeFacts",
    "NoteDraft",
    "NoteInput",
    "NoteView",
    "ProfileInput",
    "ProfileOperation",
    "ProfileOperations",
    "TranscriptLine",
    "clip_summary",
    "decode_operations",
    "encode_operations",
    "fact_operations",
    "uncited",
]

_Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]
#: Longest note summary kept; a longer one is clipped (see :func:`clip_summary`).
MAX_SUMMARY_CHARS = 1200


def clip_summary(value: object) -> object:
    """A summary longer than :data:`MAX_SUMMARY_CHARS`, cut at its last sentence end, else word.

    A summary that runs long is still a good summary; refusing it made the note writer retry
    the same buffer for ever. The clipped text ends with "…" when it was cut inside a sentence.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if len(text) <= MAX_SUMMARY_CHARS:
        return text
    head = text[:MAX_SUMMARY_CHARS]
    sentence_end = max(head.rfind(mark) for mark in (". ", "! ", "? ", ".\n", "!\n", "?\n"))
    if sentence_end >= MAX_SUMMARY_CHARS // 2:
        return head[: sentence_end + 1]
    head = text[: MAX_SUMMARY_CHARS - 1]
    word_end = head.rfind(" ")
    if word_end >= MAX_SUMMARY_CHARS // 2:
        head = head[:word_end]
    return head.rstrip(" ,;:-") + "…"


#: A cluster's summary: bounded like a note's, but refused rather than clipped when too long.
_ClusterSummary = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SUMMARY_CHARS)
]
#: A note's summary, clipped to :data:`MAX_SUMMARY_CHARS`.
_Summary = Annotated[
    str,
    BeforeValidator(clip_summary),
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SUMMARY_CHARS),
]
_Term = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]
_Sentence = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=240)]
_FactText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
_Reason = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
_Evidence = Annotated[str, StringConstraints(strip_whitespace=True, max_length=300)]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class NoteDraft(BaseModel):
    """A conversation note as the LLM writes it."""

    model_config = _STRICT

    title: _Title
    summary: _Summary
    topics: list[_Term] = Field(default_factory=list, max_length=10)
    decisions: list[_Sentence] = Field(default_factory=list, max_length=10)
    open_questions: list[_Sentence] = Field(default_factory=list, max_length=10)
    entities: list[_Term] = Field(default_factory=list, max_length=10)

    def content(self) -> NoteContent:
        """The note's text as the domain record."""
        return NoteContent(
            title=self.title,
            summary=self.summary,
            topics=tuple(self.topics),
            decisions=tuple(self.decisions),
            open_questions=tuple(self.open_questions),
            entities=tuple(self.entities),
        )


class AddFact(BaseModel):
    """Add a new third-person fact to a profile section.

    ``note_id`` names the source note when the input held several notes (consolidation);
    ``evidence`` quotes the transcript words the fact rests on, for people reviewing the answer;
    the grounding guard checks the fact against the member's own lines, never against it.
    """

    model_config = _STRICT

    op: Literal["add"]
    section: ProfileSection
    text: _FactText
    note_id: int | None = None
    evidence: _Evidence = ""


class MergeFacts(BaseModel):
    """Replace one or more existing facts by a single richer fact (MERGE)."""

    model_config = _STRICT

    op: Literal["merge"]
    fact_ids: list[int] = Field(min_length=1, max_length=20)
    text: _FactText
    section: ProfileSection
    note_id: int | None = None


class InvalidateFact(BaseModel):
    """Retire an existing fact that newer information contradicts (INVALIDATE)."""

    model_config = _STRICT

    op: Literal["invalidate"]
    fact_id: int
    reason: _Reason = ""


class KeepFact(BaseModel):
    """Leave an existing fact as it is (KEEP); a no-op the model may state."""

    model_config = _STRICT

    op: Literal["keep"]
    fact_id: int


#: One operation on a profile, told apart by its ``op`` field.
ProfileOperation = Annotated[
    AddFact | MergeFacts | InvalidateFact | KeepFact, Field(discriminator="op")
]


class ProfileOperations(BaseModel):
    """The answer to a profile update or consolidation: operations, never a rewritten profile."""

    model_config = _STRICT

    operations: list[ProfileOperation] = Field(default_factory=list, max_length=40)


def fact_operations(operations: Sequence[ProfileOperation]) -> tuple[FactOperation, ...]:
    """The validated operations as the domain's records (an add's evidence quote is dropped:
    no guard reads it)."""
    found: list[FactOperation] = []
    for op in operations:
        if isinstance(op, AddFact):
            found.append(facts.AddFact(op.section, op.text, op.note_id))
        elif isinstance(op, MergeFacts):
            found.append(facts.MergeFacts(tuple(op.fact_ids), op.text, op.section, op.note_id))
        elif isinstance(op, InvalidateFact):
            found.append(facts.InvalidateFact(op.fact_id, op.reason))
        else:
            found.append(facts.KeepFact(op.fact_id))
    return tuple(found)


def encode_operations(operations: Sequence[ProfileOperation]) -> str:
    """The JSON a pending profile update stores its operations as, without evidence quotes.

    An add's evidence quotes the member's messages for people reviewing an answer; no guard
    reads it, and stored it would keep their words (and whoever they mention) past the note's
    source lines.
    """
    kept = [
        op.model_copy(update={"evidence": ""}) if isinstance(op, AddFact) else op
        for op in operations
    ]
    return ProfileOperations(operations=kept).model_dump_json()


def decode_operations(text: str | None) -> tuple[FactOperation, ...] | None:
    """Stored operations read back and validated again; None when there are none.

    A row that no longer validates (written under another schema) also reads as None: the
    update then gets a call of its own rather than blocking the member's queue.
    """
    if text is None:
        return None
    try:
        return fact_operations(ProfileOperations.model_validate_json(text).operations)
    except ValidationError:
        return None


def uncited(operations: Sequence[ProfileOperation]) -> list[ProfileOperation]:
    """``operations`` without note ids: a note call's operations rest on its own transcript.

    The note does not exist yet when the call is made, so any id the model names is not
    its note; without one, the planner cites the update's single note.
    """
    return [
        op.model_copy(update={"note_id": None}) if isinstance(op, AddFact | MergeFacts) else op
        for op in operations
    ]


class MemberOperations(BaseModel):
    """Operations on one participant's profile, proposed together with a conversation note."""

    model_config = _STRICT

    user_id: int
    operations: list[ProfileOperation] = Field(default_factory=list, max_length=40)


class ConversationDraft(NoteDraft):
    """A conversation note and, in the same answer, its participants' profile operations.

    ``profiles`` holds one entry per participant whose facts were sent with the transcript.
    A participant with no entry (or a model that answers with a bare note) is left to a
    separate profile-update call, so a short answer costs a call, never a lost update.
    """

    profiles: list[MemberOperations] = Field(default_factory=list, max_length=8)


class DraftCluster(BaseModel):
    """One daily topic cluster, citing the conversation notes it summarises."""

    model_config = _STRICT

    title: _Title
    summary: _ClusterSummary
    source_note_ids: list[int] = Field(min_length=1, max_length=100)


class ClusterDraft(BaseModel):
    """The answer to the midnight clustering pass: up to eight topic clusters."""

    model_config = _STRICT

    clusters: list[DraftCluster] = Field(default_factory=list, max_length=8)

    def topics(self) -> tuple[TopicCluster, ...]:
        """The clusters as the domain's records."""
        return tuple(
            TopicCluster(c.title, c.summary, tuple(c.source_note_ids)) for c in self.clusters
        )


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One human message of a conversation; ``at`` is UTC wall time in epoch seconds."""

    author_id: int
    author_name: str
    text: str
    at: float


@dataclass(frozen=True, slots=True)
class FactView:
    """An active profile fact as shown to the LLM; ``source`` describes its note."""

    id: int
    section: str
    text: str
    source: str


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """A participant whose profile operations the note call also returns, with their facts.

    ``facts`` are the ones their words could touch, most relevant first; ``total`` counts
    every active fact of the profile (0: as many as sent), and ``full`` says the profile is
    at its cap, where each added fact pushes an older one out.
    """

    user_id: int
    user_name: str
    facts: tuple[FactView, ...]
    total: int = 0
    full: bool = False


@dataclass(frozen=True, slots=True)
class NoteInput:
    """A closed channel buffer, ready to be written up as a conversation note.

    ``members`` are the participants whose profile operations the same call returns (empty:
    the note alone).
    """

    guild_id: int
    channel_id: int
    channel_name: str
    lines: tuple[TranscriptLine, ...]
    members: tuple[MemberFacts, ...] = ()


@dataclass(frozen=True, slots=True)
class NoteView:
    """A stored note as shown to the LLM, optionally with its transcript lines."""

    id: int
    title: str
    summary: str
    date: str
    participants: tuple[str, ...]
    lines: tuple[TranscriptLine, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileInput:
    """A user's current facts and the notes that may change them; ``full`` says the profile
    is at its cap, where each added fact pushes an older one out."""

    user_id: int
    user_name: str
    facts: tuple[FactView, ...]
    notes: tuple[NoteView, ...]
    full: bool = False


@dataclass(frozen=True, slots=True)
class ClusterInput:
    """A guild's conversation notes of one day, to be grouped into topic clusters."""

    guild_id: int
    date: str
    notes: tuple[NoteView, ...]
