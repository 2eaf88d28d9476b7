"""An import into a database the bot has used: its open buffers are closed by the same
rules as the bot's (their timers, restored), and the import finishes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import trio
from prometheus_client import CollectorRegistry
from trio.testing import MockClock

from tests.importer import TWO_DAYS, import_files
from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import Settings
from vivy.importer import load_exports
from vivy.llm.offline import OfflineLLM
from vivy.storage.sqlite.checks import open_readonly

#: When the bot captured its conversation: months after the export's history.
RUN_AT = 1_790_000_000.0

#: A channel of the export's guild that the export does not hold.
OTHER_CHANNEL = 910000000000000077


async def _leave_an_open_buffer(db: Path) -> None:
    """Capture a few messages as ``vivy run`` does, and stop before the buffer closes."""
    messages = load_exports([TWO_DAYS]).messages[:4]
    async with running_app(
        Settings().with_target(db),
        clock=Clock.starting_at(RUN_AT),
        inline=True,
        llm=OfflineLLM(),
        registry=CollectorRegistry(),
        scheduler=False,
    ) as app:
        for n, message in enumerate(messages):
            live = dataclasses.replace(
                message,
                channel_id=OTHER_CHANNEL,
                message_id=1_400_000_000_000_000_000 + n,
                timestamp=RUN_AT + 60 * n,
            )
            await app.router.ingest(live.incoming())


def _open_buffers(db: Path) -> int:
    conn = open_readonly(db)
    try:
        return int(
            conn.execute("SELECT count(*) FROM channel_buffers WHERE status = 'open'").fetchone()[0]
        )
    finally:
        conn.close()


def test_an_import_after_a_run_closes_the_runs_open_buffer_and_finishes(tmp_path: Path) -> None:
    """The run's open conversation becomes a note when its inactivity timer fires in the
    import's virtual time; the import reports nothing pending."""
    db = tmp_path / "run.db"
    trio.run(_leave_an_open_buffer, db, clock=MockClock(autojump_threshold=0))
    assert _open_buffers(db) == 1
    report = import_files(db, TWO_DAYS)
    assert report.complete, report
    assert report.pending_buffers == 0
    assert _open_buffers(db) == 0
