"""The lifecycle of one channel buffer, as a pure state machine.

Rules of this module (in the manner of h11's ``_state.py``):

* Everything that affects buffer states and transitions lives here.
* :meth:`ChannelBuffer.handle` takes an event and the current UTC wall time and returns
  effects; it performs no I/O, reads no clock and logs nothing. The caller (the channel actor
  or the NoteWriter) carries out the effects in order.
* Legal transitions are the table :data:`TRANSITIONS`. An event the table does not allow in
  the current state raises :class:`~vivy.errors.IllegalTransition` naming both, and leaves the
  machine unchanged.
* Messages arrive in bursts: one :class:`MessagesArrived` event carries every message the
  actor took at once, in order, so a burst costs one transition and one append effect.
* A buffer opens with its first message, closes on inactivity, on its maximum age (checked by a
  timer and on arrival) or on its message cap, is handed to the NoteWriter through a durable
  outbox row, and ends when its note is committed. A failed note puts it back to CLOSED so it
  is handed off again.
* The two deadlines are part of the state (:attr:`ChannelBuffer.next_deadline`, derived from
  the persisted start and last-message times): the actor waits until the next one and then
  reports it reached, so arming a timer needs no effect. A deadline event that arrives after a
  message has moved the deadline is ignored as stale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import NamedTuple, TypeAlias

from vivy.errors import IllegalTransition

__all__ = [
    "TRANSITIONS",
    "AppendMessages",
    "BufferConfig",
    "BufferSnapshot",
    "BufferState",
    "BufferedMessage",
    "ChannelBuffer",
    "CloseBuffer",
    "CloseReason",
    "Effect",
    "Event",
    "HandOff",
    "HandedOff",
    "Ignore",
    "IgnoreReason",
    "InactivityDeadlineReached",
    "MaxAgeDeadlineReached",
    "MessageDeleted",
    "MessageEdited",
    "MessagesArrived",
    "NoteCommitted",
    "NoteFailed",
    "OpenBuffer",
    "RemoveMessage",
    "RemoveStoredMessage",
    "Restored",
    "StartNextBuffer",
    "UpdateMessage",
    "UpdateStoredMessage",
    "state_diagram",
]


class BufferState(Enum):
    """Where a buffer is in its life."""

    #: No message yet; the first message opens the buffer.
    EMPTY = "empty"
    #: Collecting messages; inactivity and max-age deadlines are armed.
    OPEN = "open"
    #: Closed and persisted as an outbox row, not yet with the NoteWriter.
    CLOSED = "closed"
    #: The NoteWriter is writing its note.
    HANDED_OFF = "handed_off"
    #: Its note is committed and its messages deleted; terminal.
    NOTED = "noted"

    #: Members are singletons compared by identity, so they hash by identity too (in C);
    #: Enum's own ``__hash__`` is Python code, and the transition table is looked up per event.
    __hash__ = object.__hash__


class CloseReason(Enum):
    """Why a buffer closed."""

    INACTIVITY = "inactivity"
    MAX_AGE = "max_age"
    CAP = "cap"


class IgnoreReason(Enum):
    """Why an event changed nothing."""

    DUPLICATE = "duplicate"
    STALE_TIMER = "stale_timer"


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """Limits of one buffer: its inactivity window, maximum age and message cap."""

    inactivity_s: float
    max_age_s: float = 2 * 3600.0
    cap: int = 100


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
class BufferSnapshot:
    """What the database knows of a buffer, for restoring it after a restart."""

    closed: bool
    started_at: float
    last_message_at: float
    message_ids: frozenset[int]
    inactivity_s: float


# Events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessagesArrived:
    """Human messages were admitted for this channel: one or more, in arrival order."""

    messages: tuple[BufferedMessage, ...]


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
class InactivityDeadlineReached:
    """The inactivity timer the machine armed has fired."""


@dataclass(frozen=True, slots=True)
class MaxAgeDeadlineReached:
    """The max-age timer the machine armed has fired."""


@dataclass(frozen=True, slots=True)
class Restored:
    """The buffer was loaded from the database after a restart."""

    snapshot: BufferSnapshot


@dataclass(frozen=True, slots=True)
class HandedOff:
    """The closed buffer is now with the NoteWriter."""


@dataclass(frozen=True, slots=True)
class NoteCommitted:
    """The buffer's note, participants and profile-update rows are committed."""

    note_id: int | None


@dataclass(frozen=True, slots=True)
class NoteFailed:
    """Writing the note failed; the buffer stays pending and is handed off again later."""

    error: str


Event: TypeAlias = (
    MessagesArrived
    | MessageEdited
    | MessageDeleted
    | InactivityDeadlineReached
    | MaxAgeDeadlineReached
    | Restored
    | HandedOff
    | NoteCommitted
    | NoteFailed
)

# Effects --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenBuffer:
    """Create the buffer's row, starting at ``started_at``."""

    started_at: float
    inactivity_s: float


@dataclass(frozen=True, slots=True)
class AppendMessages:
    """Store the messages as rows of this buffer, received at UTC wall time ``at``."""

    messages: tuple[BufferedMessage, ...]
    at: float


