"""Catch-up from Discord's history: nothing sent while Vivy is down is lost.

The holds and the selection of channels are tested alone; the catch-up itself runs through real
hikari against the fake Discord: ``vivy run`` (``run.serve``) is started, stopped while
members go on writing (the fake keeps each channel's history), and started again.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from structlog.testing import capture_logs

from tests.pg import embedded_postgres
from tests.storage import Probe
from vivy.bot.catchup import (
    ChannelCatchUp,
    ChannelHolds,
    GuildCatchUp,
    HoldStatistics,
    channels_to_catch_up,
)
from vivy.commands import run
from vivy.config import BufferSettings, Settings
from vivy.shards import parse_shard_ids
from vivy.storage.port import Store
from vivy.storage.postgres.stores import open_postgres_store

from . import payloads
from .conftest import (
    ALEX,
    CHANNEL,
    GUILD,
    OTHER_BOT,
    OTHER_CHANNEL,
    SAM,
    TOKEN,
    VIVY,
    VIVY_USER,
    Engine,
    buffered_texts,
    quiet_bot,
    running_harness,
)
from .fake_discord import FakeDiscord

#: A second guild, on the other shard of two.
OTHER_GUILD = GUILD + (1 << 22)
#: A channel of the second guild.
FAR_CHANNEL = 3_000_000_000_000_000_005

CAUGHT_UP = "guild caught up from history"


# The holds, alone ----------------------------------------------------------------------------


def test_live_events_of_a_held_channel_wait_and_come_out_in_order() -> None:
    """Events of a held channel are kept in arrival order; other channels pass."""
    holds: ChannelHolds[str] = ChannelHolds()
    owner = object()
    assert holds.hold([1, 2, 1], owner) == [1, 2]
    assert holds.offer(1, "a") and holds.offer(1, "b") and holds.offer(2, "c")
    assert not holds.offer(3, "d")
    assert holds.statistics() == HoldStatistics(channels=2, held_events=3)
    assert holds.release(1) == ["a", "b"]
    assert holds.is_held(1), "the hold lasts until a release finds nothing left"
    assert holds.offer(1, "e")
    assert holds.release(1) == ["e"]
    assert holds.release(1) == []
    assert not holds.is_held(1) and not holds.offer(1, "f")
    assert holds.statistics() == HoldStatistics(channels=1, held_events=1)


def test_a_channel_already_catching_up_is_left_to_its_catch_up() -> None:
    """A second hold on a held channel takes nothing; abandoning drops only one's own holds."""
    holds: ChannelHolds[str] = ChannelHolds()
    first, second = object(), object()
    assert holds.hold([1], first) == [1]
    assert holds.hold([1, 2], second) == [2]
    holds.offer(1, "a")
    holds.offer(2, "b")
    assert holds.abandon(second) == 1
    assert holds.is_held(1) and not holds.is_held(2)
    assert holds.abandon(first) == 1
    assert holds.statistics() == HoldStatistics(channels=0, held_events=0)


@pytest.mark.parametrize(
    ("channels", "marks", "blacklisted", "due"),
    [
        ([1, 2, 3], {1: 10, 3: 30}, (), {1: 10, 3: 30}),
        ([1, 2], {}, (), {}),
        ([1, 2], {1: 10, 2: 0}, (), {1: 10}),
        ([1, 2], {1: 10, 2: 20}, (2,), {1: 10}),
        ([2, 1, 2], {1: 10, 2: 20}, (), {2: 20, 1: 10}),
    ],
)
def test_only_channels_with_a_stored_message_are_read(
    channels: list[int], marks: dict[int, int], blacklisted: tuple[int, ...], due: dict[int, int]
) -> None:
    """A channel is read after its highest stored id, unless nothing of it is stored or it is
    blacklisted."""
    assert channels_to_catch_up(channels, marks, blacklisted) == due


