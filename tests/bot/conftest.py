"""The bot harness: a real hikari bot whose REST client talks to a fake Discord, and the app.

Events are built from raw gateway payloads by the bot's own event factory and dispatched
through its event manager to the subscribed :class:`~vivy.bot.gateway.Gateway`. The app is
the real one (thread-mode database, offline LLM) on asyncio, as in production.

Like the storage suite, the harness runs on every engine: a test taking ``engine`` runs once
on SQLite and once on PostgreSQL (the session's embedded server, a fresh schema per test),
unless it names fewer with ``pytest.mark.engines("sqlite")`` and says why. It reads what the
bot stored through a :class:`~tests.storage.Probe` (plain SQL with ``?`` placeholders) into
the same database.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import hikari
import pytest
from hikari.impl import GatewayShardImpl, RESTClientImpl
from prometheus_client import CollectorRegistry
from psycopg.conninfo import conninfo_to_dict

from tests.pg import engines_header, parametrize_engines, register_engines_marker
from tests.storage import PgProbe, Probe, SqliteProbe
from vivy.app import App, running_app
from vivy.bot.gateway import INTENTS, Gateway
from vivy.bot.reply import RateLimit, ReplyRateLimiter
from vivy.bot.wiring import gateway_for
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.errors import LLMUnavailable
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import ChatAnswer, ChatRequest, Usage
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import open_sqlite_database

from . import payloads
from .fake_discord import FakeDiscord
from .people import ALEX, CHANNEL, GUILD, JO, OTHER_BOT, OTHER_CHANNEL, SAM, TOKEN, VIVY, VIVY_USER

#: The bot's people are defined in ``people.py`` (the fleet benchmark uses them too) and
#: re-exported here for the bot tests.
__all__ = [
    "ALEX",
    "CHANNEL",
    "GUILD",
    "JO",
    "OTHER_BOT",
    "OTHER_CHANNEL",
    "SAM",
    "TOKEN",
    "VIVY",
    "VIVY_USER",
]

#: The engines every harness test runs on.


def uid(user: dict[str, Any]) -> int:
    """The id of a user payload."""
    return int(user["id"])


class ScriptedLLM(OfflineLLM):
    """The offline provider, recording chat requests; it can answer a fixed text or fail."""

    def __init__(self, *, answer: str | None = None, fail: bool = False) -> None:
        super().__init__()
        self.answer = answer
        self.fail = fail
        self.chats: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """Record the request, then answer as scripted."""
        self.chats.append(request)
        if self.fail:
            raise LLMUnavailable("scripted outage")
        if self.answer is not None:
            return ChatAnswer(self.answer, Usage(), "scripted", self.quality)
        return await super().chat(request)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``engines`` marker (as the storage suite does)."""
    register_engines_marker(config)


def pytest_report_header() -> str:
    """Name the engines the bot's end-to-end tests run on, so a missing one is never silent."""
    return engines_header("bot test")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test that takes ``engine`` on every engine its marker allows."""
    parametrize_engines(metafunc)


@dataclass(frozen=True)
class Engine:
    """Where a test's app keeps its data: a SQLite file under ``tmp_path``, or a fresh
    PostgreSQL schema at ``url``."""

    tmp_path: Path
    url: str | None = None

    def settings(self, **changes: Any) -> Settings:
        """Test settings on this engine's database (see :func:`make_settings`)."""
        return make_settings(self.tmp_path, database_url=self.url, **changes)

    def vivy_db(self) -> str:
        """The database as ``VIVY_DB`` names it to a child process: the SQLite file's path, or
        a ``postgresql://`` URL carrying the schema's connection parameters."""
        if self.url is None:
            return str(self.settings().database)
        params = conninfo_to_dict(self.url)
        user = quote(str(params.pop("user", "")), safe="")
        dbname = quote(str(params.pop("dbname")), safe="")
        return f"postgresql://{user}@/{dbname}?{urlencode(params, quote_via=quote)}"


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """The engine named by the test's parameter, on a fresh database."""
    if request.param == "postgres":
        return Engine(tmp_path, request.getfixturevalue("pg_uri"))
    assert request.param == "sqlite"
    return Engine(tmp_path)


