"""Load test: many channels through the real router, actors and SQLite, then a mass close.

    python benchmarks/load.py                      # 10,000 channels x 10 messages
    python benchmarks/load.py --channels 200       # a quick run

The whole app (router, channel actors, NoteWriter, ProfileUpdaters; SQLite; offline LLM) runs
on trio's ``MockClock`` with the database inline, so timers cost no real time and every
figure is work, not waiting. Every channel receives its messages in interleaved rounds (round
``r`` gives each channel its ``r``-th message) from a pool of concurrent senders, each
``ingest`` returning once its message is durable. The first 1 % of the channels talk at
virtual time 0 and the rest ten minutes later, so with a fixed inactivity window the 1 %
close at one virtual instant while the others stay open; the NoteWriter and the
ProfileUpdaters then drain that backlog. Printed figures:

* ``channels``, ``messages``: what was sent (every message acknowledged as stored);
* ``messages_per_s``: messages over the real seconds the ingestion took;
* ``peak_rss_mb``: the process's peak resident memory (``ru_maxrss``);
* ``backlog_drain_s``: real seconds from the mass close until no closed buffer, queued
  note and pending profile update is left;
* ``active_actors_after_idle``: channel actors alive once the closed channels' actors have
  retired (an idle actor exits; only the channels with an open buffer keep one);
* ``rss_after_idle_mb``: resident memory at that point, after a garbage collection.

With ``--drain-all`` the run goes on until every other buffer has closed and been written
up too, and adds ``drain_all_s``, ``active_actors_after_drain_all`` (0: every actor retired)
and ``rss_after_drain_all_mb``.

The benchmark reads the real clock (``time.perf_counter``) to measure; Vivy itself reads
time only from its virtual :class:`~vivy.clock.Clock`.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import trio
from trio.testing import MockClock

from vivy.app import App, running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.offline import OfflineLLM
from vivy.logs import configure_logging
from vivy.state.gate import IncomingMessage
from vivy.storage.sqlite.db import Connection

#: 2026-03-02T10:00:00Z at virtual time zero.
WALL0 = 1772445600.0
GUILD = 4343
#: The fixed inactivity window: the 1 % close at this virtual time, the rest 10 minutes later.
WINDOW_S = 1500.0
LATE_START_S = 600.0
AUTHORS = [(11, "alex"), (12, "sam"), (13, "maya"), (14, "jordan"), (15, "priya")]
PHRASES = [
    "I live in {city}",
    "I love {thing}",
    "anyone tried {thing} lately?",
    "I work at {company}",
    "let's meet on {day}",
    "that {thing} patch was wild",
    "I prefer {thing} over {other}",
    "haha same",
    "my cat is named {pet}",
    "see you all later",
]
WORDS = {
    "city": ["Austin", "Denver", "Toronto", "Oslo"],
    "thing": ["JRPGs", "Rust", "Neovim", "bouldering", "chess"],
    "other": ["Emacs", "Windows"],
    "company": ["Dell", "Ledgerly", "a bakery"],
    "day": ["Friday", "Sunday"],
    "pet": ["Miso", "Bento"],
}


@dataclass
class Figures:
    """What the run measured."""

    channels: int = 0
    messages: int = 0
    ingest_s: float = 0.0
    backlog_drain_s: float = 0.0
    notes: int = 0
    updates_applied: int = 0
    active_actors_after_idle: int = 0
    open_buffers_after_idle: int = 0
    rss_after_idle_mb: float = 0.0
    outcomes: Counter[str] | None = None
    #: Filled in with ``--drain-all`` only: after every other buffer closed too.
    drain_all_s: float | None = None
    active_actors_after_drain_all: int | None = None
    rss_after_drain_all_mb: float | None = None


def text_for(channel: int, index: int) -> str:
    """A deterministic chat line."""
    phrase = PHRASES[(channel + index) % len(PHRASES)]
    return phrase.format(**{k: v[(channel * 7 + index) % len(v)] for k, v in WORDS.items()})


def message(channel: int, index: int, messages: int, at: float) -> IncomingMessage:
    """Message ``index`` of ``channel`` (ids grow with time within a channel)."""
    author, name = AUTHORS[(channel + index) % len(AUTHORS)]
    return IncomingMessage(
        guild_id=GUILD,
        channel_id=channel,
        message_id=channel * messages + index + 1,
        author_id=author,
        author_name=name,
        text=text_for(channel, index),
        created_at=at,
        channel_name=f"load-{channel}",
    )


async def send_rounds(app: App, channels: range, messages: int, senders: int) -> Counter[str]:
    """Send every channel's messages in interleaved rounds from ``senders`` tasks."""
    outcomes: Counter[str] = Counter()
    at = app.clock.now()
    work = iter([(c, i) for i in range(messages) for c in channels])

    async def sender() -> None:
        for channel, index in work:
            outcome = await app.router.ingest(message(channel, index, messages, at))
            outcomes[outcome.value] += 1

    async with anyio.create_task_group() as tg:
        for _ in range(senders):
            tg.start_soon(sender)
    return outcomes


@dataclass(frozen=True, slots=True)
class Outbox:
    """Buffers by status, notes, and profile updates by status."""

    closed: int
    open: int
    notes: int
    applied: int
    pending: int


