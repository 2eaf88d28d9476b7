"""``vivy run``: no token means exit 2; with one it serves the gateway until SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.pg import embedded_postgres
from tests.storage import Probe
from vivy.commands import run
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.shards import parse_shard_ids
from vivy.storage.port import Store
from vivy.storage.postgres.stores import open_postgres_store

from . import payloads
from .conftest import (
    ALEX,
    CHANNEL,
    GUILD,
    TOKEN,
    VIVY,
    VIVY_USER,
    Engine,
    buffered_texts,
    make_settings,
    quiet_bot,
)
from .fake_discord import FakeDiscord


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv`` with a parser that has only ``vivy run`` registered."""
    parser = argparse.ArgumentParser(prog="vivy")
    commands = parser.add_subparsers(dest="command", required=True)
    run.register(commands)
    return parser.parse_args(argv)


def test_run_without_a_token_exits_2_and_points_to_the_demo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without DISCORD_TOKEN the command prints why and what to try, and exits with 2."""
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    args = parse(["run"])
    assert args.handler(args) == 2
    err = capsys.readouterr().err
    assert "DISCORD_TOKEN is not set" in err
    assert "vivy demo" in err


def test_run_accepts_guild_scopes() -> None:
    """``--guild`` may be repeated to register the commands in those servers only."""
    args = parse(["run", "--guild", "1", "--guild", "2"])
    assert args.guild == [1, 2]


def test_a_malformed_token_is_a_configuration_error() -> None:
    """A token that is not a Discord bot token is refused before any connection."""
    assert run.own_user_id("MTAwMA.fake.token") == 1000
    with pytest.raises(ConfigError, match="does not look like a Discord bot token"):
        run.own_user_id("not a token!!")


@pytest.fixture
def anyio_backend() -> str:
    """asyncio in real time: hikari needs asyncio."""
    return "asyncio"


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` every 10 ms until it holds (the caller bounds the wait)."""
    while True:
        if condition():
            return
        await anyio.sleep(0.01)


async def sigterm(before: Any) -> None:
    """Send this process SIGTERM once ``serve``'s receiver has replaced ``before`` (sent
    earlier, it would end the test process instead)."""
    await until(lambda: signal.getsignal(signal.SIGTERM) not in (before, signal.SIG_DFL))
    os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.anyio
async def test_serve_runs_the_bot_until_sigterm(engine: Engine, probe: Probe) -> None:
    """``serve`` connects, registers commands, captures and answers, and stops on SIGTERM."""
    settings = engine.settings(discord_token=TOKEN, metrics_port=0, shutdown_grace_s=5.0)
    before = signal.getsignal(signal.SIGTERM)
    async with FakeDiscord(VIVY_USER, guild_id=GUILD) as fake:
        bot = quiet_bot(fake)
        outcome: list[int] = []
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def serving() -> None:
                    outcome.append(await run.serve(settings, environ={}, bot=bot))

                tg.start_soon(serving)
                await fake.ready.wait()
                await until(lambda: any(r.method == "PUT" for r in fake.requests))
                message_id = payloads.next_snowflake()
                await fake.dispatch(
                    "MESSAGE_CREATE",
                    payloads.message(
                        message_id,
                        ALEX,
                        f"<@{VIVY}> hello from the gateway",
                        channel_id=CHANNEL,
                        guild_id=GUILD,
                        mentions=[VIVY_USER],
                    ),
                )
                await until(lambda: bool(fake.sent(CHANNEL)))
                await sigterm(before)
        await fake.gateway_closed.wait()
    assert outcome == [0]
    [put] = [r for r in fake.requests if r.method == "PUT"]
    assert put.path == f"/applications/{VIVY}/commands"
    [reply] = fake.sent(CHANNEL)
    assert reply["message_reference"]["message_id"] == str(message_id)
    assert await buffered_texts(probe) == [f"<@{VIVY}> hello from the gateway"]


