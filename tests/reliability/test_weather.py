"""The running bot through a real PostgreSQL restart: nothing accepted is lost, nothing exits.

The app and the hikari bot run as in the bot tests (``tests/bot/conftest.py``: the fake
Discord, the real app on asyncio) on the session's embedded PostgreSQL, which the test stops
(fast or immediate) and starts again with ``pg_ctl``. Events that arrive while it is down are
dispatched without waiting for them, as hikari's gateway does; the test waits for them only
after the server is back. Real time runs here, because a server must restart; nothing is
asserted about how long anything took.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import hikari
import psycopg
import pytest
from structlog.testing import capture_logs

from tests.bot import payloads
from tests.bot.conftest import (
    ALEX,
    CHANNEL,
    GUILD,
    SAM,
    TOKEN,
    VIVY,
    VIVY_USER,
    Engine,
    Harness,
    make_settings,
    quiet_bot,
    running_harness,
)
from tests.bot.fake_discord import FakeDiscord
from tests.faultproxy import through
from tests.pg import embedded_postgres
from vivy.bot.wiring import gateway_for
from vivy.commands import run
from vivy.errors import DatabaseUnavailable
from vivy.storage.port import Store
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.stores import open_postgres_store

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        embedded_postgres is None, reason="embedded_postgres is not installed (the dev extra)"
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    """asyncio in real time: hikari needs asyncio, and the server restarts in real time."""
    return "asyncio"


@pytest.fixture
def durable(pg_server: Any) -> Iterator[Any]:
    """The session's server with commits written through before they return, for the length
    of the test: an immediate stop is a crash, and the session's server otherwise commits
    asynchronously (its durability is off to run the suite faster)."""
    uri = pg_server.get_uri()
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET synchronous_commit = on")
        admin.execute("SELECT pg_reload_conf()")
    try:
        yield pg_server
    finally:
        with psycopg.connect(pg_server.get_uri(), autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET synchronous_commit = off")
            admin.execute("SELECT pg_reload_conf()")


def stop(server: Any, mode: str) -> None:
    """Stop the embedded server (``fast``: sessions ended cleanly; ``immediate``: killed)."""
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    pg_ctl(["-w", "-m", mode, "stop"], pgdata=server.pgdata, user=server.system_user)


def start(server: Any) -> None:
    """Start the embedded server again on the same data and socket."""
    server.ensure_postgres_running()


def dispatch_now(h: Harness, kind: str, payload: dict[str, Any]) -> asyncio.Future[Any]:
    """Dispatch a gateway event without waiting for its listeners (as the gateway does)."""
    factory = h.bot.event_factory
    event: hikari.Event
    if kind == "create":
        event = factory.deserialize_message_create_event(h.shard, payload)
    elif kind == "update":
        event = factory.deserialize_message_update_event(h.shard, payload)
    else:
        event = factory.deserialize_message_delete_event(h.shard, payload)
    tasks = h.bot.event_manager.dispatch(event, return_tasks=True)
    assert tasks is not None
    return tasks


async def stored_texts(h: Harness) -> list[str]:
    """Buffered texts in id order, read again if the probe's connection died in the restart."""
    for _ in range(2):
        try:
            rows = await h.probe.rows("SELECT text FROM buffer_messages ORDER BY message_id")
        except DatabaseUnavailable:
            continue
        return [str(text) for (text,) in rows]
    raise AssertionError("the database did not answer the probe")


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_messages_edits_and_deletions_during_a_restart_are_all_stored(
    tmp_path: Path, pg_uri: str, durable: Any, mode: str
) -> None:
    """Messages, an edit and a deletion that arrive while PostgreSQL is down are stored, in
    order, once it is back; the app keeps running throughout."""
    async with running_harness(Engine(tmp_path, pg_uri)) as h:
        first = await h.say(ALEX, "before the restart: I live in Austni")
        await anyio.to_thread.run_sync(stop, durable, mode)
        try:
            during = [payloads.next_snowflake() for _ in range(2)]
            pending = [
                dispatch_now(
                    h,
                    "create",
                    payloads.message(
                        during[0], SAM, "during the restart", channel_id=CHANNEL, guild_id=GUILD
                    ),
                ),
                dispatch_now(
                    h,
                    "create",
                    payloads.message(
                        during[1], ALEX, "still during it", channel_id=CHANNEL, guild_id=GUILD
                    ),
                ),
                dispatch_now(
                    h,
                    "update",
                    payloads.message_update(
                        first,
                        ALEX,
                        "before the restart: I live in Austin",
                        channel_id=CHANNEL,
                        guild_id=GUILD,
                    ),
                ),
                dispatch_now(
                    h,
                    "delete",
                    payloads.message_delete(during[0], channel_id=CHANNEL, guild_id=GUILD),
                ),
            ]
            await anyio.lowlevel.checkpoint()
            assert not any(f.done() for f in pending)  # waiting for the database, not dropped
        finally:
            await anyio.to_thread.run_sync(start, durable)
        with anyio.fail_after(60):
            await asyncio.gather(*pending)
        after = await h.say(SAM, "after the restart")
        assert await stored_texts(h) == [
            "before the restart: I live in Austin",
            "still during it",
            "after the restart",
        ]
        assert after > during[1]


