"""``vivy run``: connect to Discord and remember its conversations.

The metrics port is bound and Discord asked for the bot's user first, so a port in use, a
wrong token or an unreachable Discord ends it before anything is written. Then the app
(buffers, notes, profiles, nightly job) starts, the operator API is served, and the hikari
gateway connects, so no event arrives before the router can take it. SIGTERM or SIGINT
stops it gracefully within ``VIVY_SHUTDOWN_GRACE_SECONDS``: the gateway closes, then the
app's task group is cancelled (open buffers and pending work are already durable and resume
on the next start). On PostgreSQL the process first leases its shards (``--shard-ids``, else
all of them) and stops when another process takes a lease over. A process that could not
renew its leases in time (the database unreachable) does not exit: it closes its gateway
shards, stops the app, and starts both again once it holds the leases again. Without
``DISCORD_TOKEN`` it exits with status 2 and points to ``vivy demo``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import structlog

from vivy.commands.db import add_database_option
from vivy.config import Settings
from vivy.errors import ConfigError

if TYPE_CHECKING:
    import hikari
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

    from vivy.clock import Clock
    from vivy.shards import Shards
    from vivy.web.server import OperatorServer

__all__ = ["NO_TOKEN_MESSAGE", "make_bot", "own_user_id", "register", "run_bot", "serve"]

log = structlog.get_logger(__name__)

#: Printed (with exit status 2) when no Discord token is configured.
NO_TOKEN_MESSAGE = (
    "vivy run: DISCORD_TOKEN is not set, so Vivy cannot connect to Discord: set it to your "
    "bot's token (Discord developer portal > your app > Bot), or run vivy demo to watch Vivy "
    "remember a conversation offline"
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy run``."""
    parser = commands.add_parser(
        "run",
        help="connect to Discord and remember conversations (needs DISCORD_TOKEN)",
        description="Run the Discord bot with memory: capture conversations, write notes and "
        "profiles, run the nightly job at midnight, and answer mentions with what it remembers. "
        "Serves /metrics and the operator API on VIVY_METRICS_HOST:VIVY_METRICS_PORT. On SQLite "
        "one process runs every shard; on PostgreSQL each process leases the shards it runs.",
    )
    parser.add_argument(
        "--guild",
        type=int,
        action="append",
        default=[],
        metavar="ID",
        help="register the /memory commands in this server only (repeatable; instant) "
        "instead of globally; defaults to VIVY_ALLOWED_GUILDS when set",
    )
    parser.add_argument(
        "--shard-ids",
        metavar="IDS",
        help="the gateway shards to run, as ids and ranges (0-3,8); as VIVY_SHARD_IDS",
    )
    parser.add_argument(
        "--shard-count",
        metavar="N",
        help="the bot's total number of shards; as VIVY_SHARD_COUNT",
    )
    add_database_option(parser)
    parser.set_defaults(
        handler=lambda args: run_bot(
            _with_options(os.environ, args.shard_ids, args.shard_count, args.db),
            guild_ids=tuple(args.guild),
        )
    )


def _with_options(
    environ: Mapping[str, str], shard_ids: str | None, shard_count: str | None, db: str | None
) -> Mapping[str, str]:
    """``environ`` with the command line's shard and database options in place of the
    variables they stand for."""
    given = {"VIVY_SHARD_IDS": shard_ids, "VIVY_SHARD_COUNT": shard_count, "VIVY_DB": db}
    return {**environ, **{name: value for name, value in given.items() if value is not None}}


def run_bot(environ: Mapping[str, str], *, guild_ids: Sequence[int] = ()) -> int:
    """Run the bot until stopped; returns the exit code (2 without a token)."""
    settings = Settings.from_env(environ)
    if not settings.discord_token:
        print(NO_TOKEN_MESSAGE, file=sys.stderr)
        return 2
    import anyio

    from vivy.logs import configure_logging

    configure_logging(settings.log_level or "info")
    return anyio.run(_serve, settings, environ, tuple(guild_ids), backend="asyncio")


async def _serve(settings: Settings, environ: Mapping[str, str], guild_ids: Sequence[int]) -> int:
    return await serve(settings, environ=environ, guild_ids=guild_ids)