def outbox(conn: Connection) -> Outbox:
    """Count buffers, notes and profile updates."""
    closed, open_ = conn.execute(
        "SELECT COALESCE(SUM(status = 'closed'), 0), COALESCE(SUM(status = 'open'), 0)"
        " FROM channel_buffers"
    ).fetchone()
    notes = conn.execute("SELECT COUNT(*) FROM interaction_notes").fetchone()[0]
    applied, pending = conn.execute(
        "SELECT COALESCE(SUM(status = 'applied'), 0), COALESCE(SUM(status = 'pending'), 0)"
        " FROM profile_updates"
    ).fetchone()
    return Outbox(int(closed), int(open_), int(notes), int(applied), int(pending))


def current_rss_mb() -> float:
    """Resident memory now (Linux ``/proc``; else the peak)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return peak_rss_mb()
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident memory of this process (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


async def drained(app: App, notes: int) -> Outbox:
    """Wait (on virtual time) for ``notes`` notes, with no closed buffer or update left."""
    while True:
        now = await app.db.read(outbox)
        busy = now.closed or now.pending or app.notes.backlog or app.profiles.active
        if now.notes >= notes and not busy:
            return now
        await anyio.sleep(0.5)


async def run(
    path: Path,
    channels: int,
    messages: int,
    fraction: float,
    senders: int,
    *,
    drain_all: bool = False,
) -> Figures:
    """The load run on virtual time; see the module docstring."""
    figures = Figures(channels=channels, messages=channels * messages)
    closing = max(1, round(channels * fraction))
    settings = Settings(
        database=path,
        buffers=BufferSettings(
            inactivity_min_s=WINDOW_S, inactivity_max_s=WINDOW_S, cap=max(100, messages + 1)
        ),
        profile_delay_s=0.0,
    )
    async with running_app(
        settings, clock=Clock.starting_at(WALL0), inline=True, llm=OfflineLLM(), scheduler=False
    ) as app:
        started = time.perf_counter()
        outcomes = await send_rounds(app, range(1, closing + 1), messages, senders)
        ingest_s = time.perf_counter() - started
        await anyio.sleep_until(LATE_START_S)
        started = time.perf_counter()
        outcomes += await send_rounds(app, range(closing + 1, channels + 1), messages, senders)
        figures.ingest_s = ingest_s + time.perf_counter() - started
        figures.outcomes = outcomes
        assert app.router.statistics().active_actors == channels
        # The mass close: the first channels' windows end together.
        await anyio.sleep_until(WINDOW_S - 1.0)
        before = await app.db.read(outbox)
        assert before.closed == 0, "a buffer closed before its window ended"
        started = time.perf_counter()
        await anyio.sleep_until(WINDOW_S)
        now = await drained(app, closing)
        figures.backlog_drain_s = time.perf_counter() - started
        assert anyio.current_time() < LATE_START_S + WINDOW_S, "the drain ran into the late close"
        figures.notes, figures.updates_applied = now.notes, now.applied
        figures.active_actors_after_idle = app.router.statistics().active_actors
        figures.open_buffers_after_idle = now.open
        gc.collect()
        figures.rss_after_idle_mb = current_rss_mb()
        if drain_all:
            await anyio.sleep_until(LATE_START_S + WINDOW_S - 1.0)
            started = time.perf_counter()
            await anyio.sleep_until(LATE_START_S + WINDOW_S)
            await drained(app, channels)
            figures.drain_all_s = time.perf_counter() - started
            figures.active_actors_after_drain_all = app.router.statistics().active_actors
            gc.collect()
            figures.rss_after_drain_all_mb = current_rss_mb()
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=10, help="messages per channel")
    parser.add_argument(
        "--closing", type=float, default=0.01, help="share of channels that close together"
    )
    parser.add_argument("--senders", type=int, default=256, help="concurrent sender tasks")
    parser.add_argument("--db", type=Path, help="database path (default: a temporary one)")
    parser.add_argument(
        "--drain-all",
        action="store_true",
        help="then let every other buffer close too and report the drain (slow at 10,000)",
    )
    args = parser.parse_args(argv)
    configure_logging("warning")
    with tempfile.TemporaryDirectory() as folder:
        path = args.db or Path(folder) / "load.db"

        async def main_async() -> Figures:
            return await run(
                path,
                args.channels,
                args.messages,
                args.closing,
                args.senders,
                drain_all=args.drain_all,
            )

        figures = trio.run(main_async, clock=MockClock(autojump_threshold=0))
    stored = (figures.outcomes or Counter())["stored"]
    lines = {
        "channels": figures.channels,
        "messages": figures.messages,
        "messages_stored": stored,
        "notes_written": figures.notes,
        "profile_updates_applied": figures.updates_applied,
        "peak_rss_mb": f"{peak_rss_mb():.1f}",
        "rss_after_idle_mb": f"{figures.rss_after_idle_mb:.1f}",
        "active_actors_after_idle": figures.active_actors_after_idle,
        "open_buffers_after_idle": figures.open_buffers_after_idle,
        "backlog_drain_s": f"{figures.backlog_drain_s:.2f}",
        "ingest_s": f"{figures.ingest_s:.2f}",
        "messages_per_s": f"{figures.messages / figures.ingest_s:.0f}",
    }
    if figures.drain_all_s is not None:
        lines["drain_all_s"] = f"{figures.drain_all_s:.2f}"
        lines["active_actors_after_drain_all"] = figures.active_actors_after_drain_all
        lines["rss_after_drain_all_mb"] = f"{figures.rss_after_drain_all_mb:.1f}"
    for key, value in lines.items():
        print(f"{key}: {value}")
    return 0 if stored == figures.messages else 1


if __name__ == "__main__":
    sys.exit(main())