@pytest.mark.parametrize(
    ("marks", "latest", "due"),
    [
        # Channel 2 has nothing stored but a message newer than the guild's last stored one.
        ({1: 10, 3: 30}, {2: 31}, {1: 10, 2: 30, 3: 30}),
        # Its newest message is older than what Vivy last heard from the guild: nothing new.
        ({1: 10, 3: 30}, {2: 25}, {1: 10, 3: 30}),
        # Nothing of the guild is stored: a guild Vivy never heard is not read.
        ({}, {1: 5, 2: 6}, {}),
        # A channel without Discord's newest id is not guessed at.
        ({1: 10}, {}, {1: 10}),
    ],
)
def test_a_channel_with_nothing_stored_is_read_after_the_guilds_last_stored_message(
    marks: dict[int, int], latest: dict[int, int], due: dict[int, int]
) -> None:
    """A new channel (or one whose first messages came while Vivy was down) is read after
    the guild's highest stored id when Discord announces a newer message in it."""
    assert channels_to_catch_up([1, 2, 3], marks, (), latest) == due


def test_a_guild_report_sums_its_channels() -> None:
    """The guild's log line counts channels, messages, capped and unreadable channels."""
    summary = GuildCatchUp.of(
        [
            ChannelCatchUp(1, read=5, stored=4),
            ChannelCatchUp(2, read=9, stored=9, capped=True),
            ChannelCatchUp(3, error="ForbiddenError"),
        ]
    )
    assert summary == GuildCatchUp(channels=3, read=14, stored=13, capped=1, unreadable=1)


# Through hikari and the fake Discord ---------------------------------------------------------


def said(
    author: dict[str, Any], text: str, channel_id: int, guild_id: int = GUILD
) -> dict[str, Any]:
    """A fresh MESSAGE_CREATE payload."""
    return payloads.message(
        payloads.next_snowflake(), author, text, channel_id=channel_id, guild_id=guild_id
    )


def ids(messages: list[dict[str, Any]]) -> list[int]:
    """The ids of message payloads."""
    return [int(m["id"]) for m in messages]


async def until(condition: Callable[[], bool], *, within: float = 15.0) -> None:
    """Poll ``condition`` every 10 ms until it holds; fail after ``within`` seconds."""
    with anyio.fail_after(within):
        while True:
            if condition():
                return
            await anyio.sleep(0.01)


#: A channel's stored message ids in the order Vivy keeps them, in one statement (one
#: snapshot, so a note written meanwhile neither hides nor repeats a message).
SEQUENCE = (
    "SELECT message_id FROM ("
    " SELECT 0 AS part, n.id AS holder, l.message_id FROM note_lines l"
    " JOIN interaction_notes n ON n.id = l.note_id WHERE n.channel_id = ?"
    " UNION ALL"
    " SELECT 1 AS part, b.id AS holder, m.message_id FROM buffer_messages m"
    " JOIN channel_buffers b ON b.id = m.buffer_id WHERE b.channel_id = ?"
    ") AS kept ORDER BY part, holder, message_id"
)


async def stored(probe: Probe, channel_id: int) -> list[int]:
    """The channel's stored message ids in the order Vivy keeps them: each note's messages,
    notes in the order written, then each buffer's (a message stored after a newer one of
    another buffer would show out of order)."""
    return [int(str(r[0])) for r in await probe.rows(SEQUENCE, channel_id, channel_id)]


async def note_count(probe: Probe, channel_id: int) -> int:
    """How many notes the channel has."""
    return await probe.count(
        "SELECT COUNT(*) FROM interaction_notes WHERE channel_id = ?", channel_id
    )


async def until_kept(
    probe: Probe,
    *,
    messages: Mapping[int, int] | None = None,
    notes: Mapping[int, int] | None = None,
    within: float = 15.0,
) -> None:
    """Poll every 10 ms until each channel of ``messages`` has that many stored messages and
    each of ``notes`` that many notes; fail after ``within`` seconds."""
    with anyio.fail_after(within):
        while True:
            counts = [(len(await stored(probe, c)), n) for c, n in (messages or {}).items()]
            counts += [(await note_count(probe, c), n) for c, n in (notes or {}).items()]
            if all(found == wanted for found, wanted in counts):
                return
            await anyio.sleep(0.01)


