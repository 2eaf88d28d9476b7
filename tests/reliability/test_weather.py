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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import psycopg
import pytest

from tests.bot import payloads
from tests.bot.conftest import (
    ALEX,
    CHANNEL,
    GUILD,
    SAM,
    VIVY,
    Engine,
    Harness,
    running_harness,
)
from tests.pg import embedded_postgres
from vivy.bot.wiring import gateway_for
from vivy.errors import DatabaseUnavailable

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
    from embedded_postgres._commands import pg_ctl

    pg_ctl(["-w", "-m", mode, "stop"], pgdata=server.pgdata, user=server.system_user)


def start(server: Any) -> None:
    """Start the embedded server again on the same data and socket."""
    server.ensure_postgres_running()


def dispatch_now(h: Harness, kind: str, payload: dict[str, Any]) -> asyncio.Future[Any]:
    """Dispatch a gateway event without waiting for its listeners (as the gateway does)."""
    factory = h.bot.event_factory
    make = {
        "create": factory.deserialize_message_create_event,
        "update": factory.deserialize_message_update_event,
        "delete": factory.deserialize_message_delete_event,
    }[kind]
    return h.bot.event_manager.dispatch(make(h.shard, payload), return_tasks=True)


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
            await h.say(ALEX, "before the restart")
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
