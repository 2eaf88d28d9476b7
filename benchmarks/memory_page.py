"""Server time of the memory page's views on a large guild: timeline, profile, search.

    python benchmarks/memory_page.py --size 100000 [--db /tmp/page.db | --db postgresql://…]
        [--runs 20]

Builds (or reuses, with ``--db`` naming an existing file) the retrieval benchmark's synthetic
guild (:mod:`vivy_lab.synthetic.sqlite`); with ``--db`` a PostgreSQL URL, copies it into a
throwaway database on that server (:mod:`vivy_lab.synthetic.postgres`, dropped afterwards).
It gives one member a full profile with history through the storage port, then calls the
page's ASGI application in-process (no socket, no browser: the time is the server's, from
request to the last byte of the answer) with the operator's token, and prints one row per
view with its median, 90th percentile and worst time in milliseconds, beside ``loop_ms`` and
``others_pct`` (how fast and how shared the machine was while it ran).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from prometheus_client import CollectorRegistry

from vivy.clock import Clock
from vivy.config import is_postgres_url
from vivy.llm.offline import OfflineLLM
from vivy.retrieval import Retriever
from vivy.storage.engines import Target, open_store
from vivy.storage.port import Store
from vivy.storage.postgres.db import connect, migrate
from vivy.web.asgi import Surface, operator_app
from vivy.web.memory import StoreMemory
from vivy.web.tokens import Tokens
from vivy_lab.bench.machine import loop_ms, others_percent, read_cpu_times
from vivy_lab.scratch import scratch_database
from vivy_lab.synthetic.postgres import copy_synthetic
from vivy_lab.synthetic.sqlite import GUILD_ID, WALL0, build

TOKEN = "benchmark-token-0123456789"
MEMBER = 7_000_001
SECTIONS = ("bio", "interests", "skills", "opinions", "relationships", "other")
QUESTIONS = ("what did they decide about the release", "who talked about the garden", "plans")


async def _profile(store: Store) -> None:
    """A member with 45 facts and 10 removed ones, each stated at its own time."""
    for i in range(55):
        await store.members.remember_fact(
            GUILD_ID,
            MEMBER,
            "Bench Member",
            SECTIONS[i % len(SECTIONS)],
            f"Bench member fact number {i} about topic {i * 7 % 31}",
            "stated",
            WALL0 + i,
        )
    facts = await store.profiles.active_facts(GUILD_ID, MEMBER)
    for fact in facts[:10]:
        await store.pages.remove_fact(GUILD_ID, MEMBER, fact.id, "bench", WALL0 + 100)


async def _get(app: Any, path: str, query: str = "") -> tuple[int, float]:
    """Status and seconds of one GET through the ASGI app."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"host", b"bench")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    status = 0
    done = anyio.Event()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif not message.get("more_body"):
            done.set()

    started = time.perf_counter()
    await app(scope, receive, send)
    await done.wait()
    return status, time.perf_counter() - started


async def _measure(database: Target, runs: int) -> list[tuple[str, list[float]]]:
    store = open_store(database)
    llm = OfflineLLM()
    try:
        if not await store.pages.fact_history(GUILD_ID, MEMBER):
            await _profile(store)
        clock = Clock.wall()
        memory = StoreMemory(store, Retriever(store.search, llm, clock), now=clock.now)
        surface = Surface(CollectorRegistry(), Tokens.from_settings(TOKEN, None), memory=memory)
        app = operator_app(surface)
        base = f"/page/g/{GUILD_ID}"
        newest = await store.pages.newest_day(GUILD_ID)
        assert newest is not None
        views = [
            ("timeline (newest week)", f"{base}/timeline", ""),
            ("timeline (a week in the middle)", f"{base}/timeline", "day=2025-09-01"),
            ("profile (45 facts, 10 removed)", f"{base}/member/{MEMBER}", ""),
            ("members", f"{base}/members", ""),
            ("health and job log", f"{base}/health", ""),
            *[(f"search: {q}", f"{base}/search", f"q={q.replace(' ', '+')}") for q in QUESTIONS],
        ]
        rows = []
        for name, view, query in views:
            await _get(app, view, query)  # warm: the first read of a cold file is not the page's
            times = []
            for _ in range(runs):
                status, seconds = await _get(app, view, query)
                if status != 200:
                    raise SystemExit(f"{name}: HTTP {status}")
                times.append(seconds * 1000)
            rows.append((name, times))
        return rows
    finally:
        await llm.aclose()
        store.close()


def main(argv: list[str] | None = None) -> int:
    """Build or reuse the synthetic guild and print the views' server times."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="notes in the guild")
    parser.add_argument(
        "--db",
        help="reuse (or build into) this SQLite file, or measure PostgreSQL on the server of "
        "this postgresql:// URL (in a throwaway database)",
    )
    parser.add_argument("--runs", type=int, default=20, help="timed requests per view")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.db and is_postgres_url(args.db):
            path = Path(tmp) / "page.db"
            _build(path, args.size)
            with scratch_database(args.db) as url:
                with connect(url) as conn:
                    migrate(conn)
                    conn.execute("SET statement_timeout = 0")  # a bulk load runs long
                    print(f"copied into PostgreSQL in {copy_synthetic(path, conn):.1f} s")
                path.unlink()
                loop, rows, others = _timed(url, args.runs)
        else:
            path = Path(args.db) if args.db else Path(tmp) / "page.db"
            if not path.exists():
                _build(path, args.size)
            loop, rows, others = _timed(path, args.runs)
    print(f"{'view':40} {'p50_ms':>8} {'p90_ms':>8} {'max_ms':>8}  loop_ms={loop:.0f}", end="")
    print(f" others_pct={others:.0f}" if others is not None else "")
    for name, times in rows:
        ordered = sorted(times)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        print(f"{name:40} {statistics.median(times):8.1f} {p90:8.1f} {ordered[-1]:8.1f}")
    return 0


def _build(path: Path, size: int) -> None:
    started = time.perf_counter()
    build(path, size, 1, seed=7)
    print(f"built {size} notes in {time.perf_counter() - started:.1f} s")


def _timed(
    database: Target, runs: int
) -> tuple[float, list[tuple[str, list[float]]], float | None]:
    """The loop speed, each view's times, and the share of the machine others used."""
    loop = loop_ms()
    before = read_cpu_times()
    rows = anyio.run(_measure, database, runs)
    return loop, rows, others_percent(before, read_cpu_times())


if __name__ == "__main__":
    sys.exit(main())
