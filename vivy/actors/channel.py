"""The ChannelBuffer actor: one long-lived task per active channel or thread.

It owns its channel's :class:`~vivy.state.buffer.ChannelBuffer` machine, feeds it the events
of its mailbox and of its timer, and carries out the effects the machine returns: every batch
of messages is committed to SQLite before any of them is acknowledged; a closed buffer is
handed to the NoteWriter only after its outbox row is committed. What to store, what is a
duplicate, when to close and how each item is answered are the machine's decisions. The timer
is the machine's next deadline: the actor arms it with the router, which rings the actor's
mailbox once the monotonic clock reaches it (so trio's MockClock drives it in tests), and the
actor reports the deadline reached to the machine. When no buffer is open and its mailbox is
empty, the actor asks the router to retire it and exits.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple, Protocol, TypeAlias

import anyio
import structlog

from vivy.actors.mailbox import Mailbox
from vivy.clock import Clock
from vivy.config import BufferSettings, inactivity_window
from vivy.errors import DatabaseUnavailable
from vivy.memory.buffers import AppliedEffects, CloseReason
from vivy.state.buffer import (
    BufferConfig,
    BufferSnapshot,
    BufferState,
    ChannelBuffer,
    DeadlineReached,
    Effect,
    Ignore,
    Incoming,
    Restored,
)
from vivy.state.gate import IngestOutcome
from vivy.storage.port import BufferStore

__all__ = ["Ack", "ChannelActor", "ChannelKey", "HandOffTarget", "Item"]

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

    def buffer_closed(self, reason: CloseReason) -> None:
        """A buffer closed for ``reason``."""


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


#: One inbox item: the machine's event and the reply its sender waits on. A plain pair: one
#: is built for every message, and a tuple display costs a fraction of a class's constructor.
Item: TypeAlias = tuple[Incoming, Ack]


class ChannelActor:
    """Buffers one channel's messages; see the module docstring."""

    def __init__(
        self,
        key: ChannelKey,
        mailbox: Mailbox[Item],
        *,
        buffers: BufferStore,
        clock: Clock,
        settings: BufferSettings,
        hand_off: HandOffTarget,
        observer: BufferObserver,
        arm: Callable[[float], None],
        retire: Callable[[ChannelActor], bool],
        restored: Callable[[], None] = lambda: None,
    ) -> None:
        self.key = key
        self._mailbox = mailbox
        self._arm = arm
        self._buffers = buffers
        self._clock = clock
        self._hand_off = hand_off
        self._observer = observer
        self._retire = retire
        self._restored = restored
        # Each buffer's inactivity window is drawn when it opens (``window``) or read back
        # from its row when restored; the minimum only stands in until then.
        self._machine = ChannelBuffer(
            BufferConfig(
                inactivity_s=settings.inactivity_min_s,
                max_age_s=settings.max_age_s,
                cap=settings.cap,
            ),
            window=partial(inactivity_window, settings, key.channel_id),
        )
        self._buffer_id: int | None = None
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
        self._restored()
        task_status.started()
        mailbox = self._mailbox
        while True:
            if not len(mailbox) and mailbox.rung is None:
                if self._machine.next_deadline is None and self._retire(self):
                    return
                await mailbox.wait()
            if len(mailbox):
                await self._process(mailbox.take(MAX_BATCH))
            rung = mailbox.rung
            if rung is not None:  # after each batch, so a busy channel still hears its timer
                mailbox.rung = None
                effects = self._machine.handle(DeadlineReached(rung), self._clock.now())
                await self._carry_out(effects)

    async def _restore(self) -> None:
        found, watermark = await self._buffers.restore_channel(self.key.channel_id)
        snapshot = None
        if found is not None:
            row, message_ids = found
            self._buffer_id = row.id
            snapshot = BufferSnapshot.of(row, message_ids)
        effects = self._machine.handle(Restored(snapshot, watermark), self._clock.now())
        if snapshot is not None:
            self._log.debug(
                "buffer restored", buffer_id=self._buffer_id, state=self._machine.state.value
            )
        await self._carry_out(effects)

    async def _process(self, batch: list[Item]) -> None:
        """Plan the batch, carry it out and answer each item with the machine's outcome.

        If the database is unavailable, the batch goes back to the head of the mailbox and
        the error ends the actor: the router restarts it from the database once the database
        answers, and it takes the same items again, unanswered meanwhile. Any other failure
        fails every unanswered item.
        """
        try:
            plan = self._machine.plan([event for event, _ in batch], self._clock.now())
            applied = await self._carry_out(plan.effects)
        except DatabaseUnavailable:
            self._mailbox.requeue(batch)
            raise
        except BaseException as exc:
            for _, ack in batch:
                if not ack.done:
                    ack.fail(exc)
            raise
        counts: dict[IngestOutcome, int] = {}
        for (_, ack), outcome in zip(
            batch, plan.outcomes(applied.found, applied.taken), strict=True
        ):
            ack.resolve(outcome)
            counts[outcome] = counts.get(outcome, 0) + 1
        for outcome, count in counts.items():
            self._observer.ingested(outcome, count)

    async def _carry_out(self, effects: list[Effect]) -> AppliedEffects:
        """Commit the effects in one transaction, then hand closed buffers off.

        Last, the timer is armed at the machine's next deadline, which the effects may have
        moved.
        """
        applied = AppliedEffects(self._buffer_id)
        if any(type(effect) is not Ignore for effect in effects):  # else nothing to store
            applied = await self._buffers.apply_effects(
                self.key.guild_id, self.key.channel_id, self._buffer_id, effects
            )
        self._buffer_id = applied.buffer_id
        for _ in range(applied.opened):
            self._observer.buffer_opened()
        for buffer_id, reason in applied.closed:
            self._observer.buffer_closed(reason)
            self._hand_off.hand_off(buffer_id)
        deadline = self._machine.next_deadline
        if deadline is not None:
            self._arm(deadline)
        return applied