async def check_discord(token: str, *, rest_url: str | None = None) -> None:
    """Fetch the bot's own user once, so a wrong token or an unreachable Discord is reported
    (after hikari's retries) before anything is started or written."""
    import hikari

    rest = hikari.RESTApp(url=rest_url)
    await rest.start()
    try:
        # hikari's retries are the check's own business: its answer is Vivy's one line.
        with _quiet("hikari.rest"):
            async with rest.acquire(token, hikari.TokenType.BOT) as client:
                await client.fetch_my_user()
    except hikari.UnauthorizedError as exc:
        raise ConfigError(
            "Discord rejected DISCORD_TOKEN (401 Unauthorized); check the bot token"
        ) from exc
    except (hikari.HikariError, OSError) as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(
            f"cannot connect to Discord ({reason}), retries exhausted; check the network "
            "(and VIVY_DISCORD_REST_URL if set), then start again"
        ) from exc
    finally:
        await rest.close()


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Drop the warnings of logger ``name`` while the block runs (errors still show)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def make_bot(token: str, *, rest_url: str | None = None) -> hikari.GatewayBot:
    """The hikari bot with Vivy's intents (guilds, guild messages, message content).

    hikari leaves logging to Vivy (its records go through Vivy's one log format) and skips
    its advice to run Python with ``-O``, which is not an operator's concern.
    """
    import hikari

    from vivy.bot.gateway import INTENTS

    return hikari.GatewayBot(
        token,
        intents=INTENTS,
        banner=None,
        rest_url=rest_url,
        logs=None,
        suppress_optimization_warning=True,
    )


def own_user_id(token: str) -> int:
    """The bot's user id, read from its token (no network needed)."""
    import hikari

    try:
        return int(hikari.applications.get_token_id(token))
    except ValueError:
        raise ConfigError("DISCORD_TOKEN does not look like a Discord bot token") from None


async def serve(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    guild_ids: Sequence[int] = (),
    bot: hikari.GatewayBot | None = None,
) -> int:
    """Run app, metrics server and gateway together until a signal or the gateway stops.

    The metrics port is bound first and, unless ``bot`` is given, Discord is asked for the
    bot's user, so a port in use, a wrong token or an unreachable Discord stops Vivy before
    the app starts (and writes).
    """
    import anyio
    from prometheus_client import CollectorRegistry

    from vivy.clock import Clock
    from vivy.web.server import OperatorServer

    assert settings.discord_token is not None
    me = own_user_id(settings.discord_token)
    clock = Clock.wall()  # the one wall-clock read; all else uses `clock`
    registry = CollectorRegistry()
    # The port is taken before the app starts, so a port in use stops Vivy before it writes.
    server = OperatorServer(
        registry,
        host=settings.metrics_host,
        port=settings.metrics_port,
        bearer_token=settings.api_token,
        page_tokens=settings.page_tokens,
        guilds=settings.allowed_guilds,
    )
    server.bind()
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve)
            if bot is None:  # Vivy's own bot: check Discord before the app starts and writes
                await check_discord(settings.discord_token, rest_url=settings.discord_rest_url)
                bot = make_bot(settings.discord_token, rest_url=settings.discord_rest_url)
            log.info("serving /metrics, the operator API and the memory page", url=server.url)
            await _serve_app(settings, clock, server, registry, me, bot, environ, guild_ids)
            tg.cancel_scope.cancel()
    finally:
        server.stop()
    log.info("vivy stopped")
    return 0


async def _serve_app(
    settings: Settings,
    clock: Clock,
    server: OperatorServer,
    registry: CollectorRegistry,
    me: int,
    bot: hikari.GatewayBot,
    environ: Mapping[str, str] | None,
    guild_ids: Sequence[int],
) -> None:
    """The app and the gateway, with the operator API and the memory page served once the
    database is open; started again, under the same lease owner, after the app fenced itself
    (its leases could not be renewed in time)."""
    from prometheus_client import CollectorRegistry

    from vivy.app import new_lease_owner

    current = _CurrentMetrics()
    registry.register(current)
    owner = new_lease_owner()
    while True:
        current.registry = CollectorRegistry()
        try:
            await _serve_round(
                settings, clock, server, current.registry, me, bot, environ, guild_ids, owner
            )
            return
        except BaseException as exc:
            if not _self_fenced(exc):
                raise
        log.warning("leasing the shards again once the database answers", owner=owner)


class _CurrentMetrics:
    """A collector that reports the registry of the app running now (each start of the app
    registers its metrics afresh)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry

        self.registry = CollectorRegistry()

    def collect(self) -> Iterable[Metric]:
        """The current app's metrics."""
        return self.registry.collect()