@pytest.mark.anyio
async def test_serve_runs_every_shard_and_each_guild_arrives_on_its_own(
    engine: Engine, probe: Probe
) -> None:
    """With ``VIVY_SHARD_COUNT=3`` the bot identifies as shards 0, 1 and 2 of 3 (Discord
    recommends 1), and messages of guilds on different shards reach the same store."""
    settings = engine.settings(
        discord_token=TOKEN,
        metrics_port=0,
        shutdown_grace_s=5.0,
        shards=parse_shard_ids("0-2", 3),
    )
    before = signal.getsignal(signal.SIGTERM)
    guilds = [GUILD, *(GUILD + (step << 22) for step in (1, 2))]
    assert sorted((guild >> 22) % 3 for guild in guilds) == [0, 1, 2]
    async with FakeDiscord(VIVY_USER, guild_id=GUILD, shards=1) as fake:
        bot = quiet_bot(fake)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(run.serve, settings, environ={}, bot=bot))
                await fake.ready.wait()
                for n, guild in enumerate(guilds):
                    await fake.dispatch(
                        "MESSAGE_CREATE",
                        payloads.message(
                            payloads.next_snowflake(),
                            ALEX,
                            f"hello on shard {(guild >> 22) % 3} ({n})",
                            channel_id=CHANNEL + n,
                            guild_id=guild,
                        ),
                    )
                while True:  # each message is stored before its gateway acks it
                    if len(await buffered_texts(probe)) == 3:
                        break
                    await anyio.sleep(0.01)
                await sigterm(before)
        await fake.gateway_closed.wait()
    assert sorted(fake.identified) == [(0, 3), (1, 3), (2, 3)]
    assert sorted(s for s, name in fake.dispatched if name == "MESSAGE_CREATE") == [0, 1, 2]
    assert sorted(await buffered_texts(probe)) == [
        f"hello on shard {(guild >> 22) % 3} ({n})" for n, guild in enumerate(guilds)
    ]