async def until_logged(log_file: Path, event: str, within: float = 15.0) -> None:
    """Poll every 10 ms until ``log_file`` holds a JSON line of ``event``; fail after
    ``within`` seconds."""
    with anyio.fail_after(within):
        while True:
            # The child may be writing the last line: only whole lines are read.
            lines = (await anyio.Path(log_file).read_text()).split("\n")[:-1]
            if event in {json.loads(line)["event"] for line in lines}:
                return
            await anyio.sleep(0.01)


def settings_for(engine: Engine, *, cap: int = 100, **changes: Any) -> Settings:
    """``vivy run`` settings on the engine's database, buffers closing at ``cap`` messages."""
    return engine.settings(
        discord_token=TOKEN,
        metrics_port=0,
        shutdown_grace_s=5.0,
        buffers=BufferSettings(inactivity_min_s=1200.0, inactivity_max_s=1200.0, cap=cap),
        **changes,
    )


@asynccontextmanager
async def vivy_running(settings: Settings, fake: FakeDiscord) -> AsyncIterator[None]:
    """``vivy run`` against ``fake`` from READY until the block ends, then stopped (as by
    SIGTERM: the gateway closes, then the app)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(run.serve, settings, environ={}, bot=quiet_bot(fake)))
        with anyio.fail_after(15):
            await fake.ready.wait()
        yield
        tg.cancel_scope.cancel()
    with anyio.fail_after(15):
        await fake.gateway_closed.wait()


def caught_up(
    logs: Sequence[MutableMapping[str, Any]], guild_id: int = GUILD
) -> MutableMapping[str, Any] | None:
    """The guild's catch-up log line, once written."""
    return next((e for e in logs if e["event"] == CAUGHT_UP and e["guild_id"] == guild_id), None)


@pytest.mark.anyio
async def test_messages_sent_while_vivy_is_down_are_stored_once_in_order(
    engine: Engine, probe: Probe
) -> None:
    """Two guilds on two shards: what members wrote while Vivy was down is read from each
    channel's history on the next start, stored once and in order (a bot's message is
    filtered), and completes the conversation, which gets its note. Each guild's name, as
    Discord gives it, is stored for the commands and the page."""
    settings = settings_for(engine, cap=6, shards=parse_shard_ids("0-1", 2))
    guilds = {GUILD: [CHANNEL], OTHER_GUILD: [FAR_CHANNEL]}
    where = {CHANNEL: GUILD, FAR_CHANNEL: OTHER_GUILD}
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds=guilds) as fake:
        before = {
            c: [said(ALEX if n % 2 else SAM, f"before {n}", c, g) for n in range(3)]
            for c, g in where.items()
        }
        async with vivy_running(settings, fake):
            for sent in before.values():
                for message in sent:
                    assert await fake.post(message)
            await until_kept(probe, messages={c: 3 for c in where})
        down = {
            c: [said(SAM if n % 2 else ALEX, f"while down {n}", c, g) for n in range(3)]
            for c, g in where.items()
        }
        for channel_id, sent in down.items():
            fake.add_history(sent[0])
            fake.add_history(said(OTHER_BOT, "a bot talks", channel_id, where[channel_id]))
            for message in sent[1:]:
                assert not await fake.post(message), "nobody listens while Vivy is down"
        with capture_logs() as logs:
            async with vivy_running(settings, fake):
                await until_kept(probe, notes={c: 1 for c in where})
                await until(lambda: all(caught_up(logs, g) for g in guilds))
    for channel_id in where:
        assert await stored(probe, channel_id) == ids(before[channel_id] + down[channel_id])
        assert fake.history_reads(channel_id)[0]["after"] == before[channel_id][-1]["id"]
    for guild_id in guilds:
        line = caught_up(logs, guild_id)
        assert line is not None
        assert (line["channels"], line["read"], line["stored"]) == (1, 4, 3)
        assert (line["capped"], line["unreadable"]) == (0, 0)
        name = await probe.scalar("SELECT name FROM guild_names WHERE guild_id = ?", guild_id)
        assert name == f"guild-{guild_id}"
    assert fake.sent() == []


