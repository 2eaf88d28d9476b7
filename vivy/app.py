"""The composition root: builds every actor from the settings and runs them together.

``running_app`` opens the database, checks that its vectors were made by the configured
embedding model, wires the metrics, the LLM, the router, the NoteWriter, the ProfileUpdaters
and the Scheduler, and runs them under one task group until the block ends. Cancelling the
group is a graceful stop: open buffers and pending work are already durable and resume on the
next start.

A process of a fleet (``lease``: the shards it runs, on PostgreSQL) first takes its shards'
leases through the LeaseKeeper; its store serves only those shards' guilds and fences every
buffer write with the leases' epochs, and the app stops when a lease is lost or could not be
renewed in time (:class:`~vivy.actors.lease_keeper.SelfFenced`).

A database that does not answer at start (a server restarting, refusing connections) is
waited for with a warning every few seconds; once running, every actor waits out an outage
itself (:mod:`vivy.actors.outage`), so an unavailable database never ends the app.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import structlog
from prometheus_client import CollectorRegistry

from vivy import __version__
from vivy.actors.frontier import WriteFrontier
from vivy.actors.lease_keeper import LeaseKeeper
from vivy.actors.note_writer import NoteWriter
from vivy.actors.outage import Outage, until_stored
from vivy.actors.profile_updater import ProfileUpdaters
from vivy.actors.router import Router
from vivy.actors.scheduler import Scheduler
from vivy.clock import Clock
from vivy.config import Settings
from vivy.errors import ConfigError, DatabaseUnavailable, EndpointUnreachable
from vivy.llm import check_llm, make_llm
from vivy.llm.metered import MeteredLLM
from vivy.llm.port import LLM, ModelTier
from vivy.memory.database import EmbeddingModel
from vivy.metrics import ActorKind, Metrics
from vivy.metrics.observer import MetricsObserver
from vivy.shards import Fence, Shards
from vivy.state.gate import CapturePolicy
from vivy.storage.engines import open_engine
from vivy.storage.port import Store
from vivy.storage.sqlite.db import Database

__all__ = [
    "App",
    "bind_gauges",
    "check_embedding_model",
    "database_size",
    "new_lease_owner",
    "require_embedding_model",
    "running_app",
]

log = structlog.get_logger(__name__)


@dataclass
class App:
    """The running system."""

    settings: Settings
    #: Every storage area, over the SQLite owner ``db``.
    store: Store
    #: The SQLite owner under ``store`` (None on PostgreSQL); nothing in Vivy calls it past
    #: the port, tests read rows through it that the port does not show.
    db: Database | None
    clock: Clock
    llm: LLM
    metrics: Metrics
    router: Router
    notes: NoteWriter
    profiles: ProfileUpdaters
    scheduler: Scheduler
    observer: MetricsObserver
    frontier: WriteFrontier


async def check_embedding_model(store: Store, model: str, dimension: int) -> None:
    """Record the embedding model on first use; refuse a different one while notes exist,
    in one line that names the settings to change back or the command that re-embeds."""
    stored = await store.meta.adopt_embedding_model(model, dimension)
    if stored is not None:
        raise _other_model(stored, model, dimension)


async def require_embedding_model(store: Store, model: str, dimension: int) -> None:
    """Refuse, as :func:`check_embedding_model` does, to search notes embedded by another
    model than ``model`` at ``dimension``; reads only."""
    stored = await store.meta.other_embedding_model(model, dimension)
    if stored is not None:
        raise _other_model(stored, model, dimension)


def _other_model(stored: EmbeddingModel, model: str, dimension: int) -> ConfigError:
    """The one-line refusal of a database whose notes another embedding model made."""
    setting = (
        f"VIVY_OPENAI_EMBEDDING_DIMENSION={stored.dimension}"
        if stored.model == model
        else "VIVY_EMBEDDING_PROVIDER and its embedding model setting"
    )
    return ConfigError(
        f"the notes in this database were embedded with {stored.model} ({stored.dimension} "
        f"dimensions) but the configured embedding model is {model} ({dimension} "
        f"dimensions); run `vivy reembed` first, or set {setting} back"
    )


def database_size(path: Path) -> int:
    """Bytes the SQLite database occupies on disk: the main file and its write-ahead log.

    Read from the file system, not through the connection, so a scrape never queues behind
    the actors' database work.
    """
    total = 0
    for name in (str(path), f"{path}-wal"):
        try:
            total += os.stat(name).st_size
        except OSError:
            continue  # not created yet, or an in-memory database
    return total


def bind_gauges(app: App) -> None:
    """Make the backlog, size and inbox gauges read the actors' own counts at scrape time.

    Nothing refreshes them on a timer, so an idle process (or a replay crossing months of
    virtual time) never wakes for them; a scrape reads the current value.
    """
    metrics = app.metrics
    metrics.outbox_buffers_pending.set_function(lambda: app.notes.backlog)
    metrics.outbox_profile_updates_pending.set_function(lambda: app.profiles.pending)
    if app.db is not None:  # a PostgreSQL server reports its own size
        metrics.database_size.set_function(lambda: database_size(app.settings.database))
    metrics.actor_inbox_depth.labels(actor=ActorKind.CHANNEL).set_function(
        lambda: app.router.statistics().queued_items
    )
    metrics.actor_inbox_depth.labels(actor=ActorKind.NOTE_WRITER).set_function(
        lambda: app.notes.backlog
    )


def new_lease_owner() -> str:
    """A name for this process in the lease table: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


