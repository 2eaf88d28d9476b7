"""Notes: the kinds of note, a note as stored and as written, its participants, and the
content the note model writes (also the shape of a nightly topic cluster)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from vivy.memory.evidence import EvidenceWindow

__all__ = [
    "NewNote",
    "Note",
    "NoteContent",
    "NoteText",
    "NoteType",
    "Participant",
    "PlannedUpdate",
    "TopicCluster",
]


class NoteType(StrEnum):
    """Kind of note (column ``note_type``, label ``type``)."""

    #: A note for one closed channel buffer.
    CONVERSATION = "conversation"
    #: A nightly topic-cluster note.
    TOPIC_CLUSTER = "topic_cluster"


@dataclass(frozen=True, slots=True)
class Participant:
    """A human participant of a note."""

    user_id: int
    display_name: str
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class PlannedUpdate:
    """A participant's profile operations from the note call, as stored JSON.

    ``basis_version`` is the profile version the operations were computed against.
    """

    operations: str
    basis_version: int


@dataclass(frozen=True, slots=True)
class NewNote:
    """A note ready to be stored (either type)."""

    guild_id: int
    channel_id: int
    channel_name: str
    note_type: str
    title: str
    summary: str
    topics: tuple[str, ...]
    decisions: tuple[str, ...]
    open_questions: tuple[str, ...]
    entities: tuple[str, ...]
    participants: tuple[Participant, ...]
    note_date: str
    quality: str
    model: str
    embedding: Sequence[float]
    created_at: float
    started_at: float | None = None
    ended_at: float | None = None
    source_note_ids: tuple[int, ...] | None = None
    #: Evidence windows of a conversation note and their embeddings (same order); none
    #: when evidence is switched off.
    windows: tuple[EvidenceWindow, ...] = ()
    window_embeddings: tuple[Sequence[float], ...] = ()


@dataclass(frozen=True, slots=True)
class Note:
    """A stored note."""

    id: int
    guild_id: int
    channel_id: int
    channel_name: str
    note_type: str
    title: str
    summary: str
    topics: tuple[str, ...]
    decisions: tuple[str, ...]
    open_questions: tuple[str, ...]
    entities: tuple[str, ...]
    participants: tuple[Participant, ...]
    source_note_ids: tuple[int, ...]
    note_date: str
    started_at: float | None
    ended_at: float | None
    quality: str
    created_at: float


@dataclass(frozen=True, slots=True)
class NoteText:
    """What a note's embedding text is computed from."""

    id: int
    note_type: str
    channel_name: str
    note_date: str
    participants: tuple[str, ...]
    topics: tuple[str, ...]
    title: str
    summary: str


@dataclass(frozen=True, slots=True)
class NoteContent:
    """What a conversation note says, as the note model wrote it (after the guards)."""

    title: str
    summary: str
    topics: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicCluster:
    """A daily topic cluster: its title, summary and the conversation notes it summarises."""

    title: str
    summary: str
    source_note_ids: tuple[int, ...]