async def _texts_on(store: Store) -> list[str]:
    """The texts of every open buffer's messages, read through the port."""
    found: list[str] = []
    for row in await store.buffers.open_buffer_rows():
        buffer = await store.buffers.load_buffer(row.id)
        found += [m.text for m in buffer.messages] if buffer is not None else []
    return found


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
@pytest.mark.anyio
async def test_serve_on_postgresql_remembers_through_the_gateway(
    tmp_path: Path, pg_uri: str
) -> None:
    """With ``VIVY_DB=postgresql://…`` the same ``vivy run`` stores the gateway's messages in
    PostgreSQL (and no SQLite file is made)."""
    before = signal.getsignal(signal.SIGTERM)
    url = "postgresql://vivy@db.example/vivy"
    assert Settings.from_env({"VIVY_DB": url}).database_url == url
    settings = make_settings(
        tmp_path, discord_token=TOKEN, metrics_port=0, shutdown_grace_s=5.0, database_url=pg_uri
    )
    async with FakeDiscord(VIVY_USER, guild_id=GUILD) as fake:
        bot = quiet_bot(fake)
        reader = open_postgres_store(pg_uri)
        try:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(partial(run.serve, settings, environ={}, bot=bot))
                    await fake.ready.wait()
                    await fake.dispatch(
                        "MESSAGE_CREATE",
                        payloads.message(
                            payloads.next_snowflake(),
                            ALEX,
                            "remembered in postgres",
                            channel_id=CHANNEL,
                            guild_id=GUILD,
                        ),
                    )
                    while True:  # the message is stored before the gateway acks it
                        if await _texts_on(reader):
                            break
                        await anyio.sleep(0.05)
                    await sigterm(before)
            assert await _texts_on(reader) == ["remembered in postgres"]
        finally:
            reader.close()
        await fake.gateway_closed.wait()
    assert not settings.database.exists()


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
@pytest.mark.anyio
async def test_two_processes_share_postgresql_each_leasing_its_shards(
    tmp_path: Path, pg_uri: str
) -> None:
    """Two ``vivy run`` serving shards 0 and 1 of 2 on one PostgreSQL database: each leases
    its shard, identifies as it, and stores the messages of its guilds; stopping them
    releases the leases."""
    guilds = [GUILD, GUILD + (1 << 22)]
    halves = [parse_shard_ids(ids, 2) for ids in ("0", "1")]
    owners = {guild: halves[(guild >> 22) % 2] for guild in guilds}
    assert sorted(s.ids[0] for s in owners.values()) == [0, 1]
    reader = open_postgres_store(pg_uri)
    assert reader.leases is not None
    try:
        async with FakeDiscord(VIVY_USER, guild_id=GUILD) as fake:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    for half in halves:
                        settings = make_settings(
                            tmp_path / half.describe(),
                            discord_token=TOKEN,
                            metrics_port=0,
                            shutdown_grace_s=5.0,
                            database_url=pg_uri,
                            shards=half,
                        )
                        tg.start_soon(partial(run.serve, settings, environ={}, bot=quiet_bot(fake)))
                    await until(lambda: len(fake.identified) == 2)
                    for n, guild in enumerate(guilds):
                        await fake.dispatch(
                            "MESSAGE_CREATE",
                            payloads.message(
                                payloads.next_snowflake(),
                                ALEX,
                                f"for the owner of shard {(guild >> 22) % 2}",
                                channel_id=CHANNEL + n,
                                guild_id=guild,
                            ),
                        )
                    while True:  # each message is stored before its gateway acks it
                        if len(await _texts_on(reader)) == 2:
                            break
                        await anyio.sleep(0.05)
                    holders = await reader.leases.holders([0, 1])
                    tg.cancel_scope.cancel()
        assert sorted(fake.identified) == [(0, 2), (1, 2)]
        assert sorted(await _texts_on(reader)) == [
            "for the owner of shard 0",
            "for the owner of shard 1",
        ]
        assert [h.shard_id for h in holders] == [0, 1]
        assert len({h.owner for h in holders}) == 2
        assert all(h.expires_at == 0 for h in await reader.leases.holders([0, 1]))
    finally:
        reader.close()


@pytest.mark.anyio
async def test_a_shard_told_to_reconnect_resumes_and_misses_nothing(
    engine: Engine, probe: Probe
) -> None:
    """Discord's RECONNECT (op 7): hikari resumes the session on a new socket (no second
    IDENTIFY), the fake replays what was dispatched meanwhile, and Vivy stores it."""
    settings = engine.settings(discord_token=TOKEN, metrics_port=0, shutdown_grace_s=5.0)
    texts = ["before the reconnect", "during the reconnect", "after the resume"]
    before = signal.getsignal(signal.SIGTERM)
    async with FakeDiscord(VIVY_USER, guild_id=GUILD) as fake:
        bot = quiet_bot(fake)

        async def post(text: str) -> None:
            payload = payloads.message(
                payloads.next_snowflake(), ALEX, text, channel_id=CHANNEL, guild_id=GUILD
            )
            assert await fake.post(payload)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(run.serve, settings, environ={}, bot=bot))
                await fake.ready.wait()
                await post(texts[0])
                while True:  # each message is stored before its gateway acks it
                    if len(await buffered_texts(probe)) == 1:
                        break
                    await anyio.sleep(0.01)
                await fake.request_reconnect(0)
                await post(texts[1])  # queued in the session until the bot resumes it
                await until(lambda: fake.resumed == [0])
                await post(texts[2])
                while True:  # each message is stored before its gateway acks it
                    if len(await buffered_texts(probe)) == 3:
                        break
                    await anyio.sleep(0.01)
                await sigterm(before)
        await fake.gateway_closed.wait()
    assert fake.identified == [(0, 1)]
    assert await buffered_texts(probe) == texts