async def _open_engine(
    settings: Settings, *, inline: bool, fence: Fence | None
) -> tuple[Store, Database | None]:
    """Open the database, waiting (with a warning every few seconds) while it does not
    answer; a refusal that waiting cannot cure (a wrong password or name) is raised."""
    outage = Outage("database at start")
    while True:
        try:
            if inline:
                opened = open_engine(settings.target, inline=True, fence=fence)
            else:
                opened = await anyio.to_thread.run_sync(
                    partial(open_engine, settings.target, inline=False, fence=fence)
                )
        except DatabaseUnavailable as exc:
            await anyio.sleep(outage.failed(exc))
            continue
        outage.recovered()
        return opened


@asynccontextmanager
async def running_app(
    settings: Settings,
    *,
    clock: Clock,
    inline: bool = False,
    llm: LLM | None = None,
    registry: CollectorRegistry | None = None,
    own_user_id: int | None = None,
    environ: Mapping[str, str] | None = None,
    scheduler: bool = True,
    note_concurrency: int = 2,
    profile_concurrency: int | None = None,
    lease: Shards | None = None,
    lease_owner: str | None = None,
) -> AsyncIterator[App]:
    """Run the whole capture and memory pipeline until the block ends.

    The LLM is ``llm`` when given, else the one ``settings`` configure (Gemini with
    ``settings.gemini_key``), or ``environ`` when that is given instead.
    ``note_concurrency`` and ``profile_concurrency`` (default: the setting) bound the notes
    and profile updates written at once; the importer raises them to keep model calls in
    flight. ``lease`` makes this process a member of a fleet sharing the PostgreSQL database:
    it runs those shards only, under their leases, as ``lease_owner`` (a fresh name by
    default; a process leasing its shards again keeps its name, so its own unreleased leases
    do not hold it back). ``inline`` runs the database's calls
    and the offline provider's embeddings on the event loop instead of worker threads: for
    tests under trio's MockClock, where a task waiting on a thread counts as idle, and the
    importer's replay.
    """
    fence = None
    if lease is not None:
        if settings.database_url is None:
            raise ConfigError("shard leases need a PostgreSQL database (VIVY_DB=postgresql://...)")
        fence = Fence(lease, lease_owner or new_lease_owner())
    if llm is None:
        configured = Settings.from_env(environ) if environ is not None else settings
        try:
            await check_llm(configured)
        except EndpointUnreachable as error:  # work waits in the outbox until it answers
            log.warning("llm endpoint unreachable", detail=str(error))
    store, db = await _open_engine(settings, inline=inline, fence=fence)
    metrics = Metrics(registry or CollectorRegistry())
    observer = MetricsObserver(metrics)
    model: LLM = (
        MeteredLLM(llm, metrics, clock)
        if llm is not None
        else make_llm(
            environ if environ is not None else settings,
            meter=metrics,
            clock=clock,
            embed_on_thread=not inline,
        )
    )
    metrics.set_build_info(version=__version__, llm_quality=model.quality)
    try:
        await until_stored(
            partial(check_embedding_model, store, model.embedding_model, model.dimension),
            what="embedding model check",
        )
        frontier = WriteFrontier()
        profiles = ProfileUpdaters(
            store=store,
            llm=model,
            clock=clock,
            observer=observer,
            concurrency=profile_concurrency or settings.profile_concurrency,
            frontier=frontier,
            window_s=settings.profile_delay_s,
        )
        notes = NoteWriter(
            store=store,
            llm=model,
            clock=clock,
            profiles=profiles,
            observer=observer,
            min_messages=settings.min_note_messages,
            profile_delay_s=settings.profile_delay_s,
            keep_evidence=settings.evidence_days != 0,
            concurrency=note_concurrency,
            frontier=frontier,
        )
        router = Router(
            store=store,
            clock=clock,
            buffers=settings.buffers,
            policy=CapturePolicy(
                own_user_id=own_user_id,
                allowed_guilds=settings.allowed_guilds,
                blacklisted_users=settings.blacklisted_users,
                blacklisted_channels=settings.blacklisted_channels,
                capture_enabled=settings.capture_enabled,
            ),
            hand_off=notes,
            observer=observer,
        )
        nightly = Scheduler(
            store=store,
            llm=model,
            clock=clock,
            observer=observer,
            zone=settings.zone,
            min_cluster_notes=settings.min_cluster_notes,
            catchup_limit_s=settings.catchup_time_limit_s,
            evidence_days=settings.evidence_days,
        )
        app = App(
            settings,
            store,
            db,
            clock,
            model,
            metrics,
            router,
            notes,
            profiles,
            nightly,
            observer,
            frontier,
        )
        observer.listeners.append(
            lambda report: notes.request_rescan() if report == "actor_restarted" else None
        )
        bind_gauges(app)
        async with anyio.create_task_group() as tg:
            if fence is not None:
                assert store.leases is not None  # a fence is only made for PostgreSQL
                keeper = LeaseKeeper(
                    store.leases, fence, clock=clock, ttl_s=settings.lease_s, observer=observer
                )
                await tg.start(keeper.run)
            await tg.start(profiles.run)
            await tg.start(notes.run)
            await tg.start(router.run)
            if scheduler:
                await tg.start(nightly.run)
            log.info(
                "vivy started",
                llm=model.quality,
                flash=model.model_for(ModelTier.FLASH),
                database="postgresql" if settings.database_url else str(settings.database),
            )
            yield app
            tg.cancel_scope.cancel()
    finally:
        try:
            with anyio.CancelScope(shield=True):
                await model.aclose()
        finally:
            store.close()