@pytest.mark.anyio
async def test_a_channel_first_written_while_vivy_is_down_is_caught_up(
    engine: Engine, probe: Probe
) -> None:
    """A channel Vivy never stored a message of, whose first messages came while it was down,
    is read from the guild's last stored message on (GUILD_CREATE names its newest message)."""
    settings = settings_for(engine)
    async with FakeDiscord(
        VIVY_USER, guild_id=GUILD, guilds={GUILD: [CHANNEL, OTHER_CHANNEL]}
    ) as fake:
        async with vivy_running(settings, fake):
            assert await fake.post(said(ALEX, "in the known channel", CHANNEL))
            await until_kept(probe, messages={CHANNEL: 1})
        down = [said(SAM, f"a new channel's line {n}", OTHER_CHANNEL) for n in range(3)]
        for message in down:
            assert not await fake.post(message)
        async with vivy_running(settings, fake):
            await until_kept(probe, messages={OTHER_CHANNEL: 3})
    assert await stored(probe, OTHER_CHANNEL) == ids(down)
    assert len(await stored(probe, CHANNEL)) == 1


@pytest.mark.anyio
async def test_live_messages_during_a_catch_up_are_neither_lost_nor_reordered(
    engine: Engine, probe: Probe
) -> None:
    """Live messages arriving while the channel's history is still on its way wait for it:
    the older messages are stored first, although the live ones would have filled and closed
    the buffer (whose watermark would then have dropped the older ones)."""
    settings = settings_for(engine, cap=4)
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds={GUILD: [CHANNEL]}) as fake:
        before = [said(ALEX, "before 1", CHANNEL), said(SAM, "before 2", CHANNEL)]
        async with vivy_running(settings, fake):
            for message in before:
                assert await fake.post(message)
            await until_kept(probe, messages={CHANNEL: 2})
        down = [said(SAM, f"while down {n}", CHANNEL) for n in range(3)]
        for message in down:
            fake.add_history(message)
        gate = fake.history_gates[CHANNEL] = anyio.Event()
        live = [
            said(ALEX, "live and first", CHANNEL),
            payloads.message(
                payloads.next_snowflake(),
                SAM,
                f"<@{VIVY}> live and asking",
                channel_id=CHANNEL,
                guild_id=GUILD,
                mentions=[VIVY_USER],
            ),
        ]
        with capture_logs() as logs:
            async with vivy_running(settings, fake):
                await until(lambda: bool(fake.history_reads(CHANNEL)))  # its page is computed
                for message in live:
                    assert await fake.post(message)
                # A live question is answered at once: both live messages reached the bot.
                await until(lambda: bool(fake.sent(CHANNEL)))
                assert await stored(probe, CHANNEL) == ids(before), "the live ones wait"
                gate.set()
                await until(lambda: caught_up(logs) is not None)
                await until_kept(probe, messages={CHANNEL: 7})
                await until_kept(probe, notes={CHANNEL: 1})  # the first four
    assert await stored(probe, CHANNEL) == ids(before + down + live)
    [reply] = fake.sent(CHANNEL)
    assert reply["message_reference"]["message_id"] == live[1]["id"]


