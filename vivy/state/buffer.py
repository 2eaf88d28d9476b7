"""The lifecycle of a channel's buffers, as a pure state machine.

Rules of this module (in the manner of h11's ``_state.py``):

* Everything that affects buffer states and transitions lives here: which messages a buffer
  takes and which are duplicates, when it closes, and how each inbox item is answered.
* :meth:`ChannelBuffer.handle` takes an event and the current UTC wall time and returns
  effects; it performs no I/O, reads no clock and logs nothing. The channel actor carries the
  effects out in order; :meth:`ChannelBuffer.plan` does the same for a batch of inbox items and
  :meth:`BatchPlan.outcomes` turns what storage found into each item's outcome.
* Transitions are the table :data:`TRANSITIONS`: each (state, :class:`Trigger`) pair has
  exactly one next state. A trigger is an input event refined by the guard it meets (as h11
  gives a switching response an event of its own), so the table decides, not a handler. A pair
  the table lacks raises :class:`~vivy.errors.IllegalTransition` naming both, and changes
  nothing.
* One machine serves one channel (or thread) for the life of its actor: EMPTY until the first
  message, OPEN while a buffer collects messages, CLOSED once it has closed; the next new
  message opens the next buffer. A closed buffer is an outbox row that the NoteWriter turns
  into a note and deletes; that part of its life belongs to the outbox, not to this machine.
* The events it takes and the effects it returns are plain records, defined apart in
  :mod:`vivy.state.buffer_events` (as h11 keeps ``_events.py`` apart from ``_state.py``) and
  re-exported here; nothing there decides anything.
* Messages arrive in bursts: one :class:`MessagesArrived` carries every message the actor took
  at once, in order, so a burst costs one append effect per buffer it reaches.
* A buffer closes on inactivity, on its maximum age (by the timer, or when a message arrives
  past it) or on its message cap. Its deadlines are part of the state
  (:attr:`ChannelBuffer.next_deadline`, derived from the persisted start and last-message
  times): the actor's timer reports one reached with :class:`DeadlineReached`, and only this
  module decides whether a deadline is due (a timer armed before messages moved the deadline
  is stale).
* A message id at or below the watermark, the newest id of the channel's closed buffers, is a
  duplicate: its buffer is closed already.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TypeAlias

from vivy.errors import IllegalTransition
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.state.buffer_events import (
    AppendMessages,
    BufferSnapshot,
    CloseBuffer,
    DeadlineReached,
    DeleteMessage,
    EditMessage,
    Effect,
    Event,
    Ignore,
    IgnoreReason,
    Incoming,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    MessagesArrived,
    OpenBuffer,
    Restored,
)
from vivy.state.gate import IngestOutcome

__all__ = [
    "TRANSITIONS",
    "AppendMessages",
    "BatchPlan",
    "BufferConfig",
    "BufferSnapshot",
    "BufferState",
    "BufferedMessage",
    "ChannelBuffer",
    "CloseBuffer",
    "CloseReason",
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
    "Trigger",
    "next_state",
    "state_diagram",
]


class BufferState(Enum):
    """Where a channel's current buffer is in its life."""

    #: No buffer yet; the first new message opens one.
    EMPTY = "empty"
    #: Collecting messages; the inactivity and max-age deadlines are armed.
    OPEN = "open"
    #: The buffer closed and is an outbox row for the NoteWriter; a new message opens the next.
    CLOSED = "closed"

    #: Members are singletons compared by identity, so they hash by identity too (in C);
    #: Enum's own ``__hash__`` is Python code, and the transition table is looked up per event.
    __hash__ = object.__hash__


class Trigger(Enum):
    """An event of the transition table: an input event refined by the guard it meets."""

    #: New messages while no buffer is open: a buffer opens for them.
    OPENED = "opened"
    #: New messages that leave the open buffer below its cap.
    APPENDED = "appended"
    #: New messages that fill the open buffer to its cap: it closes with the last one in it.
    FILLED = "filled"
    #: New messages past the open buffer's maximum age: it closes first, they open the next.
    LATE = "late"
    #: Messages that are all stored already.
    DUPLICATES = "duplicates"
    #: A message was edited, wherever it is stored.
    EDITED = "edited"
    #: A message was deleted, wherever it is stored.
    DELETED = "deleted"
    #: The timer reached the open buffer's next deadline: the buffer closes.
    DEADLINE_PASSED = "deadline_passed"
    #: The timer rang for a deadline that is no longer current (messages moved it, or the
    #: buffer it was armed for closed).
    STALE_DEADLINE = "stale_deadline"
    #: After a restart: the channel's open buffer was loaded from the database.
    RESTORED = "restored"
    #: After a restart: the channel has no open buffer (only its watermark).
    RESTORED_NONE = "restored_none"

    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """Limits of one buffer: its inactivity window, maximum age and message cap."""

    inactivity_s: float
    max_age_s: float = 2 * 3600.0
    cap: int = 100


