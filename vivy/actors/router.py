"""The router: owns the map of ChannelBuffer actors and routes gateway events to them.

An actor is created on its channel's first event and runs under the router's task group,
which supervises it: an actor that crashes is counted and restarted from the database with
the same mailbox, so queued messages are not lost. An actor ended by an unavailable database
(its batch back in its mailbox) is restarted the same way, after a wait that grows to a few
seconds, with one warning for all channels every few seconds (:mod:`vivy.actors.outage`). An
actor retires (and frees its memory) when its buffer has been handed off and its mailbox is
empty; the check and the removal from the map happen without an await in between, so no
message can slip into a retiring actor's mailbox.

The router also keeps every actor's timer: one task waits for the earliest deadline of all
channels and rings that actor's mailbox with the deadline reached, so an actor sleeps on its
mailbox alone and a wake-up costs no timer set-up of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from vivy.actors.channel import Ack, BufferObserver, ChannelActor, ChannelKey, HandOffTarget, Item
from vivy.actors.due import DueQueue
from vivy.actors.mailbox import Mailbox
from vivy.actors.outage import Outage, until_stored
from vivy.clock import Clock
from vivy.config import BufferSettings
from vivy.errors import AppStopped, DatabaseUnavailable, LeaseLost
from vivy.memory.buffers import BufferedMessage
from vivy.state.buffer import MessageCreated, MessageDeleted, MessageEdited
from vivy.state.gate import (
    CapturePolicy,
    IncomingDelete,
    IncomingEdit,
    IncomingMessage,
    IngestOutcome,
    admit,
    normalize_text,
)
from vivy.storage.port import Store

__all__ = ["IngestObserver", "Router", "RouterStatistics"]

log = structlog.get_logger(__name__)

#: Mailbox capacity of one channel actor; a full mailbox makes senders wait (backpressure).
MAILBOX_CAPACITY = 1024

#: Longest pause between restarts of an actor that keeps crashing.
MAX_RESTART_DELAY_S = 60.0


class IngestObserver(BufferObserver, Protocol):
    """What the router reports for metrics, on top of what its actors report."""

    def actor_restarted(self) -> None:
        """A channel actor crashed and was restarted."""


@dataclass(frozen=True, slots=True)
class RouterStatistics:
    """A snapshot of the router (trio-style ``statistics()``)."""

    active_actors: int
    queued_items: int
    restarts: int


@dataclass(eq=False)
class _Entry:
    """The router's side of one actor: its mailbox and its current incarnation."""

    mailbox: Mailbox[Item]
    actor: ChannelActor | None = None
    crashes: int = field(default=0)


