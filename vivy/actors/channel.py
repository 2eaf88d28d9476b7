"""The ChannelBuffer actor: one long-lived task per active channel or thread.

It owns its channel's :class:`~vivy.state.buffer.ChannelBuffer` machine, feeds it the events
of its mailbox and of its timer, and carries out the effects: every batch of messages is
committed to SQLite before any of them is acknowledged; a closed buffer is handed to the
NoteWriter only after its outbox row is committed. The timer is the machine's next deadline:
the actor arms it with the router, which rings the actor's mailbox once the monotonic clock
reaches it (so trio's MockClock drives it in tests), and the actor then checks it against the
machine, since messages may have moved it since. When its buffer has been handed off and its
mailbox is empty, the actor asks the router to retire it and exits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TypeAlias

import anyio
import structlog

from vivy.actors.mailbox import Mailbox
from vivy.clock import Clock
from vivy.config import BufferSettings, inactivity_window
from vivy.state.buffer import (
    AppendMessages,
    BufferConfig,
    BufferedMessage,
    BufferState,
    ChannelBuffer,
    CloseBuffer,
    Effect,
    Event,
    HandedOff,
    HandOff,
    Ignore,
    InactivityDeadlineReached,
    MaxAgeDeadlineReached,
    MessageDeleted,
    MessageEdited,
    MessagesArrived,
    OpenBuffer,
    RemoveMessage,
    RemoveStoredMessage,
    Restored,
    StartNextBuffer,
    UpdateMessage,
    UpdateStoredMessage,
)
from vivy.state.gate import IngestOutcome
from vivy.storage import buffers as store
from vivy.storage.db import Connection, Database

__all__ = ["Ack", "ChannelActor", "ChannelKey", "Create", "Delete", "Edit", "HandOffTarget"]

log = structlog.get_logger(__name__)

#: Most inbox items one batch (one transaction) takes.
MAX_BATCH = 256


class HandOffTarget(Protocol):
    """Where closed buffers go: the NoteWriter. Must not block; the outbox row is the truth."""

    def hand_off(self, buffer_id: int) -> None:
        """Take the closed buffer ``buffer_id`` (already committed as an outbox row)."""


class BufferObserver(Protocol):
    """What the actor reports for metrics."""

    def ingested(self, outcome: IngestOutcome, count: int = 1) -> None:
        """``count`` create, edit or delete events ended with ``outcome``.

        Actors report once per outcome per batch: a labelled Prometheus child costs about as
        much to look up and increment as storing a message's row.
        """

    def buffer_opened(self) -> None:
        """A buffer opened."""

    def buffer_closed(self, reason: str) -> None:
        """A buffer closed for ``reason`` (a :class:`~vivy.state.buffer.CloseReason` value)."""


class ChannelKey(NamedTuple):
    """A channel or thread (threads are channels of their own) within its guild.

    A named tuple rather than a dataclass: the router looks one up for every message, and a
    tuple hashes and compares in C.
    """

    guild_id: int
    channel_id: int


class Ack:
    """The reply to one inbox item: resolved once the item's effect is durable (or failed).

    The event a waiter sleeps on is made only when somebody waits before the reply is in, so
    a sender that queues many items and collects their replies later pays for none.
    """

    __slots__ = ("_event", "done", "error", "outcome")

    def __init__(self) -> None:
        self.done = False
        self.outcome: IngestOutcome | None = None
        self.error: BaseException | None = None
        self._event: anyio.Event | None = None

    @classmethod
    def answered(cls, outcome: IngestOutcome) -> Ack:
        """An ack that is resolved already (the event never needed an actor)."""
        ack = cls()
        ack.resolve(outcome)
        return ack

    def resolve(self, outcome: IngestOutcome) -> None:
        """Report success."""
        self.outcome = outcome
        self._finish()

    def fail(self, error: BaseException) -> None:
        """Report that the item was not stored."""
        self.error = error
        self._finish()

    async def wait(self) -> IngestOutcome:
        """Wait for the reply; return the outcome or raise the error that kept it from storage."""
        if not self.done:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()
        return self.result()

    def result(self) -> IngestOutcome:
        """The outcome of an answered item; raises the error that kept it from storage."""
        if self.error is not None:
            raise self.error
        if self.outcome is None:
            raise RuntimeError("the item has not been answered yet")
        return self.outcome

    def _finish(self) -> None:
        self.done = True
        if self._event is not None:
            self._event.set()


@dataclass(slots=True, eq=False)
class Create:
    """Store a new human message (already admitted and normalised).

    Inbox items are built for every message, so they are plain slotted classes: a frozen
    dataclass sets each field through ``object.__setattr__``, about four times slower.
    Nothing changes an item once it is queued.
    """

    message: BufferedMessage
    channel_name: str
    truncated: bool
    ack: Ack


@dataclass(slots=True, eq=False)
class Edit:
    """Apply an edit."""

    message_id: int
    text: str
    ack: Ack


@dataclass(slots=True, eq=False)
class Delete:
    """Apply a deletion."""

    message_id: int
    ack: Ack


Item: TypeAlias = Create | Edit | Delete


@dataclass(eq=False, slots=True)
class _Plan:
    """The storage effects of one batch, in order, and how each inbox item is answered."""

    effects: list[Effect] = field(default_factory=list)
    #: The channel name each OpenBuffer effect (by index) stores.
    channel_names: dict[int, str] = field(default_factory=dict)
    #: (ack, outcome, index of the effect whose result decides an edit/delete or -1,
    #: id of the created message or None)
    answers: list[tuple[Ack, IngestOutcome, int, int | None]] = field(default_factory=list)
    closing: list[ChannelBuffer] = field(default_factory=list)

    def add(self, effects: list[Effect]) -> int:
        """Append effects; return the index of the last one."""
        self.effects.extend(effects)
        return len(self.effects) - 1


class ChannelActor:
    """Buffers one channel's messages; see the module docstring."""

    def __init__(
        self,
        key: ChannelKey,
        mailbox: Mailbox[Item],
        *,
        db: Database,
        clock: Clock,
        settings: BufferSettings,
        hand_off: HandOffTarget,
        observer: BufferObserver,
        arm: Callable[[float], None],
        retire: Callable[[ChannelActor], bool],
    ) -> None:
        self.key = key
        self._mailbox = mailbox
        self._arm = arm
        self._db = db
        self._clock = clock
        self._settings = settings
        self._hand_off = hand_off
        self._observer = observer
        self._retire = retire
        self._machine = self._fresh_machine(0)
        self._buffer_id: int | None = None
        self._watermark = 0
        self._log = log.bind(guild_id=key.guild_id, channel_id=key.channel_id)

    @property
    def state(self) -> BufferState:
        """The state of the channel's current buffer."""
        return self._machine.state

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Restore from the database, then serve the mailbox and the timer until retired."""
        await self._restore()
        task_status.started()
        mailbox = self._mailbox
        while True:
            if not len(mailbox) and not mailbox.rung:
                if self._machine.next_deadline is None and self._retire(self):
                    return
                await mailbox.wait()
            if len(mailbox):
                await self._process(mailbox.take(MAX_BATCH))
            if mailbox.rung:  # after each batch, so a busy channel still hears its timer
                mailbox.rung = False
                await self._on_timer()

    # Restoring and timers -----------------------------------------------------------------

    async def _restore(self) -> None:
        found, self._watermark = await self._db.read(_restore_query, self.key.channel_id)
        if found is None:
            return
        row, message_ids = found
        self._machine = self._fresh_machine(0)
        self._buffer_id = row.id
        plan = _Plan()
        plan.add(self._machine.handle(Restored(row.snapshot(message_ids)), self._clock.now()))
        self._log.debug("buffer restored", buffer_id=row.id, state=self._machine.state.value)
        await self._carry_out(plan)

    async def _on_timer(self) -> None:
        """The timer rang: close on the deadline if it is reached, else arm it again."""
        deadline = self._machine.next_deadline
        if deadline is None:
            return  # the buffer closed since the timer was armed
        if self._clock.to_monotonic(deadline) > self._clock.monotonic():
            self._arm(deadline)  # messages moved it later
            return
        machine = self._machine
        event: Event = (
            InactivityDeadlineReached()
            if machine.inactivity_deadline <= machine.max_age_deadline
            else MaxAgeDeadlineReached()
        )
        # The timer fired because monotonic time reached the deadline; never let float
        # rounding in the wall-time mapping make it look early.
        now = max(self._clock.now(), deadline)
        plan = _Plan()
        plan.add(machine.handle(event, now))
        await self._carry_out(plan)

    # Messages -----------------------------------------------------------------------------

    async def _process(self, batch: list[Item]) -> None:
        """Plan the batch and carry it out; if either fails, every unanswered item fails too."""
        try:
            await self._carry_out(self._plan(batch))
        except BaseException as exc:
            for item in batch:
                if not item.ack.done:
                    item.ack.fail(exc)
            raise

    def _plan(self, batch: list[Item]) -> _Plan:
        plan = _Plan()
        now = self._clock.now()
        creates: list[Create] = []  # consecutive creations go to the machine as one burst
        for item in batch:
            if isinstance(item, Create):
                creates.append(item)
                continue
            if creates:
                self._plan_creates(creates, now, plan)
                creates = []
            if isinstance(item, Edit):
                last = plan.add(
                    self._machine.handle(MessageEdited(item.message_id, item.text), now)
                )
                plan.answers.append((item.ack, IngestOutcome.EDITED, last, None))
            else:
                last = plan.add(self._machine.handle(MessageDeleted(item.message_id), now))
                plan.answers.append((item.ack, IngestOutcome.DELETED, last, None))
        if creates:
            self._plan_creates(creates, now, plan)
        return plan

    def _plan_creates(self, items: list[Create], now: float, plan: _Plan) -> None:
        """Plan a burst of created messages: one MessagesArrived for each buffer they fill.

        A message at or below the watermark belongs to a buffer already closed: a duplicate.
        The rest go to the current buffer, or to a fresh one once it closes mid-burst (cap or
        max age), which the machine reports with StartNextBuffer.
        """
        appended: list[AppendMessages] = []
        duplicates = False
        pending = [item.message for item in items]
        while pending:
            messages = tuple(m for m in pending if m.message_id > self._watermark)
            duplicates = duplicates or len(messages) < len(pending)
            pending = []
            if not messages:
                break
            if self._machine.state is BufferState.CLOSED:
                plan.closing.append(self._machine)
            if self._machine.state is not BufferState.OPEN:
                self._machine = self._fresh_machine(messages[0].message_id)
            for effect in self._machine.handle(MessagesArrived(messages), now):
                if isinstance(effect, AppendMessages):
                    appended.append(effect)
                elif isinstance(effect, StartNextBuffer):
                    pending = list(effect.messages)
                    continue
                elif isinstance(effect, OpenBuffer):
                    plan.channel_names[len(plan.effects)] = _channel_name(
                        items, messages[0].message_id
                    )
                elif isinstance(effect, CloseBuffer):
                    ids = self._machine.message_ids
                    self._watermark = max(self._watermark, max(ids, default=0))
                elif isinstance(effect, Ignore):
                    duplicates = True
                plan.effects.append(effect)
        _answer_creates(items, appended, duplicates, plan)

    async def _carry_out(self, plan: _Plan) -> None:
        """Commit the plan's storage effects in one transaction, then hand off and answer.

        Last, the timer is armed at the machine's next deadline, which the plan may have moved.
        """
        results: dict[int, object] = {}
        taken: frozenset[int] = frozenset()
        if plan.effects:
            results, taken = await self._db.write(
                _apply, self.key, self._buffer_id, plan.effects, plan.channel_names
            )
        for index, result in results.items():
            effect = plan.effects[index]
            if isinstance(effect, OpenBuffer) and isinstance(result, int):
                self._buffer_id = result
                self._observer.buffer_opened()
            elif isinstance(effect, CloseBuffer):
                self._observer.buffer_closed(effect.reason.value)
            elif isinstance(effect, HandOff) and isinstance(result, int):
                self._hand_off.hand_off(result)
        now = self._clock.now()
        for machine in plan.closing:
            machine.handle(HandedOff(), now)
        if self._machine.state is BufferState.CLOSED:
            self._machine.handle(HandedOff(), now)
        if self._machine.state is BufferState.HANDED_OFF:
            self._machine = self._fresh_machine(0)
            self._buffer_id = None
        counts: dict[IngestOutcome, int] = {}
        for ack, outcome, index, message_id in plan.answers:
            if message_id in taken:
                outcome = IngestOutcome.DUPLICATE
            if index >= 0 and not results.get(index):
                outcome = (
                    IngestOutcome.UNKNOWN_EDIT
                    if outcome is IngestOutcome.EDITED
                    else IngestOutcome.UNKNOWN_DELETE
                )
            ack.resolve(outcome)
            counts[outcome] = counts.get(outcome, 0) + 1
        for outcome, count in counts.items():
            self._observer.ingested(outcome, count)
        deadline = self._machine.next_deadline
        if deadline is not None:
            self._arm(deadline)

    def _fresh_machine(self, first_message_id: int) -> ChannelBuffer:
        window = inactivity_window(self._settings, self.key.channel_id, first_message_id)
        return ChannelBuffer(
            BufferConfig(
                inactivity_s=window, max_age_s=self._settings.max_age_s, cap=self._settings.cap
            )
        )


def _channel_name(items: list[Create], message_id: int) -> str:
    """The channel name that came with the message (a channel renamed mid-burst)."""
    return next(item.channel_name for item in items if item.message.message_id == message_id)


def _answer_creates(
    items: list[Create], appended: list[AppendMessages], duplicates: bool, plan: _Plan
) -> None:
    """Answer each creation: stored (or truncated) if the machine appended it, else duplicate.

    Only a burst with a duplicate in it needs to match ids: a redelivered id is a duplicate
    however often it comes, and an id twice in one burst is stored once.
    """
    answers = plan.answers
    if not duplicates:
        for item in items:
            outcome = IngestOutcome.TRUNCATED if item.truncated else IngestOutcome.STORED
            answers.append((item.ack, outcome, -1, item.message.message_id))
        return
    stored = {m.message_id for effect in appended for m in effect.messages}
    for item in items:
        message_id = item.message.message_id
        if message_id in stored:
            stored.discard(message_id)
            outcome = IngestOutcome.TRUNCATED if item.truncated else IngestOutcome.STORED
            answers.append((item.ack, outcome, -1, message_id))
        else:
            answers.append((item.ack, IngestOutcome.DUPLICATE, -1, None))


def _restore_query(
    conn: Connection, channel_id: int
) -> tuple[tuple[store.BufferRow, frozenset[int]] | None, int]:
    """The channel's open buffer with its message ids (if any) and its watermark."""
    mark = store.watermark(conn, channel_id)
    rows = store.open_buffer_rows(conn, channel_id)
    if not rows:
        return None, mark
    row = rows[0]
    ids = frozenset(
        int(r[0])
        for r in conn.execute(
            "SELECT message_id FROM buffer_messages WHERE buffer_id = ?", (row.id,)
        ).fetchall()
    )
    return (row, ids), mark