@pytest.mark.anyio
async def test_a_channel_whose_history_is_forbidden_is_skipped(
    engine: Engine, probe: Probe
) -> None:
    """A 403 on one channel's history is logged and skips it; the other channel is caught up
    and the skipped one goes on capturing live messages."""
    settings = settings_for(engine)
    guilds = {GUILD: [CHANNEL, OTHER_CHANNEL]}
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds=guilds) as fake:
        before = {c: said(ALEX, f"before in {c}", c) for c in (CHANNEL, OTHER_CHANNEL)}
        async with vivy_running(settings, fake):
            for message in before.values():
                assert await fake.post(message)
            await until_kept(probe, messages={c: 1 for c in before})
        down = {c: [said(SAM, f"down {n}", c) for n in range(2)] for c in before}
        for sent in down.values():
            for message in sent:
                fake.add_history(message)
        fake.forbidden.add(OTHER_CHANNEL)
        with capture_logs() as logs:
            async with vivy_running(settings, fake):
                await until(lambda: caught_up(logs) is not None)
                later = said(ALEX, "live after the skip", OTHER_CHANNEL)
                assert await fake.post(later)
                await until_kept(probe, messages={OTHER_CHANNEL: 2})
    assert await stored(probe, CHANNEL) == ids([before[CHANNEL], *down[CHANNEL]])
    assert await stored(probe, OTHER_CHANNEL) == ids([before[OTHER_CHANNEL], later])
    assert fake.history_reads(OTHER_CHANNEL), "the forbidden channel was tried"
    [skipped] = [e for e in logs if e["event"] == "channel history not readable; skipped"]
    assert (skipped["channel_id"], skipped["error"]) == (OTHER_CHANNEL, "ForbiddenError")
    line = caught_up(logs)
    assert line is not None
    assert (line["channels"], line["stored"], line["unreadable"]) == (2, 2, 1)


@pytest.mark.anyio
async def test_a_caught_up_mention_of_vivy_gets_no_reply(engine: Engine, probe: Probe) -> None:
    """A question to Vivy asked while it was down is remembered but not answered (it would
    come hours late); a live question after the catch-up is answered."""
    settings = settings_for(engine)
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds={GUILD: [CHANNEL]}) as fake:
        first = said(ALEX, "hello", CHANNEL)
        async with vivy_running(settings, fake):
            assert await fake.post(first)
            await until_kept(probe, messages={CHANNEL: 1})
        asked = payloads.message(
            payloads.next_snowflake(),
            SAM,
            f"<@{VIVY}> are you there?",
            channel_id=CHANNEL,
            guild_id=GUILD,
            mentions=[VIVY_USER],
        )
        fake.add_history(asked)
        with capture_logs() as logs:
            async with vivy_running(settings, fake):
                await until(lambda: caught_up(logs) is not None)
                live = payloads.message(
                    payloads.next_snowflake(),
                    ALEX,
                    f"<@{VIVY}> and now?",
                    channel_id=CHANNEL,
                    guild_id=GUILD,
                    mentions=[VIVY_USER],
                )
                assert await fake.post(live)
                await until(lambda: bool(fake.sent(CHANNEL)))
                await until_kept(probe, messages={CHANNEL: 3})
    assert await stored(probe, CHANNEL) == ids([first, asked, live])
    [reply] = fake.sent(CHANNEL)
    assert reply["message_reference"]["message_id"] == live["id"]


@pytest.mark.anyio
async def test_no_history_is_read_with_the_catch_up_off(engine: Engine, probe: Probe) -> None:
    """``VIVY_CATCHUP_MESSAGES=0`` turns the catch-up off: no history is read and live
    messages are captured at once."""
    settings = settings_for(engine, catchup_messages=0)
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds={GUILD: [CHANNEL]}) as fake:
        first = said(ALEX, "hello", CHANNEL)
        async with vivy_running(settings, fake):
            assert await fake.post(first)
            await until_kept(probe, messages={CHANNEL: 1})
        fake.add_history(said(SAM, "while down", CHANNEL))
        async with vivy_running(settings, fake):
            live = said(ALEX, "live", CHANNEL)
            assert await fake.post(live)
            await until_kept(probe, messages={CHANNEL: 2})
    assert await stored(probe, CHANNEL) == ids([first, live])
    assert fake.history_reads(CHANNEL) == []


