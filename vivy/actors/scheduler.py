"""The Scheduler actor: start-up catch-up and the nightly memory job.

At start-up it runs, oldest first, every day of the catch-up window that has no completed
run; start-up waits for that at most ``catchup_limit_s``, after which the catch-up goes on in
the background. Then it sleeps until each local midnight and runs the day that just ended.

The job for a day has two passes per guild, each recorded in ``memory_job_log`` so that a
crash resumes where it stopped: pass 1 clusters the day's conversation notes into topic
clusters with the pro model (sources validated to be that day's notes); pass 2 consolidates,
with the pro model and through the same operation checks as per-note updates, the profile of
each member active that day whom :func:`~vivy.state.profile.needs_consolidation` finds
something to change for. Each of those guilds then has its similarity scale measured again
from a bounded sample of its own vectors (:mod:`vivy.retrieval.scale`, no model call), for
the embedding model in use. Then retention prunes old evidence, and the keyword indexes are
merged step by step (notes written one at a time leave SQLite's index in many segments,
which every search probes). The job only reads and writes through the database owner, so
message ingestion never waits for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from typing import Protocol
from zoneinfo import ZoneInfo

import anyio
import structlog

from vivy.actors.outage import until_stored
from vivy.clock import Clock
from vivy.errors import LLMError
from vivy.llm.port import LLM, EmbeddingTask
from vivy.llm.prompts import cluster_request, consolidation_request
from vivy.llm.schemas import ClusterInput, FactView, NoteView, ProfileInput, fact_operations
from vivy.memory.dates import source_label
from vivy.memory.facts import ExistingFact
from vivy.memory.notes import NewNote, Note, NoteType, Participant
from vivy.memory.scales import scale_key
from vivy.retrieval.scale import SAMPLE_NOTES, SAMPLE_WINDOWS, measure_scale
from vivy.state.profile import (
    CONSOLIDATION_NOTE_TOKENS,
    FactSource,
    ProfileUpdateOutcome,
    Rejection,
    consolidation_facts,
    fitting,
    needs_consolidation,
    plan_operations,
)
from vivy.state.schedule import (
    SchedulerPass,
    day_bounds,
    local_day,
    missed_days,
    next_midnight,
    validate_clusters,
)
from vivy.storage.port import Store

__all__ = ["JobReport", "Scheduler", "SchedulerObserver"]

log = structlog.get_logger(__name__)

CLUSTERS = "clusters"
CONSOLIDATION = "consolidation"


class SchedulerObserver(Protocol):
    """What the Scheduler reports for metrics."""

    def job_succeeded(self, completed_at: float, seconds: float) -> None:
        """The job for a day completed."""

    def job_failed(self, job_pass: SchedulerPass) -> None:
        """A pass failed."""

    def note_written(self, note_type: NoteType) -> None:
        """A topic-cluster note was committed."""

    def profile_update(self, outcome: ProfileUpdateOutcome) -> None:
        """A consolidation was applied or failed."""

    def fact_rejected(self, reason: Rejection) -> None:
        """A proposed consolidation operation was refused."""


@dataclass(slots=True)
class JobReport:
    """What one day's job did."""

    day: date
    ran_at: float = 0.0
    clusters: int = 0
    consolidated: int = 0
    #: Guilds with notes that day, whose passes ran.
    guilds: list[int] = field(default_factory=list)
    #: Guilds whose similarity scale was measured again.
    scales: int = 0
    #: Evidence windows removed by the retention setting.
    evidence_pruned: int = 0
    #: Steps of keyword-index upkeep that found work (merges on SQLite).
    index_steps: int = 0
    skipped_passes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every pass of every guild completed."""
        return not self.failures


class Scheduler:
    """Runs the nightly job; see the module docstring."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM,
        clock: Clock,
        observer: SchedulerObserver,
        zone: ZoneInfo,
        min_cluster_notes: int = 3,
        catchup_limit_s: float = 300.0,
        evidence_days: float | None = None,
    ) -> None:
        self._store = store
        self._llm = llm
        self._clock = clock
        self._observer = observer
        self._zone = zone
        self._min_cluster_notes = min_cluster_notes
        self._catchup_limit_s = catchup_limit_s
        self._evidence_days = evidence_days
        self._lock = anyio.Lock()
        self.reports: list[JobReport] = []

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Catch up (bounded), report started, then run at every local midnight."""
        caught_up = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._catch_up, caught_up)
            with anyio.move_on_after(self._catchup_limit_s):
                await caught_up.wait()
            if not caught_up.is_set():
                log.warning("catch-up continues in the background", limit_s=self._catchup_limit_s)
            task_status.started()
            while True:
                midnight = next_midnight(self._clock.now(), self._zone)
                await anyio.sleep_until(self._clock.to_monotonic(midnight))
                ended = local_day(midnight - 1.0, self._zone)
                # A day's run resumes where it stopped, so a database outage only delays it.
                await until_stored(partial(self.run_day, ended), what="nightly job")

    async def _catch_up(self, done: anyio.Event) -> None:
        await until_stored(self._catch_up_once, what="nightly catch-up")
        done.set()

    async def _catch_up_once(self) -> None:
        completed = await self._store.jobs.completed_days()
        first = await self._store.jobs.first_note_time()
        first_day = None if first is None else local_day(first, self._zone)
        days = missed_days(self._clock.now(), self._zone, completed, first_activity=first_day)
        if days:
            log.info("catching up on missed days", days=[d.isoformat() for d in days])
        reports = [await self.run_day(day, measure_scales=False) for day in days]
        await self.measure_scales(reports)

    async def run_day(self, day: date, *, measure_scales: bool = True) -> JobReport:
        """Run (or resume) the job for one local day; runs never overlap.

        A guild's similarity scale is measured from its newest notes, whatever the day, so
        days run one after another (a catch-up, an import) pass ``measure_scales=False`` and
        measure each of their guilds once afterwards (:meth:`measure_scales`).
        """
        async with self._lock:
            started = self._clock.monotonic()
            report = JobReport(day, ran_at=self._clock.now())
            start, end = day_bounds(day, self._zone)
            for guild_id in await self._store.jobs.guilds_with_notes(start, end):
                report.guilds.append(guild_id)
                await self._cluster_pass(guild_id, day, start, end, report)
                await self._consolidation_pass(guild_id, day, start, end, report)
                if measure_scales:
                    await self._measure_scale(guild_id, report)
            if self._evidence_days is not None:
                # Retention: notes that ended more than the kept days before the day's end
                # lose their evidence (their lines wait for pending profile updates).
                before = end - self._evidence_days * 86400.0
                report.evidence_pruned = await self._store.evidence.prune_evidence(before)
            # A step at a time, so that messages are stored between steps.
            while await self._store.jobs.tidy_keyword_indexes():
                report.index_steps += 1
            if report.complete:
                now = self._clock.now()
                await self._store.jobs.record_run(day, now)
                self._observer.job_succeeded(now, self._clock.monotonic() - started)
            log.info(
                "nightly job ran",
                day=day.isoformat(),
                clusters=report.clusters,
                consolidated=report.consolidated,
                scales=report.scales,
                index_steps=report.index_steps,
                failures=report.failures,
            )
            self.reports.append(report)
            return report

    async def measure_scales(self, reports: Sequence[JobReport]) -> None:
        """Measure once the similarity scale of each guild of ``reports`` (days run one
        after another without measuring), counted in the last report."""
        async with self._lock:
            for guild_id in sorted({guild for report in reports for guild in report.guilds}):
                await self._measure_scale(guild_id, reports[-1])

    async def _measure_scale(self, guild_id: int, report: JobReport) -> None:
        """Measure the guild's similarity scale for the embedding model in use and store it;
        a guild with too few notes, or vectors without meaning, keeps what it had."""
        model, dimension = self._llm.embedding_model, self._llm.dimension
        sample = await self._store.jobs.scale_sample(
            guild_id, dimension, notes=SAMPLE_NOTES, windows=SAMPLE_WINDOWS
        )
        scale = measure_scale(sample, self._clock.now())
        if scale is None:
            return
        await self._store.meta.set_meta(scale_key(guild_id, model, dimension), scale.encode())
        report.scales += 1
        log.info(
            "similarity scale measured",
            guild_id=guild_id,
            embedding_model=model,
            floor=round(scale.floor, 3),
            ceiling=round(scale.ceiling, 3),
            notes=scale.notes,
        )

    async def _cluster_pass(
        self, guild_id: int, day: date, start: float, end: float, report: JobReport
    ) -> None:
        if await self._store.jobs.pass_done(guild_id, day, CLUSTERS):
            report.skipped_passes.append(f"{guild_id}:{CLUSTERS}")
            return
        notes = await self._store.notes.notes_between(guild_id, start, end, NoteType.CONVERSATION)
        new: list[NewNote] = []
        if len(notes) >= self._min_cluster_notes:
            views = tuple(_view(n) for n in notes)
            try:
                generation = await self._llm.generate(
                    cluster_request(ClusterInput(guild_id, day.isoformat(), views))
                )
                clusters = validate_clusters(generation.value.topics(), [n.id for n in notes])
                texts = [
                    f"Topic cluster of {day.isoformat()}\n\n{c.title}\n{c.summary}"
                    for c in clusters
                ]
                vectors = await self._llm.embed(texts, EmbeddingTask.DOCUMENT) if texts else []
            except LLMError as exc:
                report.failures.append(f"{guild_id}:{CLUSTERS}")
                self._observer.job_failed(SchedulerPass.CLUSTERING)
                log.warning("clustering failed", guild_id=guild_id, error=str(exc))
                return
            by_id = {n.id: n for n in notes}
            for cluster, vector in zip(clusters, vectors, strict=True):
                people: dict[int, Participant] = {}
                for note_id in cluster.source_note_ids:
                    for p in by_id[note_id].participants:
                        people.setdefault(p.user_id, p)
                new.append(
                    NewNote(
                        guild_id=guild_id,
                        channel_id=0,
                        channel_name="",
                        note_type=NoteType.TOPIC_CLUSTER,
                        title=cluster.title,
                        summary=cluster.summary,
                        topics=(),
                        decisions=(),
                        open_questions=(),
                        entities=(),
                        participants=tuple(people.values()),
                        note_date=day.isoformat(),
                        quality=generation.quality,
                        model=generation.model,
                        embedding=vector,
                        created_at=self._clock.now(),
                        started_at=start,
                        ended_at=end,
                        source_note_ids=cluster.source_note_ids,
                    )
                )
        ids = await self._store.notes.commit_cluster_notes(
            guild_id, day.isoformat(), new, self._clock.now()
        )
        report.clusters += len(ids)
        for _ in ids:
            self._observer.note_written(NoteType.TOPIC_CLUSTER)

    async def _consolidation_pass(
        self, guild_id: int, day: date, start: float, end: float, report: JobReport
    ) -> None:
        if await self._store.jobs.pass_done(guild_id, day, CONSOLIDATION):
            report.skipped_passes.append(f"{guild_id}:{CONSOLIDATION}")
            return
        notes = await self._store.notes.notes_between(guild_id, start, end, NoteType.CONVERSATION)
        # Only profiles whose facts gained that day overlap others (see needs_consolidation)
        # cost a pro call.
        changed = set(await self._store.profiles.changed_between(guild_id, start, end))
        members = sorted({p.user_id for n in notes for p in n.participants} & changed)
        failed = False
        for user_id in members:
            theirs = [n for n in notes if any(p.user_id == user_id for p in n.participants)]
            facts = [
                f.existing() for f in await self._store.profiles.active_facts(guild_id, user_id)
            ]
            if not needs_consolidation(facts, _gained(facts, start, end)):
                continue
            try:
                await self._consolidate(guild_id, user_id, theirs, start, end)
                report.consolidated += 1
            except LLMError as exc:
                failed = True
                self._observer.profile_update(ProfileUpdateOutcome.FAILED)
                log.warning(
                    "consolidation failed", guild_id=guild_id, user_id=user_id, error=str(exc)
                )
        if failed:
            report.failures.append(f"{guild_id}:{CONSOLIDATION}")
            self._observer.job_failed(SchedulerPass.CONSOLIDATION)
            return
        await self._store.jobs.record_pass(guild_id, day, CONSOLIDATION, self._clock.now())

    async def _consolidate(
        self,
        guild_id: int,
        user_id: int,
        notes: list[Note],
        start: float,
        end: float,
    ) -> None:
        """One consolidation call for one member; retried once on a version conflict.

        The call reads the facts it can change first and the newest of the day's notes, each
        within a token budget, whatever the size of the profile or the day.
        """
        views = [_view(n) for n in sorted(notes, key=lambda n: n.created_at, reverse=True)]
        views = views[
            : fitting([f"{v.title}\n{v.summary}" for v in views], CONSOLIDATION_NOTE_TOKENS)
        ]
        for _ in range(2):
            facts = await self._store.profiles.active_facts(guild_id, user_id)
            version = await self._store.profiles.profile_version(guild_id, user_id)
            name = next(
                p.display_name for n in notes for p in n.participants if p.user_id == user_id
            )
            existing = [f.existing() for f in facts]
            by_id = {f.id: f for f in facts}
            shown = consolidation_facts(existing, _gained(existing, start, end))
            payload = ProfileInput(
                user_id=user_id,
                user_name=name,
                facts=tuple(
                    FactView(f.id, f.section, f.text, by_id[f.id].source_label) for f in shown
                ),
                notes=tuple(views),
            )
            generation = await self._llm.generate(consolidation_request(payload))
            sources = {
                n.id: FactSource(
                    n.id, source_label(n.title, n.note_date), f"{n.title}\n{n.summary}"
                )
                for n in notes
            }
            plan = plan_operations(
                existing,
                fact_operations(generation.value.operations),
                sources,
                consolidation=True,
            )
            for reason, _ in plan.rejected:
                self._observer.fact_rejected(reason)
            if not plan.changes:
                return
            written = await self._store.profiles.apply_plan(
                guild_id, user_id, version, plan, self._clock.now()
            )
            if written:
                self._observer.profile_update(ProfileUpdateOutcome.APPLIED)
                return
            self._observer.profile_update(ProfileUpdateOutcome.CONFLICT_RETRIED)


def _gained(facts: list[ExistingFact], start: float, end: float) -> set[int]:
    """The ids of the facts created in [start, end): what a profile gained that day."""
    return {f.id for f in facts if start <= f.created_at < end}


def _view(note: Note) -> NoteView:
    return NoteView(
        id=note.id,
        title=note.title,
        summary=note.summary,
        date=note.note_date,
        participants=tuple(p.display_name for p in note.participants),
    )