@dataclass
class Harness:
    """A running app, a fake Discord, and the real hikari bot between them; ``probe`` reads
    the app's database."""

    bot: hikari.GatewayBot
    fake: FakeDiscord
    app: App
    gateway: Gateway
    llm: ScriptedLLM
    shard: GatewayShardImpl
    probe: Probe
    seen: list[int] = field(default_factory=list)

    async def dispatch(self, event: hikari.Event) -> None:
        """Dispatch an event through the bot's event manager and wait for the listeners."""
        await self.bot.event_manager.dispatch(event, return_tasks=True)

    async def post(self, payload: dict[str, Any]) -> None:
        """Deliver a MESSAGE_CREATE payload."""
        factory = self.bot.event_factory
        await self.dispatch(factory.deserialize_message_create_event(self.shard, payload))

    async def say(
        self,
        author: dict[str, Any],
        content: str,
        *,
        channel_id: int = CHANNEL,
        mentions: tuple[dict[str, Any], ...] = (),
        reply_to: dict[str, Any] | None = None,
        nick: str | None = None,
    ) -> int:
        """Post a guild message from ``author``; returns its id."""
        message_id = payloads.next_snowflake()
        await self.post(
            payloads.message(
                message_id,
                author,
                content,
                channel_id=channel_id,
                guild_id=GUILD,
                nick=nick,
                mentions=mentions,
                reply_to=int(reply_to["id"]) if reply_to else None,
                referenced=reply_to,
            )
        )
        self.seen.append(message_id)
        return message_id

    async def edit(self, author: dict[str, Any], message_id: int, content: str) -> None:
        """Deliver a MESSAGE_UPDATE with new content."""
        payload = payloads.message_update(
            message_id, author, content, channel_id=CHANNEL, guild_id=GUILD
        )
        factory = self.bot.event_factory
        await self.dispatch(factory.deserialize_message_update_event(self.shard, payload))

    async def delete(self, message_id: int) -> None:
        """Deliver a MESSAGE_DELETE."""
        payload = payloads.message_delete(message_id, channel_id=CHANNEL, guild_id=GUILD)
        factory = self.bot.event_factory
        await self.dispatch(factory.deserialize_message_delete_event(self.shard, payload))

    async def command(
        self,
        invoker: dict[str, Any],
        subcommand: str,
        options: dict[str, Any] | None = None,
        *,
        manager: bool = False,
        resolved_users: tuple[dict[str, Any], ...] = (),
    ) -> dict[str, Any]:
        """Run ``/memory <subcommand>`` and return the interaction callback body."""
        permissions = int(hikari.Permissions.MANAGE_GUILD) if manager else 0
        payload = payloads.interaction(
            application_id=VIVY,
            guild_id=GUILD,
            channel_id=CHANNEL,
            invoker=invoker,
            subcommand=subcommand,
            options=options,
            permissions=permissions,
            resolved_users=resolved_users,
        )
        before = len(self.fake.callbacks())
        factory = self.bot.event_factory
        await self.dispatch(factory.deserialize_interaction_create_event(self.shard, payload))
        callbacks = self.fake.callbacks()
        assert len(callbacks) == before + 1, "the interaction was not answered"
        return callbacks[-1]

    async def wait_for(self, condition: Callable[[Probe], Awaitable[bool]]) -> None:
        """Poll the database until ``condition`` holds, for at most ten seconds."""
        with anyio.fail_after(10):
            while True:
                if await condition(self.probe):
                    return
                await anyio.sleep(0.02)


async def buffered_texts(probe: Probe) -> list[str]:
    """Texts of every buffered message, in id order."""
    rows = await probe.rows("SELECT text FROM buffer_messages ORDER BY message_id")
    return [str(text) for (text,) in rows]