@dataclass(frozen=True, slots=True)
class UpdateMessage:
    """Replace the text of a message of this buffer."""

    message_id: int
    text: str
    edited_at: float


@dataclass(frozen=True, slots=True)
class RemoveMessage:
    """Delete a message of this buffer."""

    message_id: int


@dataclass(frozen=True, slots=True)
class UpdateStoredMessage:
    """The edited message is not in this buffer: edit it wherever it is stored, if anywhere."""

    message_id: int
    text: str
    edited_at: float


@dataclass(frozen=True, slots=True)
class RemoveStoredMessage:
    """The deleted message is not in this buffer: delete it wherever it is stored, if anywhere."""

    message_id: int


@dataclass(frozen=True, slots=True)
class CloseBuffer:
    """Mark the buffer closed (the outbox row) at ``closed_at``."""

    reason: CloseReason
    closed_at: float


@dataclass(frozen=True, slots=True)
class HandOff:
    """Give the closed buffer to the NoteWriter, then report :class:`HandedOff`."""


@dataclass(frozen=True, slots=True)
class StartNextBuffer:
    """Feed ``messages`` to a fresh buffer of the same channel.

    They arrived past the max age, or after the message that filled the buffer to its cap.
    """

    messages: tuple[BufferedMessage, ...]


@dataclass(frozen=True, slots=True)
class Ignore:
    """Nothing to do (for a duplicate: the ids of the messages already buffered)."""

    reason: IgnoreReason
    message_ids: tuple[int, ...] = ()


Effect: TypeAlias = (
    OpenBuffer
    | AppendMessages
    | UpdateMessage
    | RemoveMessage
    | UpdateStoredMessage
    | RemoveStoredMessage
    | CloseBuffer
    | HandOff
    | StartNextBuffer
    | Ignore
)

S = BufferState

#: Legal transitions: state -> event type -> the states the event may lead to.
TRANSITIONS: Mapping[BufferState, Mapping[type, frozenset[BufferState]]] = {
    S.EMPTY: {
        MessagesArrived: frozenset({S.OPEN, S.CLOSED}),
        MessageEdited: frozenset({S.EMPTY}),
        MessageDeleted: frozenset({S.EMPTY}),
        Restored: frozenset({S.OPEN, S.CLOSED}),
    },
    S.OPEN: {
        MessagesArrived: frozenset({S.OPEN, S.CLOSED}),
        MessageEdited: frozenset({S.OPEN}),
        MessageDeleted: frozenset({S.OPEN}),
        InactivityDeadlineReached: frozenset({S.OPEN, S.CLOSED}),
        MaxAgeDeadlineReached: frozenset({S.OPEN, S.CLOSED}),
    },
    S.CLOSED: {
        HandedOff: frozenset({S.HANDED_OFF}),
    },
    S.HANDED_OFF: {
        NoteCommitted: frozenset({S.NOTED}),
        NoteFailed: frozenset({S.CLOSED}),
    },
    S.NOTED: {},
}

_Outcome: TypeAlias = tuple[BufferState, list[Effect]]