@pytest.mark.anyio
async def test_catch_up_filters_counts_and_stops_at_the_cap(engine: Engine) -> None:
    """The catch-up goes through the live filters (bots, opted-out members), counts what it
    stored in ``vivy_catchup_messages_total``, reads at most ``VIVY_CATCHUP_MESSAGES`` and
    releases the channel's hold."""
    async with running_harness(engine, catchup_messages=4) as h:
        before = said(ALEX, "before", CHANNEL)
        h.fake.add_history(before)  # Discord has it: the catch-up keeps it
        await h.post(before)
        await h.command(SAM, "opt-out")
        history = [
            said(ALEX, "one", CHANNEL),
            said(OTHER_BOT, "a bot", CHANNEL),
            said(SAM, "opted out", CHANNEL),
            said(ALEX, "two", CHANNEL),
            said(ALEX, "past the cap", CHANNEL),
        ]
        for message in history:
            h.fake.add_history(message)
        owner = object()
        assert h.gateway.holds.hold([CHANNEL, OTHER_CHANNEL], owner) == [CHANNEL, OTHER_CHANNEL]
        summary = await h.gateway.catch_up_guild(GUILD, [CHANNEL, OTHER_CHANNEL])
        assert summary == GuildCatchUp(channels=1, read=4, stored=2, capped=1, unreadable=0)
        assert h.gateway.holds.statistics() == HoldStatistics(channels=0, held_events=0)
        registry = h.app.metrics.registry
        assert registry.get_sample_value("vivy_catchup_messages_total") == 2.0
        assert await buffered_texts(h.probe) == ["before", "one", "two"]
        assert h.fake.sent() == []
        assert not h.fake.history_reads(OTHER_CHANNEL), "a channel never stored is not read"


@pytest.mark.anyio
async def test_held_creates_edits_and_deletes_are_released_in_order(engine: Engine) -> None:
    """Live creates, edits and deletes of a channel catching up reach nothing until its
    catch-up ends, then the router in arrival order (an edit after its create, a delete
    after both)."""
    async with running_harness(engine) as h:
        owner = object()
        assert h.gateway.holds.hold([CHANNEL], owner) == [CHANNEL]
        kept = await h.say(ALEX, "first draft")
        dropped = await h.say(SAM, "soon deleted")
        await h.edit(ALEX, kept, "final words")
        await h.delete(dropped)
        assert h.gateway.holds.statistics() == HoldStatistics(channels=1, held_events=4)
        assert await buffered_texts(h.probe) == []
        summary = await h.gateway.catch_up_guild(GUILD, [CHANNEL])
        assert summary.channels == 0, "nothing of the channel was stored: no history is read"
        assert await buffered_texts(h.probe) == ["final words"]
        assert h.gateway.holds.statistics() == HoldStatistics(channels=0, held_events=0)


@pytest.mark.engines("sqlite")  # the fake's paging through hikari's REST: no storage involved
@pytest.mark.anyio
async def test_hikari_pages_the_fakes_history_as_discords(engine: Engine) -> None:
    """The fake serves history as Discord does, so hikari's paging holds: ``after`` walks
    forward 100 at a time (each page newest first, which hikari reverses), ``before`` walks
    back, and a limit above 100 is refused."""
    async with running_harness(engine) as h:
        history = [said(ALEX, f"m{n}", CHANNEL) for n in range(250)]
        for message in reversed(history):  # insertion order does not matter, ids do
            h.fake.add_history(message)
        every = ids(history)
        after = [int(m.id) async for m in h.bot.rest.fetch_messages(CHANNEL, after=every[9])]
        assert after == every[10:]
        assert [q["after"] for q in h.fake.history_reads(CHANNEL)] == [
            str(every[i]) for i in (9, 109, 209, 249)
        ]
        before = [int(m.id) async for m in h.bot.rest.fetch_messages(CHANNEL, before=every[200])]
        assert before == every[:200][::-1]
        newest = await h.bot.rest.fetch_messages(CHANNEL).limit(3)
        assert [int(m.id) for m in newest] == every[:-4:-1]
        assert all(m.guild_id is None and m.member is None for m in newest)
        url = f"{h.fake.url}/channels/{CHANNEL}/messages"
        async with aiohttp.ClientSession() as session:
            for limit, status in (("100", 200), ("101", 400), ("0", 400)):
                async with session.get(url, params={"limit": limit}) as response:
                    assert response.status == status