async def test_messages_past_the_backlog_bound_are_read_from_history_when_it_drains(
    tmp_path: Path, pg_uri: str, durable: Any
) -> None:
    """With room for one event waiting, the second and third messages sent while PostgreSQL
    is down are not taken; once the first is stored, the channel is read from Discord's
    history after the first skipped one, and all of them are stored in order."""
    async with running_harness(Engine(tmp_path, pg_uri)) as h:
        h.gateway.unsubscribe(h.bot.event_manager)
        bounded = gateway_for(h.app, h.bot.rest, own_user_id=VIVY, max_unstored=1)
        bounded.subscribe(h.bot.event_manager)
        try:
            before = message_from(ALEX, "before the restart")
            h.fake.add_history(before)
            await h.post(before)
            await anyio.to_thread.run_sync(stop, durable, "fast")
            try:
                pending, ids = [], []
                for author, text in ((SAM, "one"), (ALEX, "two"), (SAM, "three")):
                    payload = payloads.message(
                        payloads.next_snowflake(), author, text, channel_id=CHANNEL, guild_id=GUILD
                    )
                    ids.append(int(payload["id"]))
                    h.fake.add_history(payload)  # Discord keeps every message
                    pending.append(dispatch_now(h, "create", payload))
                await anyio.lowlevel.checkpoint()
                assert h.fake.history_reads(CHANNEL) == []
            finally:
                await anyio.to_thread.run_sync(start, durable)
            with anyio.fail_after(60):  # the first one's listener runs the catch-up
                await asyncio.gather(*pending)
            assert await stored_texts(h) == ["before the restart", "one", "two", "three"]
            assert h.fake.history_reads(CHANNEL)[0]["after"] == str(ids[1] - 1)
        finally:
            bounded.unsubscribe(h.bot.event_manager)
            h.gateway.subscribe(h.bot.event_manager)


async def until(condition: Callable[[], bool], *, within: float) -> None:
    """Poll ``condition`` every 10 ms until it holds; fail after ``within`` seconds."""
    with anyio.fail_after(within):
        while True:
            if condition():
                return
            await anyio.sleep(0.01)


async def stored_on(reader: Store) -> list[str]:
    """The texts of every open buffer's messages, through a store of the test's own."""
    found: list[str] = []
    for row in await reader.buffers.open_buffer_rows():
        buffer = await reader.buffers.load_buffer(row.id)
        found += [m.text for m in buffer.messages] if buffer is not None else []
    return found


async def test_vivy_run_cut_off_from_postgresql_fences_itself_and_comes_back(
    tmp_path: Path, pg_uri: str
) -> None:
    """``vivy run`` behind a black hole stops renewing, says in one line that it stops its
    shards, closes its gateway before its leases expire, and once the network heals leases
    them again, reconnects and stores new messages; it never exits."""
    PgDatabase.open(pg_uri).close()
    reader = open_postgres_store(pg_uri)
    with through(pg_uri) as (proxy, proxied):
        settings = make_settings(
            tmp_path,
            discord_token=TOKEN,
            metrics_port=0,
            shutdown_grace_s=5.0,
            database_url=proxied,
            lease_s=12.0,
        )
        before = signal.getsignal(signal.SIGTERM)
        async with FakeDiscord(VIVY_USER, guild_id=GUILD) as fake:
            ended: list[int] = []

            async def serve() -> None:
                ended.append(await run.serve(settings, environ={}, bot=quiet_bot(fake)))

            try:
                with capture_logs() as logs, anyio.fail_after(120):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(serve)
                        await fake.ready.wait()
                        await fake.dispatch(
                            "MESSAGE_CREATE", message_from(ALEX, "before the partition")
                        )
                        await until_stored(reader, 1)
                        proxy.black_hole()
                        await until(fake.gateway_closed.is_set, within=60)
                        fenced = [e for e in logs if e["log_level"] == "error"]
                        proxy.heal()
                        await until(lambda: len(fake.identified) == 2, within=60)
                        await fake.dispatch(
                            "MESSAGE_CREATE", message_from(SAM, "after the partition")
                        )
                        await until_stored(reader, 2)
                        assert ended == []  # still running
                        # Sent before serve's own receiver is in place, SIGTERM would end
                        # the test process itself.
                        await until(
                            lambda: (
                                signal.getsignal(signal.SIGTERM) not in (before, signal.SIG_DFL)
                            ),
                            within=10,
                        )
                        os.kill(os.getpid(), signal.SIGTERM)
            finally:
                reader.close()
    assert ended == [0]
    [line] = fenced
    assert line["event"].startswith("shard leases not renewed within their term")
    assert any(e["event"] == "shard leases taken" for e in logs[logs.index(line) :])


def message_from(author: dict[str, Any], text: str) -> dict[str, Any]:
    """A MESSAGE_CREATE payload in the test channel."""
    return payloads.message(
        payloads.next_snowflake(), author, text, channel_id=CHANNEL, guild_id=GUILD
    )


async def until_stored(reader: Store, count: int) -> None:
    """Wait until ``count`` messages are buffered."""
    with anyio.fail_after(60):
        while True:
            if len(await stored_on(reader)) >= count:
                return
            await anyio.sleep(0.05)


async def test_a_catch_up_brings_the_edits_and_deletions_made_while_nobody_listened(
    tmp_path: Path, pg_uri: str
) -> None:
    """Discord's history, read by a catch-up, has one buffered message edited, one deleted
    and one new: afterwards the stored channel is what Discord shows."""
    async with running_harness(Engine(tmp_path, pg_uri)) as h:
        sent = []
        for author, text in ((ALEX, "kept as it was"), (SAM, "I live in Austni")):
            payload = message_from(author, text)
            h.fake.add_history(payload)
            await h.post(payload)
            sent.append(payload)
        await h.post(message_from(ALEX, "oops, wrong channel"))  # deleted: not in history
        h.fake.add_history({**sent[1], "content": "I live in Austin"})
        h.fake.add_history(message_from(SAM, "sent while nobody listened"))
        summary = await h.gateway.catch_up_guild(GUILD, [CHANNEL])
        assert (summary.read, summary.stored) == (1, 1)
        assert await stored_texts(h) == [
            "kept as it was",
            "I live in Austin",
            "sent while nobody listened",
        ]