class ChannelBuffer:
    """One buffer of one channel (or thread): its state and the data its rules need."""

    def __init__(self, config: BufferConfig) -> None:
        self.config = config
        self.state = BufferState.EMPTY
        self.started_at = 0.0
        self.last_message_at = 0.0
        #: Ids of the buffered messages; grown in place, since a buffer takes up to ``cap``.
        self.message_ids: set[int] = set()

    @property
    def inactivity_deadline(self) -> float:
        """UTC wall time at which the buffer closes if no message arrives."""
        return self.last_message_at + self.config.inactivity_s

    @property
    def max_age_deadline(self) -> float:
        """UTC wall time at which the buffer closes however busy it is."""
        return self.started_at + self.config.max_age_s

    @property
    def next_deadline(self) -> float | None:
        """The earlier of the two deadlines while OPEN, else None."""
        if self.state is not BufferState.OPEN:
            return None
        return min(self.inactivity_deadline, self.max_age_deadline)

    def handle(self, event: Event, now: float) -> list[Effect]:
        """Apply ``event`` at UTC wall time ``now`` and return the effects to carry out.

        The table is checked before any handler runs, so an illegal event changes nothing.
        A handler returning a target the table does not allow is a bug: it raises too.
        """
        allowed = TRANSITIONS[self.state].get(type(event))
        if allowed is None:
            raise IllegalTransition("ChannelBuffer", self.state.name, type(event).__name__)
        target, effects = _HANDLERS[type(event)](self, event, now)
        if target not in allowed:
            raise IllegalTransition("ChannelBuffer", self.state.name, type(event).__name__)
        self.state = target
        return effects

    # Handlers (each returns the target state; the table checks it) -------------------------

    def _on_arrived(self, event: MessagesArrived, now: float) -> _Outcome:
        messages = event.messages
        if not messages:
            raise ValueError("MessagesArrived needs at least one message")
        effects: list[Effect] = []
        ids = self.message_ids
        if self.state is BufferState.EMPTY:
            self.started_at = now
            ids = self.message_ids = set()
            effects.append(OpenBuffer(started_at=now, inactivity_s=self.config.inactivity_s))
        elif now >= self.max_age_deadline:
            fresh = tuple(m for m in messages if m.message_id not in ids)
            if fresh:  # close first; the new messages open the next buffer
                effects = [
                    CloseBuffer(CloseReason.MAX_AGE, closed_at=now),
                    HandOff(),
                    StartNextBuffer(fresh),
                ]
                if len(fresh) < len(messages):
                    duplicates = tuple(m.message_id for m in messages if m.message_id in ids)
                    effects.append(Ignore(IgnoreReason.DUPLICATE, duplicates))
                return S.CLOSED, effects
        cap = self.config.cap
        appended: list[BufferedMessage] = []
        duplicates_seen: list[int] = []
        rest: tuple[BufferedMessage, ...] = ()
        for index, message in enumerate(messages):
            if message.message_id in ids:
                duplicates_seen.append(message.message_id)
                continue
            ids.add(message.message_id)
            appended.append(message)
            if len(ids) >= cap:
                rest = messages[index + 1 :]
                break
        if appended:
            self.last_message_at = now
            effects.append(AppendMessages(tuple(appended), now))
        if duplicates_seen:
            effects.append(Ignore(IgnoreReason.DUPLICATE, tuple(duplicates_seen)))
        if len(ids) < cap:
            return S.OPEN, effects
        effects += [CloseBuffer(CloseReason.CAP, closed_at=now), HandOff()]
        if rest:
            effects.append(StartNextBuffer(rest))
        return S.CLOSED, effects

    def _on_edited(self, event: MessageEdited, now: float) -> _Outcome:
        if event.message_id in self.message_ids:
            return self.state, [UpdateMessage(event.message_id, event.text, edited_at=now)]
        return self.state, [UpdateStoredMessage(event.message_id, event.text, edited_at=now)]

    def _on_deleted(self, event: MessageDeleted, now: float) -> _Outcome:
        if event.message_id in self.message_ids:
            self.message_ids.discard(event.message_id)
            return self.state, [RemoveMessage(event.message_id)]
        return self.state, [RemoveStoredMessage(event.message_id)]

    def _on_deadline(
        self, event: InactivityDeadlineReached | MaxAgeDeadlineReached, now: float
    ) -> _Outcome:
        reason = self._due(now)
        if reason is None:
            return S.OPEN, [Ignore(IgnoreReason.STALE_TIMER)]
        return S.CLOSED, [CloseBuffer(reason, closed_at=now), HandOff()]

    def _on_restored(self, event: Restored, now: float) -> _Outcome:
        snap = event.snapshot
        self.config = replace(self.config, inactivity_s=snap.inactivity_s)
        self.started_at = snap.started_at
        self.last_message_at = snap.last_message_at
        self.message_ids = set(snap.message_ids)
        if snap.closed:
            return S.CLOSED, [HandOff()]
        reason = self._due(now)
        if reason is not None:
            return S.CLOSED, [CloseBuffer(reason, closed_at=now), HandOff()]
        return S.OPEN, []

    def _on_handed_off(self, event: HandedOff, now: float) -> _Outcome:
        return S.HANDED_OFF, []

    def _on_note_committed(self, event: NoteCommitted, now: float) -> _Outcome:
        self.message_ids = set()
        return S.NOTED, []

    def _on_note_failed(self, event: NoteFailed, now: float) -> _Outcome:
        return S.CLOSED, []

    def _due(self, now: float) -> CloseReason | None:
        """The reason of the earliest deadline that ``now`` has reached, if any."""
        due = [
            (deadline, reason)
            for deadline, reason in (
                (self.inactivity_deadline, CloseReason.INACTIVITY),
                (self.max_age_deadline, CloseReason.MAX_AGE),
            )
            if now >= deadline
        ]
        return min(due, key=lambda pair: pair[0])[1] if due else None


_HANDLERS: Mapping[type, Callable[..., _Outcome]] = {
    MessagesArrived: ChannelBuffer._on_arrived,
    MessageEdited: ChannelBuffer._on_edited,
    MessageDeleted: ChannelBuffer._on_deleted,
    InactivityDeadlineReached: ChannelBuffer._on_deadline,
    MaxAgeDeadlineReached: ChannelBuffer._on_deadline,
    Restored: ChannelBuffer._on_restored,
    HandedOff: ChannelBuffer._on_handed_off,
    NoteCommitted: ChannelBuffer._on_note_committed,
    NoteFailed: ChannelBuffer._on_note_failed,
}


def state_diagram() -> str:
    """A Mermaid state diagram generated from :data:`TRANSITIONS`, so docs cannot drift."""
    lines = ["stateDiagram-v2", f"    [*] --> {S.EMPTY.name}"]
    for source, by_event in TRANSITIONS.items():
        for event_type, targets in by_event.items():
            for target in sorted(targets, key=lambda state: state.value):
                lines.append(f"    {source.name} --> {target.name}: {event_type.__name__}")
    lines.append(f"    {S.NOTED.name} --> [*]")
    return "\n".join(lines)