def _apply(
    conn: Connection,
    key: ChannelKey,
    buffer_id: int | None,
    effects: list[Effect],
    channel_names: dict[int, str],
) -> tuple[dict[int, object], frozenset[int]]:
    """Carry out storage effects in order inside the caller's transaction.

    Returns the results by effect index, for the effects that have one: the new buffer id
    for OpenBuffer, the closed buffer's id for CloseBuffer and HandOff, whether a message was
    found for edits and deletes. Appends and ignored events have none. Also returns the ids of
    messages not appended because another buffer already holds them.
    """
    results: dict[int, object] = {}
    current = buffer_id
    last_closed: int | None = None
    taken: set[int] = set()
    for index, effect in enumerate(effects):
        result: object = None
        if isinstance(effect, AppendMessages):  # one executemany for the burst
            assert current is not None
            taken.update(store.append_messages(conn, current, effect.messages, effect.at))
            continue
        if isinstance(effect, Ignore):  # nothing to store
            continue
        if isinstance(effect, OpenBuffer):
            current = store.open_buffer(
                conn,
                key.guild_id,
                key.channel_id,
                channel_names.get(index, ""),
                effect.started_at,
                effect.inactivity_s,
            )
            result = current
        elif isinstance(effect, CloseBuffer):
            if current is None:
                current = _only_open_buffer(conn, key.channel_id)
            store.close_buffer(conn, current, effect.closed_at, effect.reason)
            last_closed, current, result = current, None, current
        elif isinstance(effect, HandOff):
            result = last_closed if last_closed is not None else buffer_id
        elif isinstance(effect, UpdateMessage | UpdateStoredMessage):
            result = store.edit_stored_message(
                conn, effect.message_id, effect.text, effect.edited_at
            )
        elif isinstance(effect, RemoveMessage | RemoveStoredMessage):
            result = store.delete_stored_message(conn, effect.message_id)
        results[index] = result
    return results, frozenset(taken)


def _only_open_buffer(conn: Connection, channel_id: int) -> int:
    rows = store.open_buffer_rows(conn, channel_id)
    if not rows:
        raise LookupError(f"channel {channel_id} has no open buffer to close")
    return rows[0].id
