"""``vivy bench ingest``: message ingestion throughput and acknowledgement latency.

N channels × M messages go through the real path, Router → ChannelActors → SQLite, with the
database in thread mode (group commit on a worker thread) on a real event loop in real time.
Every message is acknowledged only once its row is committed. Two senders are measured:

* the gateway (the headline figures): one sender submits every message in arrival order, as a
  gateway shard delivers them, with at most ``--window`` messages in flight (submitted, not yet
  acknowledged); a busy channel then has several messages in flight, in order;
* lockstep (the ``lockstep_*`` figures): one sender per channel that waits for each message's
  ack before it sends the next, so at most N messages are in flight.

The gateway sender and the raw baseline run ``--runs`` times in turn, each on a fresh database,
since a shared machine's speed drifts during a run of the benchmark: the median of each is
reported (the gateway's latencies are those of its median run), and ``ratio_vs_raw`` is the
median of the ratios of each gateway run to the raw run right after it.

Two baselines run on the same machine in the same process, on fresh databases opened with the
same pragmas (WAL, ``synchronous=NORMAL``):

* ``raw_sqlite_batched``: one ``executemany`` of the same rows, in arrival order, into Vivy's
  own ``buffer_messages`` table in a single transaction, the ceiling of what SQLite can take
  (the rows bind ``reply_to`` as a parameter, ``None`` for most);
* ``json_rewrite``: seed 002's design, one ``channel_buffers`` row per channel holding a JSON
  array of its buffered messages, read, appended to and written back in its own transaction
  for every message (a buffer holds 100 messages, then its row starts over). It runs
  synchronously on one connection, with no event loop in the way: a generous baseline.

With ``--db postgresql://…`` the same workload runs on PostgreSQL: the router on the
PostgreSQL engine (:func:`~vivy.storage.postgres.stores.open_postgres_store`, psycopg on the
owner's worker thread), the raw baseline plain psycopg's ``executemany``
(``raw_psycopg_batched_rows_per_s``) and seed 002's JSON rewrite on the same server. Every
database of a run is a fresh schema of one throwaway database, ``vivy_bench_<random>``,
created on that server for the run and dropped after it, so the database the URL names is
never changed (:mod:`vivy_lab.scratch`).

The benchmark reads the real clock (``time.perf_counter``) to measure; Vivy itself still reads
time only from its :class:`~vivy.clock.Clock`.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from prometheus_client import CollectorRegistry

from vivy.actors.channel import Ack
from vivy.actors.router import Router
from vivy.clock import Clock
from vivy.config import BufferSettings, is_postgres_url
from vivy.heap import settle_heap
from vivy.metrics.observer import MetricsObserver
from vivy.metrics.registry import Metrics
from vivy.state.gate import CapturePolicy, IncomingMessage, IngestOutcome
from vivy.storage.port import Store
from vivy.storage.postgres.stores import open_postgres_store
from vivy.storage.sqlite.stores import open_sqlite_store
from vivy_lab.baseline import postgres as pg_baseline
from vivy_lab.baseline import sqlite as baseline
from vivy_lab.scratch import new_schema, scratch_database

__all__ = [
    "CountingHandOff",
    "format_results",
    "main",
    "run_ingest_bench",
]

#: 2026-03-02T00:00:00Z: the wall time the bench's clock starts at.
WALL0 = 1772409600.0
GUILD_ID = 4242
#: The bot's own user id (never an author in the traffic).
OWN_USER_ID = 1
#: Messages of one seed-002 JSON buffer before its row starts over.
JSON_BUFFER_SIZE = 100
#: Runs of the gateway sender and of the raw batched insert, taken in turn; the medians are
#: reported, since a shared machine's speed drifts during a run of the benchmark. Single paired
#: ratios swing by a quarter either way on this project's machine; nine keep the median steady.
RUNS = 9
#: Messages the gateway stand-in keeps in flight (submitted, not yet acknowledged) at most.
GATEWAY_WINDOW = 4096
#: Distinct authors taking turns in each channel.
AUTHORS_PER_CHANNEL = 5

_FILLER = "the quick brown fox jumps over the lazy dog while the bot takes careful notes"

#: Where one run's database lives: a SQLite file, or a PostgreSQL URL (a fresh schema).
Target = Path | str
#: Makes the fresh database of a run from its name (``vivy-ingest-0``, ``raw-batched-0``...).
Targets = Callable[[str], Target]


def _open_store(target: Target) -> Store:
    """Vivy's store on ``target``, opened as ``vivy run`` opens it (worker thread)."""
    if isinstance(target, Path):
        return open_sqlite_store(target)
    return open_postgres_store(target)


