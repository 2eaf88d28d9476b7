"""The hikari adapter: gateway events into the router, and Vivy's answers back to Discord.

This is the only asyncio-only part of Vivy (hikari needs asyncio). Guild message create,
update and delete events become :class:`~vivy.state.gate.IncomingMessage` /
``IncomingEdit`` / ``IncomingDelete`` for the router (DMs are ignored; the gate drops Vivy's
own and other bots' messages). A human message that mentions Vivy or replies to one of its
messages is answered by :class:`~vivy.bot.answering.Answerer`. Hikari's exceptions are caught
here and logged; they never reach the app.

When a guild becomes available (GUILD_CREATE after READY, or after a reconnect that was not a
RESUME), every channel of it Vivy stored a message of is caught up from Discord's history, so
messages sent while no process listened are not lost; :mod:`vivy.bot.catchup` holds the
rules and the decisions (a channel's live events wait until its catch-up is stored).

Nothing accepted is dropped when the database goes away: a create, edit or delete waits, in
its channel's order, until its channel actor has stored it (the actor keeps it through the
outage, :mod:`vivy.actors.router`). The wait is bounded: past ``max_unstored`` live events
waiting, new messages are no longer taken; their channel is marked, and once every waiting
event is stored, it is caught up from Discord's history after the first message not taken.
Edits and deletions are never skipped (a skipped message's later edits and deletion are in
the history the catch-up reads).

A catch-up also reconciles the channel's open buffer with Discord: a buffered message Discord
no longer has is deleted, and one whose text Discord shows edited is edited, so edits and
deletions made while no process listened (a shard fenced off from the database, a restart)
are not lost either.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import hikari
import structlog

from vivy.actors.channel import Ack
from vivy.actors.router import Router
from vivy.bot.answering import Answerer, AnswerObserver
from vivy.bot.catchup import (
    CATCHUP_CONCURRENCY,
    ChannelCatchUp,
    ChannelHolds,
    GuildCatchUp,
    channels_to_catch_up,
)
from vivy.bot.commands import COMMAND_NAME, MemoryCommands
from vivy.bot.messages import incoming_edit, incoming_message
from vivy.clock import Clock
from vivy.config import Settings
from vivy.errors import AppStopped, StorageError
from vivy.state.gate import (
    IncomingDelete,
    IncomingEdit,
    IncomingMessage,
    IngestOutcome,
    normalize_text,
)
from vivy.storage.port import BufferStore, ImportStore, MemberStore

__all__ = [
    "CATCHUP_ACK_WINDOW",
    "INTENTS",
    "MAX_UNSTORED",
    "Gateway",
    "GatewayObserver",
]

log = structlog.get_logger(__name__)

#: What Vivy asks the gateway for: guilds, their messages, and the messages' text.
INTENTS = hikari.Intents.GUILDS | hikari.Intents.GUILD_MESSAGES | hikari.Intents.MESSAGE_CONTENT

#: Caught-up messages queued to the router before their acks are collected.
CATCHUP_ACK_WINDOW = 100

#: Live events waiting to be stored past which new messages are left to a catch-up.
MAX_UNSTORED = 5000

#: What a live capture event becomes for the router (held while its channel catches up).
Capture = IncomingMessage | IncomingEdit | IncomingDelete


#: Guild channel types whose GUILD_CREATE entry names their newest message.
_WITH_LAST_MESSAGE = (
    hikari.GuildTextChannel,
    hikari.GuildNewsChannel,
    hikari.GuildThreadChannel,
    hikari.GuildVoiceChannel,
    hikari.GuildStageChannel,
)


class GatewayObserver(AnswerObserver, Protocol):
    """What the gateway reports for metrics, its answers' outcomes included."""

    def gateway_connected(self, connected: bool) -> None:
        """Whether any shard is connected now."""

    def caught_up(self, messages: int) -> None:
        """``messages`` were stored from a channel's history."""


