"""The nightly job of an import: each day the history covered, as it would have run live.

Days whose job already completed are skipped (idempotent per guild and day through
``memory_job_log``), so running an import again runs only the days still owed.
"""

from __future__ import annotations

from datetime import date

from vivy.actors.scheduler import JobReport, Scheduler
from vivy.app import App
from vivy.clock import Clock
from vivy.config import Settings
from vivy.importer.export import ExportBatch
from vivy.state.schedule import day_bounds, local_day

__all__ = ["run_nightly"]


async def run_nightly(
    app: App, batch: ExportBatch, settings: Settings
) -> tuple[tuple[date, ...], tuple[date, ...]]:
    """Run the nightly job for each local day of the batch that has no completed run.

    Each day runs as it would have at the local midnight that ended it: its clock reads that
    midnight, so what it stamps does not depend on how long the replay took to get here.
    Returns the days whose job completed and the days whose job failed. The similarity
    scale of each guild active on those days is measured once, at the last day's midnight:
    it is measured from the guild's newest notes, the same for every day.
    """
    zone = settings.zone
    covered = sorted({local_day(m.timestamp, zone) for m in batch.messages})
    completed = set(await app.store.jobs.completed_days())
    ran: list[date] = []
    failed: list[date] = []
    reports: list[JobReport] = []
    nightly: Scheduler | None = None
    for day in covered:
        if day in completed:
            continue
        _, midnight = day_bounds(day, zone)
        nightly = Scheduler(
            store=app.store,
            llm=app.llm,
            clock=Clock.starting_at(midnight),
            observer=app.observer,
            zone=zone,
            min_cluster_notes=settings.min_cluster_notes,
            catchup_limit_s=settings.catchup_time_limit_s,
            evidence_days=settings.evidence_days,
        )
        report = await nightly.run_day(day, measure_scales=False)
        reports.append(report)
        (ran if report.complete else failed).append(day)
    if nightly is not None:  # the last day's scheduler, at that day's midnight
        await nightly.measure_scales(reports)
    return tuple(ran), tuple(failed)