class Router:
    """Routes admitted messages to per-channel actors; see the module docstring."""

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        buffers: BufferSettings,
        policy: CapturePolicy,
        hand_off: HandOffTarget,
        observer: IngestObserver,
    ) -> None:
        self._store = store
        self._clock = clock
        self._buffers = buffers
        self._policy = policy
        self._hand_off = hand_off
        self._observer = observer
        #: By (guild id, channel id). A named tuple hashes and compares as the plain tuple, so
        #: routing a message looks its actor up without building a ChannelKey.
        self._entries: dict[tuple[int, int], _Entry] = {}
        self._timers: DueQueue[ChannelKey] = DueQueue(clock)
        self._opted_out: set[tuple[int, int]] = set()
        self._restarts = 0
        self._tg: TaskGroup | None = None
        self._outage = Outage("channel actors")

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Restore every open buffer's actor, then serve until cancelled; on the way out an
        event still queued is answered with :class:`~vivy.errors.AppStopped`."""
        self._opted_out = await until_stored(
            self._store.members.opted_out_members, what="opted-out members"
        )
        stored = await until_stored(self._store.buffers.open_channels, what="open buffers")
        open_channels = [ChannelKey(*key) for key in stored]
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for key in open_channels:
                    self._entry(key)
                task_status.started()
                await self._ring_timers()
        finally:
            self._fail_unstored()

    def _fail_unstored(self) -> None:
        """Answer every item still in a mailbox with an error once the actors are gone, so no
        sender waits for ever (a message not stored comes back from Discord's history)."""
        error = AppStopped("the app stopped before storing this event")
        for entry in self._entries.values():
            for _, ack in entry.mailbox.abandon():
                if not ack.done:
                    ack.fail(error)
        self._entries.clear()

    async def _ring_timers(self) -> None:
        """Ring each actor's mailbox when its armed deadline is reached; runs until cancelled."""
        while True:
            key, due = await self._timers.get_due()
            entry = self._entries.get(key)
            if entry is not None:  # a retired actor has no deadline left
                entry.mailbox.ring(due)

    def statistics(self) -> RouterStatistics:
        """Active actors, items waiting in their mailboxes, and restarts so far."""
        queued = sum(len(e.mailbox) for e in self._entries.values())
        return RouterStatistics(len(self._entries), queued, self._restarts)

    def set_opted_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        """Record a member's opt-out (already persisted by the caller) for the gate."""
        if opted_out:
            self._opted_out.add((guild_id, user_id))
        else:
            self._opted_out.discard((guild_id, user_id))

    async def ingest(self, message: IncomingMessage) -> IngestOutcome:
        """Admit, normalise and store one created message; returns once it is durable."""
        return await (await self.submit(message)).wait()

    async def submit(self, message: IncomingMessage) -> Ack:
        """Admit, normalise and queue one created message; its :class:`Ack` says when it is durable.

        This waits only while the channel's mailbox is full (backpressure), so a gateway-like
        sender can have many messages of a channel in flight and collect their acks later.
        Messages submitted one after another reach their channel's actor in that order.
        """
        excluded = admit(
            self._policy,
            guild_id=message.guild_id,
            channel_id=message.channel_id,
            author_id=message.author_id,
            author_is_bot=message.author_is_bot,
            opted_out=(message.guild_id, message.author_id) in self._opted_out,
        )
        if excluded is not None:
            return Ack.answered(self._gated(excluded))
        normalized = normalize_text(message.text)
        if normalized is None:
            return Ack.answered(self._gated(IngestOutcome.EMPTY))
        text, truncated = normalized
        buffered = BufferedMessage(  # positional: half the cost of keywords, once per message
            message.message_id,
            message.author_id,
            message.author_name,
            text,
            message.created_at,
            message.reply_to,
            message.mentions,
        )
        ack = Ack()
        key = (message.guild_id, message.channel_id)
        item = (MessageCreated(buffered, message.channel_name, truncated), ack)
        if not self._queue_nowait(key, item):  # the common case needs no coroutine
            await self._queue(key, item)
        return ack

    async def edit(self, edit: IncomingEdit) -> IngestOutcome:
        """Apply an edit to a buffered message (unknown ids are counted and dropped)."""
        if not self._policy.capture_enabled:
            return self._gated(IngestOutcome.CAPTURE_DISABLED)
        if edit.author_is_bot:
            return self._gated(IngestOutcome.EXCLUDED_BOT)
        normalized = normalize_text(edit.text)
        key = ChannelKey(edit.guild_id, edit.channel_id)
        ack = Ack()
        if normalized is None:
            await self._queue(key, (MessageDeleted(edit.message_id), ack))
        else:
            await self._queue(key, (MessageEdited(edit.message_id, normalized[0]), ack))
        return await ack.wait()

    async def delete(self, delete: IncomingDelete) -> IngestOutcome:
        """Remove a buffered message (unknown ids are counted and dropped)."""
        ack = Ack()
        await self._queue(
            ChannelKey(delete.guild_id, delete.channel_id),
            (MessageDeleted(delete.message_id), ack),
        )
        return await ack.wait()

    async def _queue(self, key: tuple[int, int], item: Item) -> None:
        """Put ``item`` in the mailbox of the channel's actor, waiting while it is full."""
        while True:
            entry = self._entry(key)
            try:
                await entry.mailbox.put(item)  # a waiting sender keeps the actor from retiring
                return
            except anyio.ClosedResourceError:
                self._forget(key, entry)

    def _queue_nowait(self, key: tuple[int, int], item: Item) -> bool:
        """Put ``item`` in the mailbox of the channel's actor, starting the actor if needed.

        Returns False, queueing nothing, when the mailbox is full. No checkpoint lies between
        looking the actor up and queueing, so it cannot retire in between.
        """
        while True:
            entry = self._entry(key)
            try:
                return entry.mailbox.put_nowait(item)
            except anyio.ClosedResourceError:
                self._forget(key, entry)

    def _forget(self, key: tuple[int, int], entry: _Entry) -> None:
        """Drop a retired actor's entry, so the next item starts a new actor."""
        if self._entries.get(key) is entry:
            del self._entries[key]

    def _gated(self, outcome: IngestOutcome) -> IngestOutcome:
        """Count an event the gate settled without the actor, and return its outcome."""
        self._observer.ingested(outcome)
        return outcome

    def _entry(self, key: tuple[int, int]) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            if self._tg is None:
                raise RuntimeError("Router.run() must be started before messages are sent")
            channel = ChannelKey(*key)
            entry = _Entry(Mailbox(MAILBOX_CAPACITY))
            self._entries[channel] = entry
            self._tg.start_soon(self._supervise, channel, entry)
        return entry

    def _database_answered(self) -> None:
        """An actor restored its channel: the outage, if there was one, is over."""
        if self._outage.failures:
            self._outage.recovered()

    def _retire(self, key: ChannelKey, entry: _Entry, actor: ChannelActor) -> bool:
        """Called by an idle actor: remove it if nothing is queued for it."""
        mailbox = entry.mailbox
        if len(mailbox) or mailbox.waiting_senders:
            return False
        if self._entries.get(key) is entry:
            del self._entries[key]
        mailbox.close()
        return True

    async def _supervise(self, key: ChannelKey, entry: _Entry) -> None:
        """Run the channel's actor, restarting it from the database whenever it crashes."""
        while True:
            actor = ChannelActor(
                key,
                entry.mailbox,
                buffers=self._store.buffers,
                clock=self._clock,
                settings=self._buffers,
                hand_off=self._hand_off,
                observer=self._observer,
                arm=lambda due: self._timers.put(key, due),
                retire=lambda a: self._retire(key, entry, a),
                restored=self._database_answered,
            )
            entry.actor = actor
            try:
                await actor.run()
                return
            except LeaseLost:
                raise  # another process owns the channel now: stop, do not restart
            except DatabaseUnavailable as exc:
                # Its unstored items wait in the mailbox; restored once the database answers.
                await anyio.sleep(self._outage.failed(exc))
                continue
            except Exception:
                entry.crashes += 1
                self._restarts += 1
                self._observer.actor_restarted()
                log.exception(
                    "channel actor crashed; restarting from the database",
                    guild_id=key.guild_id,
                    channel_id=key.channel_id,
                    crashes=entry.crashes,
                )
                await anyio.sleep(min(MAX_RESTART_DELAY_S, 0.1 * 2 ** (entry.crashes - 1)))