S = BufferState
T = Trigger

#: The transitions: state -> trigger -> the one next state. A pair not listed is illegal.
TRANSITIONS: Mapping[BufferState, Mapping[Trigger, BufferState]] = {
    S.EMPTY: {
        T.OPENED: S.OPEN,
        T.DUPLICATES: S.EMPTY,
        T.EDITED: S.EMPTY,
        T.DELETED: S.EMPTY,
        T.STALE_DEADLINE: S.EMPTY,
        T.RESTORED: S.OPEN,
        T.RESTORED_NONE: S.EMPTY,
    },
    S.OPEN: {
        T.APPENDED: S.OPEN,
        T.FILLED: S.CLOSED,
        T.LATE: S.CLOSED,
        T.DUPLICATES: S.OPEN,
        T.EDITED: S.OPEN,
        T.DELETED: S.OPEN,
        T.DEADLINE_PASSED: S.CLOSED,
        T.STALE_DEADLINE: S.OPEN,
    },
    S.CLOSED: {
        T.OPENED: S.OPEN,
        T.DUPLICATES: S.CLOSED,
        T.EDITED: S.CLOSED,
        T.DELETED: S.CLOSED,
        T.STALE_DEADLINE: S.CLOSED,
    },
}


def next_state(state: BufferState, trigger: Trigger) -> BufferState:
    """The table's next state for ``trigger`` in ``state``; raises if the pair is illegal."""
    target = TRANSITIONS[state].get(trigger)
    if target is None:
        raise IllegalTransition("ChannelBuffer", state.name, trigger.name)
    return target


#: An inbox item's answer before storage has spoken: its outcome, the index of the edit or
#: delete effect whose result decides it (or -1), and the id of the message it stored.
_Answer: TypeAlias = tuple[IngestOutcome, int, int | None]


@dataclass(eq=False, slots=True)
class BatchPlan:
    """The effects of one inbox batch, in order, and how each of its items is answered."""

    effects: list[Effect] = field(default_factory=list)
    answers: list[_Answer] = field(default_factory=list)
    #: Whether some answer waits for storage: an edit or delete, whose message may be gone.
    lookups: bool = False

    def outcomes(self, found: Mapping[int, bool], taken: frozenset[int]) -> list[IngestOutcome]:
        """Each item's outcome, in order, once the effects are committed.

        ``found`` says, by effect index, whether an edit or delete found its message;
        ``taken`` holds the created ids that another buffer already held (a replay).
        """
        if not taken and not self.lookups:  # the common case: as planned
            return [answer[0] for answer in self.answers]
        outcomes: list[IngestOutcome] = []
        for outcome, index, message_id in self.answers:
            if message_id is not None and message_id in taken:
                outcome = IngestOutcome.DUPLICATE
            elif index >= 0 and not found.get(index):
                outcome = (
                    IngestOutcome.UNKNOWN_EDIT
                    if outcome is IngestOutcome.EDITED
                    else IngestOutcome.UNKNOWN_DELETE
                )
            outcomes.append(outcome)
        return outcomes