def count_buffered_messages(target: Target) -> int:
    """Buffered message rows in the database at ``target``, read on a fresh connection."""
    if isinstance(target, Path):
        return baseline.count_buffered_messages(target)
    return pg_baseline.count_buffered_messages(target)


@dataclass
class CountingHandOff:
    """A NoteWriter stand-in that counts the closed buffers handed to it."""

    buffer_ids: list[int] = field(default_factory=list)

    def hand_off(self, buffer_id: int) -> None:
        """Count the buffer."""
        self.buffer_ids.append(buffer_id)


def _traffic(channels: int, messages: int) -> list[list[IncomingMessage]]:
    """Each channel's messages, in order; ids grow with time across all channels."""
    return [
        [
            IncomingMessage(
                guild_id=GUILD_ID,
                channel_id=1000 + c,
                message_id=10_000_000 + k * channels + c,
                author_id=100 + (c * AUTHORS_PER_CHANNEL) + k % AUTHORS_PER_CHANNEL,
                author_name=f"member-{c}-{k % AUTHORS_PER_CHANNEL}",
                text=f"message {k} in channel {c}: {_FILLER}",
                created_at=WALL0 + k,
                channel_name=f"channel-{c}",
            )
            for k in range(messages)
        ]
        for c in range(channels)
    ]


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0.0 when it is empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else math.inf


# The Vivy path --------------------------------------------------------------------------


@dataclass
class _RouterRun:
    seconds: float
    latencies: list[float]
    observer: MetricsObserver
    hand_off: CountingHandOff


@dataclass
class _Running:
    router: Router
    observer: MetricsObserver
    hand_off: CountingHandOff


@asynccontextmanager
async def _running_router(target: Target) -> AsyncIterator[_Running]:
    """A router on the fresh database at ``target`` (its owner in thread mode), served until
    the block ends."""
    store = _open_store(target)
    observer = MetricsObserver(Metrics(CollectorRegistry()))  # what `vivy run` reports to
    hand_off = CountingHandOff()
    router = Router(
        store=store,
        clock=Clock.starting_at(WALL0),
        buffers=BufferSettings(),
        policy=CapturePolicy(own_user_id=OWN_USER_ID),
        hand_off=hand_off,
        observer=observer,
    )
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(router.run)
            yield _Running(router, observer, hand_off)
            tg.cancel_scope.cancel()
    finally:
        store.close()


async def _settle(
    in_flight: deque[tuple[float, Ack]], latencies: list[float], *, room: int
) -> None:
    """Record the acks at the head of the window that are in, waiting while over ``room``."""
    while in_flight and (len(in_flight) > room or in_flight[0][1].done):
        submitted, ack = in_flight.popleft()
        if not ack.done:
            await ack.wait()
        ack.result()  # raises if the message was not stored
        latencies.append(time.perf_counter() - submitted)


async def _run_gateway(arrivals: list[IncomingMessage], target: Target, window: int) -> _RouterRun:
    """Submit every message in arrival order, as a gateway shard delivers them.

    At most ``window`` messages are in flight (submitted, not yet acknowledged); a message's
    latency runs from its submission until the sender sees its ack, which it checks in
    submission order, so a latency is never shorter than the real one.
    """
    latencies: list[float] = []
    in_flight: deque[tuple[float, Ack]] = deque()
    async with _running_router(target) as running:
        started = time.perf_counter()
        for message in arrivals:
            in_flight.append((time.perf_counter(), await running.router.submit(message)))
            if len(in_flight) >= window or in_flight[0][1].done:
                await _settle(in_flight, latencies, room=window - 1)
        await _settle(in_flight, latencies, room=0)
        seconds = time.perf_counter() - started
    return _RouterRun(seconds, latencies, running.observer, running.hand_off)


async def _send_channel(
    router: Router, messages: Sequence[IncomingMessage], latencies: list[float]
) -> None:
    """Send one channel's messages in order, each after the previous one is durable."""
    for message in messages:
        started = time.perf_counter()
        await router.ingest(message)
        latencies.append(time.perf_counter() - started)


async def _run_lockstep(traffic: list[list[IncomingMessage]], target: Target) -> _RouterRun:
    """One sender per channel, each waiting for a message's ack before sending the next."""
    latencies: list[float] = []
    async with _running_router(target) as running:
        started = time.perf_counter()
        async with anyio.create_task_group() as senders:
            for messages in traffic:
                senders.start_soon(_send_channel, running.router, messages, latencies)
        seconds = time.perf_counter() - started
    return _RouterRun(seconds, latencies, running.observer, running.hand_off)


