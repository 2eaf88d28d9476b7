"""What goes into and comes out of the buffer machine (:mod:`vivy.state.buffer`).

Events are what the channel actor feeds :meth:`~vivy.state.buffer.ChannelBuffer.handle`;
effects are what it returns for the actor to carry out, in order. They are plain records that
decide nothing, kept apart from the machine as h11 keeps ``_events.py`` apart from
``_state.py``; :mod:`vivy.state.buffer` re-exports every name, so callers import them there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, TypeAlias

from vivy.memory.buffers import BufferedMessage, BufferRow, CloseReason

__all__ = [
    "AppendMessages",
    "BufferSnapshot",
    "CloseBuffer",
    "DeadlineReached",
    "DeleteMessage",
    "EditMessage",
    "Effect",
    "Event",
    "Ignore",
    "IgnoreReason",
    "Incoming",
    "MessageCreated",
    "MessageDeleted",
    "MessageEdited",
    "MessagesArrived",
    "OpenBuffer",
    "Restored",
]


class IgnoreReason(Enum):
    """Why an event changed nothing."""

    DUPLICATE = "duplicate"
    STALE_TIMER = "stale_timer"


@dataclass(frozen=True, slots=True)
class BufferSnapshot:
    """What the database knows of a channel's open buffer, for restoring it after a restart."""

    started_at: float
    last_message_at: float
    message_ids: frozenset[int]
    inactivity_s: float

    @classmethod
    def of(cls, row: BufferRow, message_ids: frozenset[int]) -> BufferSnapshot:
        """The snapshot of a stored open buffer holding ``message_ids``."""
        return cls(row.started_at, row.last_message_at, message_ids, row.inactivity_s)


# Events ---------------------------------------------------------------------------------


class MessageCreated(NamedTuple):
    """A human message was admitted for this channel (a named tuple: one per message).

    ``channel_name`` is the channel's name when it was sent (a new buffer stores it);
    ``truncated`` says that normalising cut the text, which its outcome reports.
    """

    message: BufferedMessage
    channel_name: str = ""
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class MessagesArrived:
    """Human messages were admitted for this channel: one or more, in arrival order."""

    messages: tuple[MessageCreated, ...]


@dataclass(frozen=True, slots=True)
class MessageEdited:
    """A message was edited; it may or may not be in this buffer."""

    message_id: int
    text: str


@dataclass(frozen=True, slots=True)
class MessageDeleted:
    """A message was deleted; it may or may not be in this buffer."""

    message_id: int


@dataclass(frozen=True, slots=True)
class DeadlineReached:
    """The timer armed for the deadline at UTC wall time ``at`` has rung."""

    at: float


@dataclass(frozen=True, slots=True)
class Restored:
    """After a restart: the channel's open buffer (None if it has none) and its watermark."""

    snapshot: BufferSnapshot | None
    watermark: int


Event: TypeAlias = MessagesArrived | MessageEdited | MessageDeleted | DeadlineReached | Restored

#: The event of one inbox item; consecutive creations reach the machine as one burst.
Incoming: TypeAlias = MessageCreated | MessageEdited | MessageDeleted

# Effects --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenBuffer:
    """Create the buffer's row for channel ``channel_name``, starting at ``started_at``."""

    started_at: float
    inactivity_s: float
    channel_name: str


@dataclass(frozen=True, slots=True)
class AppendMessages:
    """Store the messages as rows of the open buffer, received at UTC wall time ``at``."""

    messages: tuple[BufferedMessage, ...]
    at: float


@dataclass(frozen=True, slots=True)
class EditMessage:
    """Replace the text of a message wherever it is stored, and report whether it was found."""

    message_id: int
    text: str
    edited_at: float


@dataclass(frozen=True, slots=True)
class DeleteMessage:
    """Delete a message wherever it is stored, and report whether it was found."""

    message_id: int


@dataclass(frozen=True, slots=True)
class CloseBuffer:
    """Mark the open buffer closed (its outbox row) at ``closed_at``, then hand it off.

    The actor gives the buffer to the NoteWriter only once the closing is committed.
    """

    reason: CloseReason
    closed_at: float


@dataclass(frozen=True, slots=True)
class Ignore:
    """Nothing to do (for duplicates: the ids of the messages already stored)."""

    reason: IgnoreReason
    message_ids: tuple[int, ...] = ()


Effect: TypeAlias = OpenBuffer | AppendMessages | EditMessage | DeleteMessage | CloseBuffer | Ignore