def _self_fenced(exc: BaseException) -> bool:
    """Whether ``exc`` (or every error of its group) says the app fenced itself: the
    leases ran out unrenewed, and writes refused since then."""
    from vivy.actors.lease_keeper import SelfFenced
    from vivy.errors import LeaseLost

    leaves = _leaves(exc)
    return any(isinstance(e, SelfFenced) for e in leaves) and all(
        isinstance(e, LeaseLost) for e in leaves
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, or ``exc`` itself."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _serve_round(
    settings: Settings,
    clock: Clock,
    server: OperatorServer,
    registry: CollectorRegistry,
    me: int,
    bot: hikari.GatewayBot,
    environ: Mapping[str, str] | None,
    guild_ids: Sequence[int],
    owner: str,
) -> None:
    """One run of the app and the gateway, until a signal, the gateway's end, or the app's
    end (a lease lost)."""
    import anyio

    from vivy.app import running_app
    from vivy.bot.wiring import gateway_for, reply_retriever
    from vivy.heap import settle_heap
    from vivy.memory.members import BufferedRef
    from vivy.retrieval.operator import OperatorStore
    from vivy.shards import ALL_SHARDS
    from vivy.state.gate import IncomingDelete
    from vivy.web.memory import StoreMemory

    # On PostgreSQL every process leases its shards (all of them without VIVY_SHARD_IDS), so
    # processes sharing the database never write the same channel.
    lease = (settings.shards or ALL_SHARDS) if settings.database_url is not None else None
    async with running_app(
        settings,
        clock=clock,
        inline=False,
        own_user_id=me,
        environ=environ,
        registry=registry,
        lease=lease,
        lease_owner=owner,
    ) as app:
        # The operator API, the page and the replies search with one retriever (one ranking
        # for all three); the page empties its cache on a correction, so the next reply's
        # memory has none of what was removed.
        retriever = reply_retriever(app)
        server.serve_api(OperatorStore(app.store.search, retriever))

        async def drop(guild_id: int, refs: Sequence[BufferedRef]) -> None:
            for ref in refs:
                await app.router.delete(IncomingDelete(guild_id, ref.channel_id, ref.message_id))

        memory = StoreMemory(
            app.store,
            retriever,
            now=app.clock.now,
            drop_messages=drop,
            on_change=retriever.clear_cache,
        )
        server.serve_page(memory)
        gateway = gateway_for(app, bot.rest, own_user_id=me, cache=bot.cache, retriever=retriever)
        gateway.subscribe(bot.event_manager)
        try:
            await _start(bot, settings.shards)
            connected = bot.get_me()
            if connected is not None and int(connected.id) != me:
                log.warning("the token's user id differs from the connected user")
            scope = list(guild_ids) or sorted(settings.allowed_guilds or ())
            await _register(bot, scope, me)
            settle_heap()
            await _wait_for_stop(bot)
        finally:
            gateway.unsubscribe(bot.event_manager)
            app.metrics.gateway_connected.set(0)
            with anyio.CancelScope(shield=True), anyio.move_on_after(settings.shutdown_grace_s):
                if bot.is_alive:
                    await bot.close()


async def _start(bot: hikari.GatewayBot, shards: Shards | None) -> None:
    import hikari

    try:
        if shards is None:
            await bot.start(check_for_updates=False)
        else:
            await bot.start(
                check_for_updates=False, shard_ids=list(shards.ids), shard_count=shards.count
            )
    except hikari.UnauthorizedError as exc:
        raise ConfigError(
            "Discord rejected DISCORD_TOKEN (401 Unauthorized); check the bot token"
        ) from exc
    except hikari.HikariError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(
            f"cannot connect to Discord ({reason}), retries exhausted; check the network "
            "(and VIVY_DISCORD_REST_URL if set), then start again"
        ) from exc


async def _register(bot: hikari.GatewayBot, guild_ids: Sequence[int], fallback_id: int) -> None:
    """Register ``/memory``; a failure is logged and the bot runs on without it.

    The application id comes from Discord; if it cannot be read, the bot's user id (the
    same for every application made since 2016) stands in.
    """
    from vivy.bot.commands import register_commands

    try:
        application_id = int((await bot.rest.fetch_application()).id)
    except Exception:  # hikari errors, or a payload this hikari cannot parse
        log.warning("application not readable; using the bot's user id", exc_info=True)
        application_id = fallback_id
    try:
        await register_commands(bot.rest, application_id, guild_ids)
    except Exception:
        log.exception("slash commands not registered")
        return
    log.info("slash commands registered", guilds=len(guild_ids) or "global")


async def _wait_for_stop(bot: hikari.GatewayBot) -> None:
    """Return on SIGTERM or SIGINT, or when the gateway closes by itself."""
    import anyio

    async with anyio.create_task_group() as tg:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                async for signum in received:
                    log.info("stopping", signal=signal.Signals(signum).name)
                    break
            tg.cancel_scope.cancel()

        async def on_close() -> None:
            await bot.join()
            log.warning("the Discord gateway closed")
            tg.cancel_scope.cancel()

        tg.start_soon(on_signal)
        tg.start_soon(on_close)
