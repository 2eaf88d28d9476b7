"""The replay of an import: validated history through the live pipeline on virtual time.

:func:`replay` feeds the messages of an :class:`~vivy.importer.export.ExportBatch` through
the same pipeline as live traffic (``App.router.ingest``), under trio's ``MockClock`` with an
inline database. The clock starts at the first message no earlier run fed and sleeps until
each message's time, so buffers close by inactivity and max age exactly as they would have
live; virtual time jumps instantly while every task waits. Up to
``VIVY_IMPORT_CONCURRENCY`` model calls run at once (virtual time runs on while they wait on
the network, so the replay keeps closing buffers). Afterwards the pipeline finishes every
note and profile update (woken by each piece of work done, never by a polling timer), then
the nightly job runs for the days the import covered (:mod:`vivy.importer.nightly`).

Every step is durable and every message already fed is skipped (see :class:`_Stored`), so
an interrupted import is finished by running it again, at a cost in proportion to what is
left. Work that keeps failing (the LLM is down) is left in the durable outbox after
:data:`MAX_FAILED_ATTEMPTS` tries, and the report says so; the nightly job then waits for a
later run. A network LLM must be wrapped in :class:`~vivy.llm.bridge.RealTimeLLM`: under the
mock clock its time-outs would otherwise expire in virtual time the moment every task waits
on the network.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TypeVar

import anyio
import trio
import trio.testing
from prometheus_client import CollectorRegistry
from trio.testing import MockClock

from vivy.app import App, running_app
from vivy.clock import Clock, system_now
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.importer.export import ExportBatch, ExportMessage, load_exports
from vivy.importer.nightly import run_nightly
from vivy.llm.bridge import RealTimeLLM, WrappedLLM
from vivy.llm.port import LLM
from vivy.memory.database import OutboxState
from vivy.memory.notes import NoteType
from vivy.state.gate import IngestOutcome
from vivy.storage.engines import open_store

__all__ = [
    "BACKLOG_PER_SLOT",
    "MAX_FAILED_ATTEMPTS",
    "STALL_LIMIT_S",
    "ImportProgress",
    "ImportReport",
    "import_exports",
    "replay",
]

#: Notes and members with due profile updates, per call slot, beyond which the replay waits.
BACKLOG_PER_SLOT = 1

#: Failed attempts in this run after which unfinished work is left for a later run.
MAX_FAILED_ATTEMPTS = 4

#: Longest stretch of virtual time without any progress before the import gives up.
STALL_LIMIT_S = 7 * 86400.0

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Where a running import is, for a progress bar or log line.

    ``calls`` counts finished model calls (generations and embeddings), ``in_flight`` those
    under way, ``queued`` the notes and profile updates still to write.
    """

    phase: str
    seen: int
    total: int
    stored: int
    duplicates: int
    notes: int
    calls: int = 0
    in_flight: int = 0
    queued: int = 0


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did.

    ``messages`` counts every message in the files (each id once; ``repeated`` counts the
    copies in overlapping files), ``duplicates`` those imported before, ``skipped_by_type`` the
    system entries and ``excluded`` the conversation messages the capture gate refused (bots,
    empty text, blacklists), by outcome. ``days`` are the days whose nightly job ran.
    ``pending_buffers`` and ``pending_updates`` are work left after repeated LLM failures (the
    nightly job then waits too); ``failed_days`` are days whose nightly job failed (it is not
    recorded as done). Running the import again finishes both. ``llm_calls`` counts model calls
    (generations and embeddings) and ``calls_in_flight_max`` the most under way at once.
    """

    files: int
    messages: int
    stored: int
    duplicates: int
    repeated: int
    skipped_by_type: Mapping[str, int]
    excluded: Mapping[str, int]
    notes_written: int
    clusters_written: int
    facts_added: int
    days: tuple[date, ...]
    pending_buffers: int = 0
    pending_updates: int = 0
    llm: str = ""
    failed_days: tuple[date, ...] = ()
    llm_calls: int = 0
    calls_in_flight_max: int = 0

    @property
    def complete(self) -> bool:
        """Whether every message became a note, every update was applied, every day's job ran."""
        return not (self.pending_buffers or self.pending_updates or self.failed_days)