class Gateway:
    """Connects hikari's events and REST client to the running pipeline.

    :meth:`subscribe` registers the handlers on a hikari event manager. ``rest`` sends the
    answers; captured messages go to ``router``; a message addressed to Vivy is answered by
    ``answerer``; a guild's channels are caught up from
    their stored ``positions``, and each guild's name kept in ``members``; ``commands`` serve
    ``/memory``; ``cache`` (the bot's) names channels; what happens is told to ``observer``.
    """

    def __init__(
        self,
        rest: hikari.api.RESTClient,
        *,
        own_user_id: int,
        router: Router,
        answerer: Answerer,
        clock: Clock,
        settings: Settings,
        positions: ImportStore,
        buffers: BufferStore | None = None,
        members: MemberStore | None = None,
        commands: MemoryCommands,
        observer: GatewayObserver,
        cache: hikari.api.Cache | None = None,
        max_unstored: int = MAX_UNSTORED,
    ) -> None:
        self._rest = rest
        self._own = own_user_id
        self._router = router
        self._clock = clock
        self._settings = settings
        self._answerer = answerer
        self._positions = positions
        self._buffers = buffers
        self._members = members
        self._commands = commands
        self._observer = observer
        self._cache = cache
        self._connected: set[int] = set()
        self._holds: ChannelHolds[Capture] = ChannelHolds()
        self._catchups: set[anyio.CancelScope] = set()
        self._max_unstored = max_unstored
        #: Live events handed to the router and not stored yet.
        self._unstored = 0
        #: Channels whose new messages were left to a catch-up: guild and first message id.
        self._skipped: dict[int, tuple[int, int]] = {}

    @property
    def own_user_id(self) -> int:
        """Vivy's user id."""
        return self._own

    def subscribe(self, events: hikari.api.EventManager) -> None:
        """Listen to every event Vivy handles."""
        for event_type, callback in self._listeners():
            events.subscribe(event_type, callback)

    def unsubscribe(self, events: hikari.api.EventManager) -> None:
        """Stop listening and cancel the catch-ups running (before shutting the app down)."""
        for event_type, callback in self._listeners():
            events.unsubscribe(event_type, callback)
        for scope in self._catchups:
            scope.cancel()

    @property
    def holds(self) -> ChannelHolds[Capture]:
        """The channels catching up and the live events waiting for them."""
        return self._holds

    def _listeners(self) -> list[tuple[type[Any], Callable[[Any], Coroutine[Any, Any, None]]]]:
        return [
            (hikari.GuildMessageCreateEvent, self.on_message_create),
            (hikari.GuildMessageUpdateEvent, self.on_message_update),
            (hikari.GuildMessageDeleteEvent, self.on_message_delete),
            (hikari.GuildBulkMessageDeleteEvent, self.on_bulk_delete),
            (hikari.InteractionCreateEvent, self.on_interaction),
            (hikari.GuildAvailableEvent, self.on_guild_available),
            (hikari.ShardConnectedEvent, self.on_shard_up),
            (hikari.ShardReadyEvent, self.on_shard_up),
            (hikari.ShardResumedEvent, self.on_shard_up),
            (hikari.ShardDisconnectedEvent, self.on_shard_down),
        ]

    # Capture -------------------------------------------------------------------------------

    async def on_message_create(self, event: hikari.GuildMessageCreateEvent) -> None:
        """Capture a new message and answer it if it is addressed to Vivy."""
        message = event.message
        incoming = incoming_message(message, self._channel_name(int(message.channel_id)))
        if incoming is None:
            return
        held = self._holds.offer(incoming.channel_id, incoming)
        # Queued before the first await, so creates, edits and deletions of a channel reach
        # its actor in the order they arrived.
        ack = None if held or self._skip(incoming) else await self._submit(incoming)
        async with anyio.create_task_group() as tg:
            if ack is not None:
                tg.start_soon(self._stored, incoming, ack)
            if self._answerer.addressed(message, incoming):
                tg.start_soon(self._answerer.answer, message)

    async def on_message_update(self, event: hikari.GuildMessageUpdateEvent) -> None:
        """Apply an edit to the buffered copy of the message."""
        edit = incoming_edit(event.message)
        if edit is None or edit.author_id == self._own:
            return
        if not self._holds.offer(edit.channel_id, edit):
            await self._edit(edit)

    async def on_message_delete(self, event: hikari.GuildMessageDeleteEvent) -> None:
        """Remove a deleted message from its buffer."""
        await self._delete(int(event.guild_id), int(event.channel_id), [int(event.message_id)])

    async def on_bulk_delete(self, event: hikari.GuildBulkMessageDeleteEvent) -> None:
        """Remove every message of a bulk deletion from its buffer."""
        ids = sorted(int(m) for m in event.message_ids)
        await self._delete(int(event.guild_id), int(event.channel_id), ids)

    async def _delete(self, guild_id: int, channel_id: int, message_ids: Sequence[int]) -> None:
        for message_id in message_ids:
            delete = IncomingDelete(guild_id, channel_id, message_id)
            if not self._holds.offer(channel_id, delete):
                await self._delete_one(delete)

    def _skip(self, incoming: IncomingMessage) -> bool:
        """Whether to leave the message to a catch-up: too many events wait to be stored."""
        channel_id = incoming.channel_id
        if channel_id in self._skipped:
            return True
        if self._unstored < self._max_unstored:
            return False
        self._skipped[channel_id] = (incoming.guild_id, incoming.message_id)
        log.warning(
            "too many messages wait for the database; this channel's new ones will be read "
            "from its history once it answers",
            guild_id=incoming.guild_id,
            channel_id=channel_id,
            waiting=self._unstored,
        )
        return True

    async def _edit(self, edit: IncomingEdit) -> None:
        async with self._waiting():
            try:
                await self._router.edit(edit)
            except Exception:
                log.exception("edit not applied", message_id=edit.message_id)

    async def _delete_one(self, delete: IncomingDelete) -> None:
        async with self._waiting():
            try:
                await self._router.delete(delete)
            except Exception:
                log.exception("deletion not applied", message_id=delete.message_id)

    async def _capture(self, incoming: IncomingMessage) -> None:
        ack = await self._submit(incoming)
        if ack is not None:
            await self._stored(incoming, ack)

    async def _submit(self, incoming: IncomingMessage) -> Ack | None:
        """Queue the message to its channel's actor and count it as waiting (None: the
        router refused it, logged)."""
        try:
            ack = await self._router.submit(incoming)
        except Exception:
            self._log_not_captured(incoming)
            return None
        self._unstored += 1
        return ack

    async def _stored(self, incoming: IncomingMessage, ack: Ack) -> None:
        """Wait until the submitted message is stored."""
        async with self._waited():
            try:
                await ack.wait()
            except AppStopped:
                log.info(
                    "message left to the next catch-up: the app stopped before storing it",
                    channel_id=incoming.channel_id,
                    message_id=incoming.message_id,
                )
            except Exception:
                self._log_not_captured(incoming)

    @staticmethod
    def _log_not_captured(incoming: IncomingMessage) -> None:
        log.exception(
            "message not captured",
            guild_id=incoming.guild_id,
            channel_id=incoming.channel_id,
            message_id=incoming.message_id,
        )

    @asynccontextmanager
    async def _waiting(self) -> AsyncIterator[None]:
        """Count a live edit or deletion until it is stored (see :meth:`_waited`)."""
        self._unstored += 1
        async with self._waited():
            yield

    @asynccontextmanager
    async def _waited(self) -> AsyncIterator[None]:
        """End the wait of a counted event when the block ends; the last one stored starts
        the catch-up of the channels whose messages were skipped meanwhile."""
        try:
            yield
        finally:
            self._unstored -= 1
        if not self._unstored and self._skipped:
            await self._catch_up_skipped()

    async def _catch_up_skipped(self) -> None:
        """Read the skipped channels' history from their first skipped message on."""
        skipped, self._skipped = self._skipped, {}
        with anyio.CancelScope() as scope:
            held = set(self._holds.hold(skipped, scope))
            self._catchups.add(scope)
            try:
                reports: list[ChannelCatchUp] = []
                limiter = anyio.CapacityLimiter(CATCHUP_CONCURRENCY)
                async with anyio.create_task_group() as tg:
                    for channel_id, (guild_id, first) in skipped.items():
                        if channel_id in held:
                            tg.start_soon(
                                self._catch_up_channel,
                                guild_id,
                                channel_id,
                                first - 1,
                                limiter,
                                reports,
                            )
                summary = GuildCatchUp.of(reports)
                log.info(
                    "skipped messages read from history",
                    channels=summary.channels,
                    read=summary.read,
                    stored=summary.stored,
                    capped=summary.capped,
                )
            finally:
                self._catchups.discard(scope)
                self._holds.abandon(scope)

    def _channel_name(self, channel_id: int) -> str:
        if self._cache is None:
            return ""
        channel = self._cache.get_guild_channel(channel_id) or self._cache.get_thread(channel_id)
        return (channel.name or "") if channel is not None else ""

    # Catch-up from history ------------------------------------------------------------------

    async def on_guild_available(self, event: hikari.GuildAvailableEvent) -> None:
        """Store the guild's name, and catch up every channel of the guild Vivy stored a
        message of from its history.

        The guild's channels are held before the first await, so none of their live events
        (dispatched after this one) reaches the router before the channel's history does.
        """
        guild_id = int(event.guild_id)
        settings = self._settings
        if settings.allowed_guilds is not None and guild_id not in settings.allowed_guilds:
            return
        if settings.catchup_messages == 0 or not settings.capture_enabled:
            await self._remember_name(event.guild)
            return
        latest = {
            int(c.id): int(c.last_message_id)
            for c in (*event.channels.values(), *event.threads.values())
            if isinstance(c, _WITH_LAST_MESSAGE) and c.last_message_id is not None
        }
        with anyio.CancelScope() as scope:
            held = self._holds.hold((int(c) for c in (*event.channels, *event.threads)), scope)
            self._catchups.add(scope)
            try:
                await self._remember_name(event.guild)
                await self.catch_up_guild(guild_id, held, latest)
            finally:
                self._catchups.discard(scope)
                self._holds.abandon(scope)  # only a cancelled catch-up leaves holds behind

    async def _remember_name(self, guild: hikari.GatewayGuild) -> None:
        """Store the guild's name as Discord gives it, so that the commands and the memory
        page show it beside its id; a failed write is logged and stands in nothing's way."""
        if self._members is None or not guild.name:
            return
        try:
            await self._members.set_guild_names([(int(guild.id), guild.name)], self._clock.now())
        except StorageError as exc:
            log.warning("guild name not stored", guild_id=int(guild.id), error=str(exc))

    async def catch_up_guild(
        self, guild_id: int, channel_ids: Sequence[int], latest: Mapping[int, int] | None = None
    ) -> GuildCatchUp:
        """Catch up the held ``channel_ids`` of the guild and release each one's live events
        once its history is stored; ``latest`` is each channel's newest message id as Discord
        announced it. Logs and returns the guild's counts."""
        try:
            marks = await self._positions.fed_high_marks(channel_ids)
        except Exception:
            log.exception("catch-up skipped: stored positions not readable", guild_id=guild_id)
            marks = {}
        due = channels_to_catch_up(channel_ids, marks, self._settings.blacklisted_channels, latest)
        for channel_id in channel_ids:
            if channel_id not in due:
                await self._release(channel_id)
        reports: list[ChannelCatchUp] = []
        limiter = anyio.CapacityLimiter(CATCHUP_CONCURRENCY)
        async with anyio.create_task_group() as tg:
            for channel_id, after in due.items():
                tg.start_soon(self._catch_up_channel, guild_id, channel_id, after, limiter, reports)
        summary = GuildCatchUp.of(reports)
        log.info(
            "guild caught up from history",
            guild_id=guild_id,
            channels=summary.channels,
            read=summary.read,
            stored=summary.stored,
            capped=summary.capped,
            unreadable=summary.unreadable,
        )
        return summary

    async def _catch_up_channel(
        self,
        guild_id: int,
        channel_id: int,
        after: int,
        limiter: anyio.CapacityLimiter,
        reports: list[ChannelCatchUp],
    ) -> None:
        """Read one channel's history (a failure is logged and skips it), then release its
        held live events."""
        try:
            async with limiter:
                report = await self._read_history(guild_id, channel_id, after)
        except hikari.HikariError as exc:  # 403 on a channel Vivy lost access to, 404, ...
            reason = type(exc).__name__
            log.warning(
                "channel history not readable; skipped",
                guild_id=guild_id,
                channel_id=channel_id,
                error=reason,
            )
            report = ChannelCatchUp(channel_id, error=reason)
        except Exception as exc:
            log.exception("channel catch-up failed", guild_id=guild_id, channel_id=channel_id)
            report = ChannelCatchUp(channel_id, error=type(exc).__name__)
        reports.append(report)
        await self._release(channel_id)

    async def _read_history(self, guild_id: int, channel_id: int, after: int) -> ChannelCatchUp:
        """Feed the channel's messages after ``after``, oldest first and at most the cap, to
        the router (never answered), then reconcile its open buffer with Discord's history;
        returns the counts."""
        cap = self._settings.catchup_messages
        name = self._channel_name(channel_id)
        read = stored = 0
        capped = False
        acks: list[Ack] = []
        history = self._rest.fetch_messages(channel_id, after=hikari.Snowflake(after))
        async for message in history.limit(cap + 1):  # hikari pages oldest first after `after`
            if read == cap:  # one more than the cap exists: it and the newer ones stay unread
                capped = True
                break
            read += 1
            incoming = incoming_message(message, name, guild_id=guild_id)
            if incoming is None:
                continue
            acks.append(await self._router.submit(incoming))
            if len(acks) >= CATCHUP_ACK_WINDOW:
                stored += await self._count_stored(acks)
                acks = []
        stored += await self._count_stored(acks)
        await self._reconcile(guild_id, channel_id, after)
        return ChannelCatchUp(channel_id, read=read, stored=stored, capped=capped)

    async def _reconcile(self, guild_id: int, channel_id: int, through: int) -> None:
        """Bring to the channel's open buffer the edits and deletions Discord's history shows
        for its messages up to ``through`` (made while no process listened)."""
        buffered = {m: t for m, t in (await self._buffered(channel_id)).items() if m <= through}
        if not buffered:
            return
        seen: set[int] = set()
        history = self._rest.fetch_messages(channel_id, after=hikari.Snowflake(min(buffered) - 1))
        async for message in history:  # oldest first
            message_id = int(message.id)
            if message_id > through:
                break
            seen.add(message_id)
            incoming = incoming_message(message, guild_id=guild_id)
            if incoming is None or message_id not in buffered:
                continue
            normalized = normalize_text(incoming.text)
            if normalized is None or normalized[0] != buffered[message_id]:
                await self._edit(
                    IncomingEdit(
                        guild_id, channel_id, message_id, incoming.text, incoming.author_id
                    )
                )
        for message_id in sorted(set(buffered) - seen):
            await self._delete_one(IncomingDelete(guild_id, channel_id, message_id))

    async def _buffered(self, channel_id: int) -> dict[int, str]:
        """The text by message id of the channel's open buffer (none without a store)."""
        if self._buffers is None:
            return {}
        found, _ = await self._buffers.restore_channel(channel_id)
        if found is None:
            return {}
        loaded = await self._buffers.load_buffer(found[0].id)
        return {} if loaded is None else {m.message_id: m.text for m in loaded.messages}

    async def _count_stored(self, acks: Sequence[Ack]) -> int:
        """Wait for the acks; count the messages stored and add them to the metric."""
        stored = 0
        for ack in acks:
            try:
                outcome = await ack.wait()
            except Exception:
                log.exception("caught-up message not captured")
                continue
            stored += outcome in (IngestOutcome.STORED, IngestOutcome.TRUNCATED)
        self._observer.caught_up(stored)
        return stored

    async def _release(self, channel_id: int) -> None:
        """Hand the channel's held live events to the router in arrival order; the hold ends
        when none is left."""
        while held := self._holds.release(channel_id):
            for item in held:
                if isinstance(item, IncomingMessage):
                    await self._capture(item)
                elif isinstance(item, IncomingEdit):
                    await self._edit(item)
                else:
                    await self._delete_one(item)

    # Commands and connection state ---------------------------------------------------------

    async def on_interaction(self, event: hikari.InteractionCreateEvent) -> None:
        """Answer ``/memory`` commands."""
        interaction = event.interaction
        if not isinstance(interaction, hikari.CommandInteraction):
            return
        if interaction.command_name != COMMAND_NAME:
            return
        try:
            await self._commands.handle(interaction)
        except hikari.HikariError:
            log.exception("command answer not delivered", guild_id=interaction.guild_id)

    async def on_shard_up(
        self, event: hikari.ShardConnectedEvent | hikari.ShardReadyEvent | hikari.ShardResumedEvent
    ) -> None:
        """A shard is connected: the gateway gauge reads 1."""
        self._connected.add(event.shard.id)
        self._observer.gateway_connected(True)

    async def on_shard_down(self, event: hikari.ShardDisconnectedEvent) -> None:
        """A shard lost its connection: the gauge reads 0 once no shard is connected."""
        self._connected.discard(event.shard.id)
        self._observer.gateway_connected(bool(self._connected))
