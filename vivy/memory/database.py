"""Facts about a database itself: its unfinished pipeline work, the embedding model its
vectors were made with, and the shard leases of a fleet sharing it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EmbeddingModel", "EmbeddingState", "GuildCounts", "LeaseHolder", "OutboxState"]


@dataclass(frozen=True, slots=True)
class OutboxState:
    """Unfinished pipeline work: open buffers, closed buffers and pending profile updates.

    The closed buffers and pending updates map their id to the attempts made so far, so a
    caller can tell work that keeps failing from work that has not been tried yet.
    """

    open_buffers: int
    closed_buffers: dict[int, int]
    pending_updates: dict[int, int]

    @property
    def empty(self) -> bool:
        """Whether nothing is left to do."""
        return not (self.open_buffers or self.closed_buffers or self.pending_updates)


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """The embedding model recorded in the database, as stored (the dimension may be missing)."""

    model: str
    dimension: str | None


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """A shard's lease as stored."""

    shard_id: int
    shard_count: int
    owner: str
    epoch: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class EmbeddingState:
    """The recorded embedding model against the stored note vectors (``vivy db check``)."""

    #: As recorded in the database's meta (None before the first note).
    model: str | None
    dimension: str | None
    notes: int
    vectors: int
    #: The length the note-vector index was created with, or None when it is missing.
    vector_dimension: int | None
    #: Whether an interrupted ``vivy reembed`` left staged vectors.
    reembed_staged: bool


@dataclass(frozen=True, slots=True)
class GuildCounts:
    """What a database remembers of one guild, in counts (``vivy guilds``): its notes, its
    members, and the messages its conversation notes were written from or its buffers hold."""

    guild_id: int
    notes: int
    members: int
    messages: int