@dataclass
class _Tally:
    stored: int = 0
    duplicates: int = 0
    excluded: Counter[str] = field(default_factory=Counter)


class _Pulse:
    """An event set and replaced whenever the pipeline reports progress or a call ends.

    The drain waits on it instead of polling on virtual time, so finishing costs one wake-up
    per piece of work, however much calendar the remaining deadlines span.
    """

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.notes = 0

    def report(self, name: str) -> None:
        """A listener of the app's observer: count notes, wake the drain."""
        if name == "note_written":
            self.notes += 1
        self.fire()

    def fire(self) -> None:
        """Wake whoever waits on the current event."""
        self.event.set()
        self.event = anyio.Event()


class _CallGate(WrappedLLM):
    """Wraps the import's LLM: at most ``limit`` calls under way, each one counted.

    Under the mock clock, virtual time runs on while calls wait on the network, so the replay
    keeps closing buffers and the NoteWriter and ProfileUpdaters keep up to ``limit`` calls in
    flight; results do not depend on that (see :mod:`vivy.actors.frontier`).
    """

    def __init__(self, inner: LLM, limit: int, pulse: _Pulse) -> None:
        super().__init__(inner)
        self._slots = anyio.Semaphore(limit)
        self._pulse = pulse
        self.calls = 0
        self.in_flight = 0
        self.in_flight_max = 0

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        async with self._slots:
            self.in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self.in_flight)
            try:
                return await fn()
            finally:
                self.in_flight -= 1
                self.calls += 1
                self._pulse.fire()


@dataclass(frozen=True, slots=True)
class _Stored:
    """How far each channel of a batch was replayed before: its highest stored message id.

    That is the larger of the channel's watermark (its last closed buffer) and the last
    message of its open buffer. Messages are fed in time order and a channel's snowflake ids
    grow with time, so every message at or below that id was fed already (stored, or refused
    by the capture gate) and is skipped.
    """

    high: Mapping[int, int]

    def has(self, message: ExportMessage) -> bool:
        """Whether ``message`` was fed by an earlier run."""
        return message.message_id <= self.high.get(message.channel_id, 0)

    def first_new(self, messages: Sequence[ExportMessage]) -> int:
        """Index of the first message no earlier run fed (``len`` when all were)."""
        return next((i for i, m in enumerate(messages) if not self.has(m)), len(messages))


def _added(before: Mapping[str, int], after: Mapping[str, int], note_type: NoteType) -> int:
    """Notes of ``note_type`` written between two counts by type."""
    return after.get(note_type, 0) - before.get(note_type, 0)