class ChannelBuffer:
    """The buffers of one channel (or thread): the current one's state, and the watermark.

    ``window`` gives a new buffer its inactivity window from its first message id (Vivy draws
    it per buffer); without it every buffer has ``config.inactivity_s``.
    """

    def __init__(self, config: BufferConfig, window: Callable[[int], float] | None = None) -> None:
        self.config = config
        self._window = window
        self.state = BufferState.EMPTY
        self.started_at = 0.0
        self.last_message_at = 0.0
        #: Ids of the current buffer's messages; grown in place, since a buffer takes up to
        #: ``cap``. After a close they are the closed buffer's, until the next one opens.
        self.message_ids: set[int] = set()
        #: The newest message id of the channel's closed buffers.
        self.watermark = 0

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
        """The earlier of the two deadlines while OPEN, else None (no timer is needed)."""
        if self.state is not BufferState.OPEN:
            return None
        return min(self.inactivity_deadline, self.max_age_deadline)

    def handle(self, event: Event, now: float) -> list[Effect]:
        """Apply ``event`` at UTC wall time ``now`` and return the effects to carry out.

        Every step looks its trigger up in the table before it changes anything, so an
        illegal event raises and leaves the machine as it was.
        """
        effects: list[Effect] = []
        _HANDLERS[type(event)](self, event, now, effects)
        return effects

    def plan(self, batch: Sequence[Incoming], now: float) -> BatchPlan:
        """Plan a batch of inbox items taken together: their effects and their answers.

        Consecutive creations go to the machine as one burst; each edit and delete is an event
        of its own, in the order the items came.
        """
        plan = BatchPlan()
        burst: list[MessageCreated] = []
        for item in batch:
            if type(item) is MessageCreated:
                burst.append(item)
                continue
            if burst:
                self._plan_burst(burst, now, plan)
                burst = []
            before = len(plan.effects)
            plan.lookups = True
            if type(item) is MessageEdited:
                self._on_edited(item, now, plan.effects)
                plan.answers.append((IngestOutcome.EDITED, before, None))
            else:
                assert type(item) is MessageDeleted
                self._on_deleted(item, now, plan.effects)
                plan.answers.append((IngestOutcome.DELETED, before, None))
        if burst:
            self._plan_burst(burst, now, plan)
        return plan

    # Planning a burst ---------------------------------------------------------------------

    def _plan_burst(self, burst: list[MessageCreated], now: float, plan: BatchPlan) -> None:
        """Plan a burst and answer each of its items: stored (or truncated), or duplicate.

        Only a burst with a duplicate in it needs to match ids: a redelivered id is a
        duplicate however often it comes, and an id twice in one burst is stored once.
        """
        start = len(plan.effects)
        self._on_arrived(MessagesArrived(tuple(burst)), now, plan.effects)
        answers = plan.answers
        last = plan.effects[-1]  # a burst's Ignore of duplicates comes last
        if not (isinstance(last, Ignore) and last.reason is IgnoreReason.DUPLICATE):
            plain, cut = IngestOutcome.STORED, IngestOutcome.TRUNCATED
            answers += [
                (cut if created.truncated else plain, -1, created.message.message_id)
                for created in burst
            ]
            return
        stored = {
            m.message_id
            for effect in plan.effects[start:]
            if isinstance(effect, AppendMessages)
            for m in effect.messages
        }
        for created in burst:
            message_id = created.message.message_id
            if message_id in stored:
                stored.discard(message_id)
                outcome = IngestOutcome.TRUNCATED if created.truncated else IngestOutcome.STORED
                answers.append((outcome, -1, message_id))
            else:
                answers.append((IngestOutcome.DUPLICATE, -1, None))

    # Handlers. Every step moves through the table; an event's first step, the one that can be
    # illegal, does so before any data changes (later steps of a burst are legal by design).

    def _enter(self, trigger: Trigger) -> None:
        self.state = next_state(self.state, trigger)

    def _on_arrived(self, event: MessagesArrived, now: float, effects: list[Effect]) -> None:
        """Take a burst: open, fill and close as many buffers as it reaches, in order."""
        pending: Sequence[MessageCreated] = event.messages
        if not pending:
            raise ValueError("MessagesArrived needs at least one message")
        duplicates: list[int] = []
        stepped = False
        while pending:
            mark = self.watermark
            fresh = [c for c in pending if c.message.message_id > mark]
            if len(fresh) < len(pending):  # their buffer closed already
                duplicates += [
                    c.message.message_id for c in pending if c.message.message_id <= mark
                ]
            pending = ()
            if not fresh:
                break
            stepped = True
            if self.state is not BufferState.OPEN:
                self._open(fresh[0], now, effects)
            elif now >= self.max_age_deadline:
                ids = self.message_ids
                late = [c for c in fresh if c.message.message_id not in ids]
                if late:  # close first; the new messages open the next buffer
                    duplicates += [
                        c.message.message_id for c in fresh if c.message.message_id in ids
                    ]
                    self._close(Trigger.LATE, CloseReason.MAX_AGE, now, effects)
                    pending = late
                    continue
            pending = self._append(fresh, now, effects, duplicates)
        if not stepped:
            self._enter(Trigger.DUPLICATES)
        if duplicates:
            effects.append(Ignore(IgnoreReason.DUPLICATE, tuple(duplicates)))

    def _open(self, first: MessageCreated, now: float, effects: list[Effect]) -> None:
        self._enter(Trigger.OPENED)
        if self._window is not None:
            window = self._window(first.message.message_id)
            if window != self.config.inactivity_s:
                self.config = replace(self.config, inactivity_s=window)
        self.started_at = self.last_message_at = now
        self.message_ids = set()
        effects.append(OpenBuffer(now, self.config.inactivity_s, first.channel_name))

    def _append(
        self,
        fresh: list[MessageCreated],
        now: float,
        effects: list[Effect],
        duplicates: list[int],
    ) -> list[MessageCreated]:
        """Append to the open buffer up to its cap; returns the messages past the cap."""
        cap = self.config.cap
        ids = self.message_ids
        appended: list[BufferedMessage] = []
        rest: list[MessageCreated] = []
        for index, created in enumerate(fresh):
            message = created.message
            if message.message_id in ids:
                duplicates.append(message.message_id)
                continue
            ids.add(message.message_id)
            appended.append(message)
            if len(ids) >= cap:
                rest = fresh[index + 1 :]
                break
        if not appended:
            self._enter(Trigger.DUPLICATES)
            return rest
        if len(ids) < cap:
            self._enter(Trigger.APPENDED)
            self.last_message_at = now
            effects.append(AppendMessages(tuple(appended), now))
            return rest
        self.last_message_at = now
        effects.append(AppendMessages(tuple(appended), now))
        self._close(Trigger.FILLED, CloseReason.CAP, now, effects)
        return rest

    def _close(
        self, trigger: Trigger, reason: CloseReason, now: float, effects: list[Effect]
    ) -> None:
        self._enter(trigger)
        self.watermark = max(self.watermark, max(self.message_ids, default=0))
        effects.append(CloseBuffer(reason, closed_at=now))

    def _on_edited(self, event: MessageEdited, now: float, effects: list[Effect]) -> None:
        self._enter(Trigger.EDITED)
        effects.append(EditMessage(event.message_id, event.text, edited_at=now))

    def _on_deleted(self, event: MessageDeleted, now: float, effects: list[Effect]) -> None:
        self._enter(Trigger.DELETED)
        self.message_ids.discard(event.message_id)
        effects.append(DeleteMessage(event.message_id))

    def _on_deadline(self, event: DeadlineReached, now: float, effects: list[Effect]) -> None:
        # The timer rang because ``event.at`` was reached; never let the wall time the actor
        # read after it (mapped from monotonic time, with float rounding) make it look early.
        at = max(now, event.at)
        reason = self._due(at) if self.state is BufferState.OPEN else None
        if reason is None:
            self._enter(Trigger.STALE_DEADLINE)
            effects.append(Ignore(IgnoreReason.STALE_TIMER))
            return
        self._close(Trigger.DEADLINE_PASSED, reason, at, effects)

    def _on_restored(self, event: Restored, now: float, effects: list[Effect]) -> None:
        snap = event.snapshot
        if snap is None:
            self._enter(Trigger.RESTORED_NONE)
            self.watermark = event.watermark
            return
        self._enter(Trigger.RESTORED)
        self.watermark = event.watermark
        self.config = replace(self.config, inactivity_s=snap.inactivity_s)
        self.started_at = snap.started_at
        self.last_message_at = snap.last_message_at
        self.message_ids = set(snap.message_ids)
        reason = self._due(now)  # a deadline that passed while Vivy was down
        if reason is not None:
            self._close(Trigger.DEADLINE_PASSED, reason, now, effects)

    def _due(self, now: float) -> CloseReason | None:
        """The reason of the earliest deadline if ``now`` has reached it, else None.

        This is the one place that decides whether a deadline is due.
        """
        inactivity, max_age = self.inactivity_deadline, self.max_age_deadline
        if now < min(inactivity, max_age):
            return None
        return CloseReason.INACTIVITY if inactivity <= max_age else CloseReason.MAX_AGE


_HANDLERS: Mapping[type, Callable[..., None]] = {
    MessagesArrived: ChannelBuffer._on_arrived,
    MessageEdited: ChannelBuffer._on_edited,
    MessageDeleted: ChannelBuffer._on_deleted,
    DeadlineReached: ChannelBuffer._on_deadline,
    Restored: ChannelBuffer._on_restored,
}


def state_diagram() -> str:
    """A Mermaid state diagram generated from :data:`TRANSITIONS`, so docs cannot drift."""
    lines = ["stateDiagram-v2", f"    [*] --> {S.EMPTY.name}"]
    for source, by_trigger in TRANSITIONS.items():
        for trigger, target in by_trigger.items():
            lines.append(f"    {source.name} --> {target.name}: {trigger.name}")
    return "\n".join(lines)
