"""``vivy job run [--date YYYY-MM-DD]``: run the nightly memory job by hand.

It runs (or resumes) the job for one local day of the configured time zone — yesterday by
default — with the configured LLM: topic clusters for each guild, then consolidation of each
changed profile. The job is idempotent per guild and day, so running it twice does nothing the
second time. It refuses a database file that does not exist (the nightly job of an empty new
database would be recorded as done) and a day that has not ended yet.
"""

from __future__ import annotations

import argparse
import os
from datetime import date, timedelta

import anyio

from vivy.app import running_app
from vivy.clock import Clock, system_now
from vivy.commands.db import add_database_option, database_target, existing
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.state.schedule import local_day
from vivy.storage.engines import Target

__all__ = ["DISCORD_EPOCH_DAY", "register", "run_job"]

#: The first day of Discord's id epoch: no message, and so no note, is older.
DISCORD_EPOCH_DAY = date(2015, 1, 1)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy job run``."""
    parser = commands.add_parser(
        "job",
        help="run the nightly memory job by hand",
        description="Run the nightly memory job by hand (vivy run does it every midnight).",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser(
        "run",
        help="run (or resume) the job for one day",
        description="Run (or resume) the nightly memory job for one day of VIVY_TIMEZONE, "
        "yesterday by default: topic clusters for each guild, then consolidation of each changed "
        "profile. Running it twice for a day does nothing the second time. The database must "
        "exist and the day must have ended.",
    )
    run.add_argument("--date", type=_day, default=None, help="local day (default: yesterday)")
    add_database_option(run)
    run.set_defaults(handler=lambda args: run_job(database_target(args), args.date))


def run_job(database: Target, day: date | None) -> int:
    """Run the job for ``day`` on ``database``; returns the exit code."""
    settings = Settings.from_env(os.environ).with_target(existing(database))
    wall = system_now()  # the entry point's one wall-clock read
    today = local_day(wall, settings.zone)
    target = day or today - timedelta(days=1)
    if target < DISCORD_EPOCH_DAY:
        raise ConfigError(
            f"--date {target.isoformat()} is before Discord existed; "
            f"the earliest day the job can run for is {DISCORD_EPOCH_DAY.isoformat()}"
        )
    if target >= today:
        raise ConfigError(
            f"--date {target.isoformat()} has not ended yet in {settings.timezone}; "
            f"the latest day the job can run for is {(today - timedelta(days=1)).isoformat()}"
        )
    return anyio.run(_run, settings, wall, target)


async def _run(settings: Settings, wall: float, target: date) -> int:
    clock = Clock.starting_at(wall)
    async with running_app(settings, clock=clock, scheduler=False) as app:
        report = await app.scheduler.run_day(target)
        llm = app.llm.quality
    status = "complete" if report.complete else "incomplete: " + ", ".join(report.failures)
    print(f"nightly job for {target.isoformat()} ({llm} LLM): {status}")
    print(f"  topic clusters written: {report.clusters}")
    print(f"  profiles consolidated:  {report.consolidated}")
    if report.skipped_passes:
        print(f"  already done before:    {', '.join(report.skipped_passes)}")
    return 0 if report.complete else 1