# Baselines ------------------------------------------------------------------------------


def _arrival_order(traffic: list[list[IncomingMessage]]) -> list[IncomingMessage]:
    """Every message in the order the channels' senders interleave them (by message id)."""
    return sorted((m for messages in traffic for m in messages), key=lambda m: m.message_id)


def _raw_batched(arrivals: list[IncomingMessage], target: Target) -> float:
    """Rows per second of one ``executemany`` into a fresh ``buffer_messages`` table."""
    table: baseline.RawMessageTable | pg_baseline.PgRawMessageTable
    if isinstance(target, Path):
        table = baseline.RawMessageTable(target)
    else:
        table = pg_baseline.PgRawMessageTable(target)
    try:
        table.open_buffers(GUILD_ID, (m.channel_id for m in arrivals), WALL0)
        rows = table.bind(
            [
                (
                    m.message_id,
                    m.channel_id,
                    m.author_id,
                    m.author_name,
                    m.text,
                    m.created_at,
                    m.reply_to,
                    m.mentions,
                )
                for m in arrivals
            ]
        )
        started = time.perf_counter()
        table.insert(rows)
        seconds = time.perf_counter() - started
    finally:
        table.close()
    return _rate(len(rows), seconds)


def _json_rewrite(arrivals: list[IncomingMessage], target: Target) -> float:
    """Messages per second stored the seed-002 way (a JSON array rewritten per message)."""
    table: baseline.JsonRewriteTable | pg_baseline.PgJsonRewriteTable
    if isinstance(target, Path):
        table = baseline.JsonRewriteTable(target, buffer_size=JSON_BUFFER_SIZE)
    else:
        table = pg_baseline.PgJsonRewriteTable(target, buffer_size=JSON_BUFFER_SIZE)
    try:
        started = time.perf_counter()
        for m in arrivals:  # the entry is built per message, as seed 002 does
            entry = {
                "discord_id": str(m.author_id),
                "username": m.author_name,
                "display_name": m.author_name,
                "text": m.text,
                "message_id": str(m.message_id),
            }
            table.append(m.guild_id, m.channel_id, entry)
        seconds = time.perf_counter() - started
    finally:
        table.close()
    return _rate(len(arrivals), seconds)


# Entry points ---------------------------------------------------------------------------


def run_ingest_bench(
    channels: int,
    messages: int,
    db_dir: Path | None = None,
    *,
    backend: str = "asyncio",
    window: int = GATEWAY_WINDOW,
    runs: int = RUNS,
    db_url: str | None = None,
) -> dict[str, float]:
    """Run the ingest benchmark and its two baselines; return the figures by name.

    SQLite databases are created in ``db_dir`` (a temporary directory, removed afterwards,
    when None). With ``db_url`` every database is a fresh schema of a throwaway database on
    that PostgreSQL server, dropped afterwards; ``db_dir`` is then unused.
    """
    if min(channels, messages, window, runs) < 1:
        raise ValueError("channels, messages, window and runs must all be at least 1")
    traffic = _traffic(channels, messages)
    if db_url is not None:
        with scratch_database(db_url) as scratch:

            def schema(name: str) -> Target:
                return new_schema(scratch, name.replace("-", "_"))

            return _run_all(traffic, schema, backend, window, runs, raw_name="psycopg")
    if db_dir is None:
        with tempfile.TemporaryDirectory(prefix="vivy-bench-") as tmp:
            return _run_all(traffic, _files(Path(tmp)), backend, window, runs)
    db_dir.mkdir(parents=True, exist_ok=True)
    return _run_all(traffic, _files(db_dir), backend, window, runs)


def _files(db_dir: Path) -> Targets:
    """Fresh SQLite files in ``db_dir``, named after their run."""
    return lambda name: db_dir / f"{name}.db"


