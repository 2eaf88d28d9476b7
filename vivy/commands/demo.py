"""``vivy demo``: a built-in replay through the real buffers, on virtual time.

Until notes land, the demo shows what the buffers produced: which buffers closed, when, why,
and with which messages.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import trio
from trio.testing import MockClock

from vivy.actors.router import Router
from vivy.clock import Clock, format_utc
from vivy.config import BufferSettings
from vivy.state.gate import CapturePolicy, IncomingMessage, IngestOutcome
from vivy.storage import buffers as store
from vivy.storage.db import Database

__all__ = ["register", "run_demo"]

START = 1772470800.0  # 2026-03-02T17:00:00Z

#: (minute, channel, author id, author name, text)
SCRIPT: list[tuple[float, int, int, str, str]] = [
    (0, 1, 11, "Alex", "Anyone up for a game night this week?"),
    (2, 1, 12, "Sam", "Yes! I love co-op games, what do you have in mind?"),
    (4, 1, 11, "Alex", "I live in Austin so evenings CST work best for me"),
    (5, 1, 13, "Jo", "Let's do Friday at 8, I can host the Discord call"),
    (7, 1, 12, "Sam", "Friday works. I'll bring Deep Rock Galactic"),
    (70, 2, 13, "Jo", "Has anyone tried the new Postgres 17 release?"),
    (73, 2, 11, "Alex", "I work at Dell as a QA engineer, we are still on 15"),
    (75, 2, 13, "Jo", "We decided to use Postgres for the bot too"),
]


@dataclass
class _Recorder:
    """Stands in for the NoteWriter: records the buffers handed off."""

    received: list[int] = field(default_factory=list)

    def hand_off(self, buffer_id: int) -> None:
        self.received.append(buffer_id)


class _Quiet:
    def ingested(self, outcome: IngestOutcome) -> None:
        """Not shown in the demo."""

    def buffer_opened(self) -> None:
        """Not shown in the demo."""

    def buffer_closed(self, reason: str) -> None:
        """Not shown in the demo."""

    def actor_restarted(self) -> None:
        """Not shown in the demo."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy demo``."""
    parser = commands.add_parser(
        "demo", help="replay a bundled conversation offline and show what Vivy remembers"
    )
    parser.add_argument("--db", default=None, help="database file (default: a temporary file)")
    parser.set_defaults(handler=lambda args: run_demo(args.db))


def run_demo(db_path: str | None) -> int:
    """Run the replay and print the closed buffers; returns the exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(db_path) if db_path else Path(tmp) / "demo.db"
        trio.run(_demo, path, clock=MockClock(autojump_threshold=0))
    return 0


async def _demo(path: Path) -> None:
    db = Database.open(path, inline=True)
    clock = Clock.starting_at(START)
    recorder = _Recorder()
    router = Router(
        db=db,
        clock=clock,
        buffers=BufferSettings(),
        policy=CapturePolicy(),
        hand_off=recorder,
        observer=_Quiet(),
    )
    async with anyio.create_task_group() as tg:
        await tg.start(router.run)
        for index, (minute, channel, author, name, text) in enumerate(SCRIPT, start=1):
            await anyio.sleep_until(clock.to_monotonic(START + minute * 60))
            await router.ingest(
                IncomingMessage(
                    1, channel, index, author, name, text, clock.now(), channel_name=f"c{channel}"
                )
            )
        await anyio.sleep(3 * 3600)
        tg.cancel_scope.cancel()
    for buffer_id in recorder.received:
        buffer = db.read_sync(store.load_buffer, buffer_id)
        assert buffer is not None
        row = buffer.row
        print(
            f"buffer {row.id} #{row.channel_name}: {format_utc(row.started_at)} -> "
            f"{format_utc(row.closed_at or 0)} ({row.close_reason}, "
            f"{len(buffer.messages)} messages)"
        )
        for m in buffer.messages:
            print(f"    {m.author_name}: {m.text}")
    db.close()