@dataclass(frozen=True, slots=True)
class StoppedClock(Clock):
    """A clock whose wall time stands still at its origin while the event loop runs on in
    real time: what the gateway reads from it (a rate limit's refill) is exact however long
    the machine takes between two messages."""

    def now(self) -> float:
        """The wall time the clock was started at."""
        return self.wall_origin


def make_settings(tmp_path: Path, **changes: Any) -> Settings:
    """Test settings on a temporary database (fixed 20-minute buffers, immediate profiles)."""
    base: dict[str, Any] = {
        "database": tmp_path / "vivy.db",
        "buffers": BufferSettings(inactivity_min_s=1200.0, inactivity_max_s=1200.0),
        "profile_delay_s": 0.0,
    }
    base.update(changes)
    return Settings(**base)


def quiet_bot(fake: FakeDiscord) -> hikari.GatewayBot:
    """A hikari bot with Vivy's intents pointed at ``fake``, without banner or log setup."""
    return hikari.GatewayBot(
        TOKEN,
        intents=INTENTS,
        banner=None,
        logs=None,
        rest_url=fake.url,
        suppress_optimization_warning=True,
    )


@contextmanager
def probe_into(engine: Engine) -> Iterator[Probe]:
    """A probe with a connection of its own into the engine's database (created and migrated
    if need be), which outlives the apps a test starts and stops on it. On SQLite it only
    reads, so a ``vivy run`` in another process can hold the file's writer lock."""
    if engine.url is None:
        Database.open(engine.settings().database).close()
        db = open_sqlite_database(engine.settings().database, read_only=True)
        try:
            yield SqliteProbe(db)
        finally:
            db.close()
        return
    pg = PgDatabase.open(engine.url)
    try:
        yield PgProbe(pg)
    finally:
        pg.close()


@pytest.fixture
def probe(engine: Engine) -> Iterator[Probe]:
    """A probe of its own into the engine's database, for tests that run ``vivy run``."""
    with probe_into(engine) as opened:
        yield opened


@contextmanager
def probing(app: App, engine: Engine) -> Iterator[Probe]:
    """A probe into the running app's database: through the app's own SQLite owner, or a
    second connection to its PostgreSQL schema."""
    if app.db is not None:
        yield SqliteProbe(app.db)
        return
    with probe_into(engine) as probe:
        yield probe


@asynccontextmanager
async def running_harness(
    engine: Engine,
    *,
    llm: ScriptedLLM | None = None,
    limit: RateLimit | None = None,
    clock: Callable[[float], Clock] = Clock.starting_at,
    **settings: Any,
) -> AsyncIterator[Harness]:
    """Start the fake Discord, a hikari bot pointed at it, the app on ``engine`` and the
    gateway; the app's clock is ``clock`` started at the system's time."""
    model = llm or ScriptedLLM()
    async with FakeDiscord(VIVY_USER, guild_id=GUILD) as fake:
        bot = quiet_bot(fake)
        shard = GatewayShardImpl(
            event_factory=bot.event_factory,
            event_manager=bot.event_manager,
            http_settings=bot.http_settings,
            proxy_settings=bot.proxy_settings,
            intents=INTENTS,
            token=TOKEN,
            url="wss://127.0.0.1:1",
        )
        rest = bot.rest
        assert isinstance(rest, RESTClientImpl)
        rest.start()  # REST without the gateway: the shards are never started
        try:
            async with running_app(
                engine.settings(**settings),
                clock=clock(time.time()),
                inline=False,
                llm=model,
                registry=CollectorRegistry(),
                own_user_id=VIVY,
                scheduler=False,
            ) as app:
                gateway = gateway_for(
                    app,
                    bot.rest,
                    own_user_id=VIVY,
                    limiter=ReplyRateLimiter(limit) if limit else None,
                )
                gateway.subscribe(bot.event_manager)
                with probing(app, engine) as probe:
                    yield Harness(bot, fake, app, gateway, model, shard, probe)
                gateway.unsubscribe(bot.event_manager)
        finally:
            await bot.rest.close()


@pytest.fixture
def anyio_backend() -> str:
    """asyncio in real time: hikari needs asyncio."""
    return "asyncio"