async def replay(
    batch: ExportBatch,
    settings: Settings,
    *,
    llm: LLM,
    progress: Callable[[ImportProgress], None] | None = None,
    registry: CollectorRegistry | None = None,
    concurrency: int | None = None,
) -> ImportReport:
    """Replay ``batch`` into ``settings.database``; must run under trio's ``MockClock``.

    See the module docstring. ``llm`` is used as given (wrap a network LLM in
    :class:`RealTimeLLM`, so its time-outs run on real time); at most ``concurrency``
    (default ``settings.import_concurrency``) of its calls run at once.
    """
    limit = concurrency or settings.import_concurrency
    pulse = _Pulse()
    gate = _CallGate(llm, limit, pulse)
    tally = _Tally()
    peek = open_store(settings.target, inline=True)
    try:
        if peek.leases is not None and (running := await peek.leases.live(system_now())):
            raise ConfigError(
                f"{running[0].owner} and any other vivy run sharing this PostgreSQL database "
                "hold shard leases: stop them before importing (the import notes every "
                "guild's conversations and would work beside them)"
            )
        stored = _Stored(await peek.imports.fed_high_marks(sorted(batch.channel_ids)))
        await peek.members.set_guild_names(batch.guild_names, system_now())
    finally:
        peek.close()
    first = stored.first_new(batch.messages)
    # Virtual time starts at the first message not yet stored: a resumed import does not
    # walk again through the calendar it already covered.
    start = batch.messages[min(first, len(batch.messages) - 1)].timestamp if batch.messages else 0
    clock = Clock.starting_at(start)

    async with running_app(
        settings,
        clock=clock,
        inline=True,
        llm=gate,
        registry=registry or CollectorRegistry(),
        scheduler=False,
        note_concurrency=limit,
        profile_concurrency=limit,
    ) as app:
        app.observer.listeners.append(pulse.report)
        app.frontier.on_done = pulse.fire

        def report(phase: str, seen: int) -> None:
            if progress is not None:
                progress(
                    ImportProgress(
                        phase,
                        seen,
                        len(batch.messages),
                        tally.stored,
                        tally.duplicates,
                        pulse.notes,
                        gate.calls,
                        gate.in_flight,
                        app.notes.backlog + app.profiles.pending,
                    )
                )

        notes_before = await app.store.imports.note_counts()
        facts_before = await app.store.imports.fact_count()
        baseline = await app.store.imports.outbox_state()
        tally.duplicates += first
        report("replaying", first)
        for seen, message in enumerate(batch.messages[first:], start=first + 1):
            if stored.has(message):
                tally.duplicates += 1
            else:
                if _waiting(app) > limit * BACKLOG_PER_SLOT:
                    await _catch_up(app, pulse, gate, limit * BACKLOG_PER_SLOT)
                await anyio.sleep_until(clock.to_monotonic(message.timestamp))
                _count(tally, await app.router.ingest(message.incoming()))
            report("replaying", seen)
        left = await _drain(
            app,
            baseline,
            gate,
            pulse,
            lambda: report("finishing", len(batch.messages)),
            horizon=system_now() + STALL_LIMIT_S,
        )
        days, failed_days = await run_nightly(app, batch, settings) if left.empty else ((), ())
        notes_after = await app.store.imports.note_counts()
        facts_after = await app.store.imports.fact_count()
        report("done", len(batch.messages))
    return ImportReport(
        files=len(batch.files),
        messages=batch.total,
        stored=tally.stored,
        duplicates=tally.duplicates,
        repeated=batch.repeated,
        skipped_by_type=dict(batch.skipped_by_type),
        excluded=dict(tally.excluded),
        notes_written=_added(notes_before, notes_after, NoteType.CONVERSATION),
        clusters_written=_added(notes_before, notes_after, NoteType.TOPIC_CLUSTER),
        facts_added=facts_after - facts_before,
        days=days,
        failed_days=failed_days,
        pending_buffers=left.open_buffers + len(left.closed_buffers),
        pending_updates=len(left.pending_updates),
        llm=app.llm.quality,
        llm_calls=gate.calls,
        calls_in_flight_max=gate.in_flight_max,
    )


async def _catch_up(app: App, pulse: _Pulse, gate: _CallGate, most: int) -> None:
    """Hold virtual time still until at most ``most`` notes and members' updates wait.

    Without this the replay would race through the calendar while the model works through
    a growing queue: memory would grow with the history, and an interrupted import would
    find most of its fed messages not yet turned into notes. Time must stand still while
    waiting (the mock clock's autojump is switched off), or buffers of other channels would
    close before messages the replay has not fed yet.
    """
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, MockClock):
        raise RuntimeError("the replay must run under trio's MockClock")
    threshold = clock.autojump_threshold
    clock.autojump_threshold = math.inf
    try:
        while _waiting(app) > most and await _progressed(pulse, gate):
            pass
    finally:
        clock.autojump_threshold = threshold


async def _progressed(pulse: _Pulse, gate: _CallGate) -> bool:
    """Wait for the next piece of progress; ``False`` if none can come while time stands
    still (every task is blocked and no model call is under way: only a timer can help)."""
    event = pulse.event
    stalled = False
    async with anyio.create_task_group() as tg:

        async def progress() -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        async def stall() -> None:
            nonlocal stalled
            await trio.testing.wait_all_tasks_blocked()
            if gate.in_flight == 0 and not event.is_set():
                stalled = True
                tg.cancel_scope.cancel()

        tg.start_soon(progress)
        tg.start_soon(stall)
    return not stalled


