"""Gauges read at scrape time: an idle process never wakes, and scrapes still see the truth."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
import trio
import trio.lowlevel
from prometheus_client import CollectorRegistry

from vivy.app import database_size, running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.offline import OfflineLLM
from vivy.storage.sqlite.db import Connection

from ..actors.harness import message

pytestmark = pytest.mark.anyio

START = datetime(2026, 3, 2, 12, tzinfo=UTC).timestamp()
DAY = 86400.0


class StepCounter(trio.abc.Instrument):
    """Counts the steps every task but one takes (a step is a wake-up of a task)."""

    def __init__(self, ignore: trio.lowlevel.Task) -> None:
        self.ignore = ignore
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """Count a step of any task other than the ignored one."""
        if task is not self.ignore:
            self.steps += 1


def settings(path: Path) -> Settings:
    """A 25-minute window and profile updates a day after their note."""
    return Settings(
        database=path,
        buffers=BufferSettings(inactivity_min_s=1500.0, inactivity_max_s=1500.0),
        profile_delay_s=DAY,
    )


def scalar(conn: Connection, sql: str) -> int:
    """One integer from a query."""
    return int(conn.execute(sql).fetchone()[0])


async def test_half_a_year_of_idle_virtual_time_wakes_no_task(tmp_path: Path) -> None:
    """With nothing to do, 180 virtual days pass without one task step, hence no DB read."""
    async with running_app(
        settings(tmp_path / "v.db"),
        clock=Clock.starting_at(START),
        inline=True,
        llm=OfflineLLM(),
        scheduler=False,
    ):
        await anyio.sleep(1)  # let start-up settle
        counter = StepCounter(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(counter)
        try:
            await anyio.sleep(180 * DAY)
        finally:
            trio.lowlevel.remove_instrument(counter)
        assert counter.steps == 0


async def test_scrape_reports_the_backlog_the_database_holds(tmp_path: Path) -> None:
    """The outbox, inbox and size gauges agree with the database when scraped, on no timer."""
    path = tmp_path / "v.db"
    registry = CollectorRegistry()
    async with running_app(
        settings(path),
        clock=Clock.starting_at(START),
        inline=True,
        llm=OfflineLLM(),
        registry=registry,
        scheduler=False,
    ) as app:
        await app.router.ingest(message(1, text="I live in Lisbon and I love surfing"))
        await app.router.ingest(message(2, author=8, text="I work as a baker, up at 4 am"))
        await anyio.sleep(1500 + 60)  # the buffer closes; its note is written at once
        await app.router.ingest(message(3, text="anyone around tonight?"))

        def sample(name: str, **labels: str) -> float | None:
            return registry.get_sample_value(name, labels)

        assert await app.db.read(scalar, "SELECT COUNT(*) FROM interaction_notes") == 1
        pending = "SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'"
        assert sample("vivy_outbox_profile_updates_pending") == await app.db.read(scalar, pending)
        assert sample("vivy_outbox_profile_updates_pending") == 2.0
        closed = "SELECT COUNT(*) FROM channel_buffers WHERE status = 'closed'"
        assert sample("vivy_outbox_buffers_pending") == await app.db.read(scalar, closed) == 0
        assert sample("vivy_open_buffers") == 1.0
        assert sample("vivy_actor_inbox_depth", actor="note_writer") == 0.0
        assert sample("vivy_actor_inbox_depth", actor="channel") == 0.0
        size = sample("vivy_database_size_bytes")
        assert size == database_size(path) and size is not None and size > 0
        await anyio.sleep(DAY)  # the updates come due and are applied
        assert sample("vivy_outbox_profile_updates_pending") == 0.0
