"""Channel buffers: a buffered message, why a buffer closed, a buffer as stored, and what
carrying out a channel's storage effects did."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

__all__ = ["AppliedEffects", "BufferRow", "BufferedMessage", "CloseReason", "StoredBuffer"]


class CloseReason(StrEnum):
    """Why a buffer closed (also the ``reason`` label of the buffer-flush metric)."""

    INACTIVITY = "inactivity"
    MAX_AGE = "max_age"
    CAP = "cap"


class BufferedMessage(NamedTuple):
    """A human message as the buffer keeps it (text already normalised).

    A named tuple rather than a frozen dataclass: one is built for every message, and a
    tuple is built in C (a frozen dataclass sets each field through ``object.__setattr__``).
    """

    message_id: int
    author_id: int
    author_name: str
    text: str
    created_at: float
    reply_to: int | None = None
    mentions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BufferRow:
    """One row of ``channel_buffers``."""

    id: int
    guild_id: int
    channel_id: int
    channel_name: str
    status: str
    started_at: float
    last_message_at: float
    inactivity_s: float
    closed_at: float | None
    close_reason: str | None
    attempts: int
    next_attempt_at: float | None


@dataclass(frozen=True, slots=True)
class StoredBuffer:
    """A buffer with its messages in message-id order."""

    row: BufferRow
    messages: tuple[BufferedMessage, ...]


@dataclass(eq=False, slots=True)
class AppliedEffects:
    """What carrying out a channel's storage effects did."""

    #: The channel's open buffer afterwards, if any.
    buffer_id: int | None
    opened: int = 0
    #: The buffers closed, with their reasons, in order.
    closed: list[tuple[int, CloseReason]] = field(default_factory=list)
    #: By effect index: whether an edit or delete found its message.
    found: dict[int, bool] = field(default_factory=dict)
    #: Created message ids another buffer already held.
    taken: frozenset[int] = frozenset()