def _waiting(app: App) -> int:
    """Work that can go on without virtual time moving, counted in calls that can be under
    way at once: notes on their first attempt, and members with a profile update due."""
    return len(app.frontier) + app.profiles.members_due


def _count(tally: _Tally, outcome: IngestOutcome) -> None:
    if outcome in (IngestOutcome.STORED, IngestOutcome.TRUNCATED):
        tally.stored += 1
    elif outcome is IngestOutcome.DUPLICATE:
        tally.duplicates += 1
    else:
        tally.excluded[outcome.value] += 1


async def _drain(
    app: App,
    baseline: OutboxState,
    gate: _CallGate,
    pulse: _Pulse,
    progress: Callable[[], None],
    horizon: float,
) -> OutboxState:
    """Let the pipeline finish: wait for progress until no work is left, or what is left
    keeps failing, or nothing happens for :data:`STALL_LIMIT_S` of virtual time.

    It wakes only when something was written or a call ended (and at the stall limit), never
    on a polling timer; open buffers are waited for until their timers close them, up to
    the wall time ``horizon``. Returns the work left: nothing, or buffers and updates that failed
    :data:`MAX_FAILED_ATTEMPTS` times in this run (they stay durable for a later run).
    """
    before = {**baseline.closed_buffers}, {**baseline.pending_updates}
    while True:
        event = pulse.event
        state = await app.store.imports.outbox_state()
        idle = app.notes.backlog == 0 and app.profiles.active == 0
        if state.empty and idle:
            return state
        if not state.open_buffers and _failing(state, before):
            return state
        progress()
        if gate.in_flight:
            await event.wait()  # a call under way always ends with a pulse
            continue
        with anyio.move_on_after(STALL_LIMIT_S) as waited:
            await event.wait()
        # An open buffer (one a bot run left, whose messages may be newer than the export's)
        # closes when its restored timer fires, however far ahead in virtual time: no later
        # than its maximum age after the real present, which ``horizon`` lies beyond.
        finished = not state.open_buffers or app.clock.now() > horizon
        if waited.cancelled_caught and gate.in_flight == 0 and finished:
            return state


def _failing(state: OutboxState, before: tuple[dict[int, int], dict[int, int]]) -> bool:
    """Whether every unfinished item has failed often enough in this run to give up on it."""
    buffers, updates = before
    tried = [a - buffers.get(i, 0) for i, a in state.closed_buffers.items()]
    tried += [a - updates.get(i, 0) for i, a in state.pending_updates.items()]
    return bool(tried) and min(tried) >= MAX_FAILED_ATTEMPTS


def import_exports(
    paths: Sequence[str | Path],
    settings: Settings,
    *,
    llm: LLM | Callable[[], LLM],
    database: Path | str | None = None,
    progress: Callable[[ImportProgress], None] | None = None,
    registry: CollectorRegistry | None = None,
    concurrency: int | None = None,
) -> ImportReport:
    """Validate every file, then replay them into the database on virtual time.

    ``llm`` is an LLM or a factory called once validation has passed. When validation fails,
    :class:`ImportFormatError` is raised before the database is opened.
    """
    batch = load_exports(paths)
    if database is not None:
        settings = settings.with_target(database)
    model = llm() if callable(llm) else llm
    try:
        return trio.run(
            _replay_and_close,
            batch,
            settings,
            model,
            progress,
            registry,
            concurrency,
            clock=MockClock(autojump_threshold=0),
        )
    except BaseExceptionGroup as group:
        # The app's task groups wrap an error of the replay; a lone one is raised as itself.
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


async def _replay_and_close(
    batch: ExportBatch,
    settings: Settings,
    llm: LLM,
    progress: Callable[[ImportProgress], None] | None,
    registry: CollectorRegistry | None,
    concurrency: int | None,
) -> ImportReport:
    try:
        return await replay(
            batch,
            settings,
            llm=llm,
            progress=progress,
            registry=registry,
            concurrency=concurrency,
        )
    finally:
        if isinstance(llm, RealTimeLLM):
            await llm.aclose()