async def _texts_on(store: Store) -> list[str]:
    """The texts of every open buffer's messages, read through the port."""
    found: list[str] = []
    for row in await store.buffers.open_buffer_rows():
        buffer = await store.buffers.load_buffer(row.id)
        found += [m.text for m in buffer.messages] if buffer is not None else []
    return found


async def until_stored(store: Store, count: int) -> None:
    """Poll the store every 50 ms until its open buffers hold ``count`` messages (15 s at
    most)."""
    with anyio.fail_after(15):
        while True:
            if len(await _texts_on(store)) >= count:
                return
            await anyio.sleep(0.05)


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
@pytest.mark.anyio
async def test_catch_up_on_postgresql(tmp_path: Path, pg_uri: str) -> None:
    """On PostgreSQL the catch-up reads the stored positions through the same port."""
    settings = settings_for(Engine(tmp_path, pg_uri))
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds={GUILD: [CHANNEL]}) as fake:
        reader = open_postgres_store(pg_uri)
        try:
            async with vivy_running(settings, fake):
                assert await fake.post(said(ALEX, "before", CHANNEL))
                await until_stored(reader, 1)
            for n in range(2):
                fake.add_history(said(SAM, f"while down {n}", CHANNEL))
            async with vivy_running(settings, fake):
                await until_stored(reader, 3)
            assert await _texts_on(reader) == ["before", "while down 0", "while down 1"]
        finally:
            reader.close()


def _free_port() -> int:
    """A TCP port free on 127.0.0.1 a moment ago (for a child's metrics server)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.anyio
async def test_a_sigkilled_vivy_run_loses_nothing(engine: Engine, probe: Probe) -> None:
    """``vivy run`` in a child process is SIGKILLed while messages stream in (some received
    but not stored yet) and members go on writing while it is down; the next ``vivy run``
    catches the channel up: every message is stored, once. (A channel with no stored message
    at all has no position to catch up from: see the README.)"""
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, guilds={GUILD: [CHANNEL]}) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VIVY_")}
        env.pop("GEMINI_API_KEY", None)
        env.pop("MEMORY_GEMINI_TOKEN", None)
        env |= {
            "DISCORD_TOKEN": TOKEN,
            "VIVY_DISCORD_REST_URL": fake.url,
            "VIVY_DB": engine.vivy_db(),
            # On PostgreSQL the killed process's shard leases lapse this soon (3 s at least).
            "VIVY_LEASE_SECONDS": "3",
        }

        async def start() -> anyio.abc.Process:
            env["VIVY_METRICS_PORT"] = str(_free_port())
            child = await anyio.open_process(
                [sys.executable, "-m", "vivy.cli", "run"],
                env=env,
                stdout=None,
                stderr=(engine.tmp_path / "vivy.log").open("a"),
            )
            with anyio.fail_after(30):
                await fake.ready.wait()
            return child

        messages = [said(ALEX if n % 2 else SAM, f"message {n}", CHANNEL) for n in range(300)]
        first = await start()
        assert await fake.post(messages[0])
        await until_kept(probe, messages={CHANNEL: 1})  # the channel is known: it has a mark
        for message in messages[1:200]:
            await fake.post(message)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        with anyio.fail_after(15):
            await fake.gateway_closed.wait()
        for message in messages[200:]:
            assert not await fake.post(message)
        second = await start()
        try:
            await until_kept(probe, messages={CHANNEL: len(messages)}, within=30)
            # Each history page is stored as it arrives; the guild's summary is logged after.
            await until_logged(engine.tmp_path / "vivy.log", "guild caught up from history")
        finally:
            second.terminate()
            await second.wait()
    assert await stored(probe, CHANNEL) == ids(messages)
    assert len(fake.history_reads(CHANNEL)) >= 3, "300 messages: at least three pages"
    # The log at the default level is one format: Vivy's events and hikari's records alike.
    events = [json.loads(line) for line in (engine.tmp_path / "vivy.log").read_text().splitlines()]
    assert {"vivy started", "guild caught up from history"} <= {e["event"] for e in events}
    assert any(e.get("logger", "").startswith("hikari") for e in events)