def _run_all(
    traffic: list[list[IncomingMessage]],
    targets: Targets,
    backend: str,
    window: int,
    runs: int,
    *,
    raw_name: str = "sqlite",
) -> dict[str, float]:
    """Every run and baseline; the gateway figures are those of the median run."""
    arrivals = _arrival_order(traffic)
    gateway: list[tuple[_RouterRun, Target]] = []
    raws: list[float] = []
    for n in range(runs):  # in turn, so that both see the same moments of a noisy machine
        target = targets(f"vivy-ingest-{n}")
        gateway.append((anyio.run(_run_gateway, arrivals, target, window, backend=backend), target))
        raws.append(_raw_batched(arrivals, targets(f"raw-batched-{n}")))
    run, vivy_target = sorted(gateway, key=lambda pair: pair[0].seconds)[runs // 2]
    raw = statistics.median(raws)
    # Each gateway run against the raw run right after it: a drift of the machine's speed
    # between runs then moves both sides of a ratio alike.
    ratios = [_rate(len(arrivals), g.seconds) / r for (g, _), r in zip(gateway, raws, strict=True)]
    lockstep = anyio.run(_run_lockstep, traffic, targets("vivy-lockstep"), backend=backend)
    rows_stored = count_buffered_messages(vivy_target)
    rewrite = _json_rewrite(arrivals, targets("json-rewrite"))
    total = len(arrivals)
    rate = _rate(total, run.seconds)
    latencies = sorted(run.latencies)
    lockstep_latencies = sorted(lockstep.latencies)
    return {
        "messages": float(total),
        "seconds": run.seconds,
        "messages_per_s": rate,
        "ack_p50_ms": _percentile(latencies, 0.50) * 1000,
        "ack_p99_ms": _percentile(latencies, 0.99) * 1000,
        f"raw_{raw_name}_batched_rows_per_s": raw,
        "ratio_vs_raw": statistics.median(ratios),
        "json_rewrite_rows_per_s": rewrite,
        "ratio_vs_json_rewrite": rate / rewrite,
        "ack_max_ms": (latencies[-1] if latencies else 0.0) * 1000,
        "ratio_vs_raw_lowest_run": min(ratios),
        "ratio_vs_raw_highest_run": max(ratios),
        "window": float(window),
        "runs": float(runs),
        "rows_stored": float(rows_stored),
        "stored_outcomes": run.observer.metrics.registry.get_sample_value(
            "vivy_messages_ingested_total", {"outcome": IngestOutcome.STORED.value}
        )
        or 0.0,
        "buffers_handed_off": float(len(run.hand_off.buffer_ids)),
        "lockstep_messages_per_s": _rate(total, lockstep.seconds),
        "lockstep_ack_p50_ms": _percentile(lockstep_latencies, 0.50) * 1000,
        "lockstep_ack_p99_ms": _percentile(lockstep_latencies, 0.99) * 1000,
        "lockstep_ratio_vs_raw": _rate(total, lockstep.seconds) / raw,
    }


_COUNTS = frozenset(
    {"messages", "window", "runs", "rows_stored", "stored_outcomes", "buffers_handed_off"}
)


def format_results(results: dict[str, float]) -> str:
    """One ``name: value`` line per figure: counts as integers, the rest with 3 decimals."""
    return "\n".join(
        f"{name}: {int(value)}" if name in _COUNTS else f"{name}: {value:.3f}"
        for name, value in results.items()
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vivy bench ingest",
        description="Measure ingestion throughput and acknowledgement latency against SQLite,"
        " or against PostgreSQL with --db.",
    )
    parser.add_argument("--channels", type=int, default=200, help="channels (default 200)")
    parser.add_argument("--messages", type=int, default=100, help="messages each (default 100)")
    parser.add_argument(
        "--window",
        type=int,
        default=GATEWAY_WINDOW,
        help=f"messages in flight at most (default {GATEWAY_WINDOW})",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=RUNS,
        help=f"gateway and raw runs, medians kept (default {RUNS})",
    )
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--db-dir", type=Path, default=None, help="keep the databases here")
    parser.add_argument(
        "--db",
        metavar="POSTGRESQL_URL",
        default=None,
        help="run on this PostgreSQL server instead of SQLite: the run creates a throwaway"
        " database vivy_bench_<random> there (the role needs CREATEDB) and drops it"
        " afterwards, so the database the URL names is left unchanged",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``vivy bench ingest`` with ``argv`` (the arguments after it); returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if min(args.channels, args.messages, args.window, args.runs) < 1:
        parser.error("--channels, --messages, --window and --runs must all be at least 1")
    if args.db is not None and not is_postgres_url(args.db):
        parser.error(f"--db {args.db}: expected a postgresql:// URL (SQLite needs no option)")
    settle_heap()  # as `vivy run` does once it has started
    results = run_ingest_bench(
        args.channels,
        args.messages,
        args.db_dir,
        backend=args.backend,
        window=args.window,
        runs=args.runs,
        db_url=args.db,
    )
    print(format_results(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
