"""``vivy bench retrieval``: note search latency and quantised-search recall at scale.

For each size N, a fresh database gets one guild with N synthetic notes and their evidence
(:mod:`vivy_lab.synthetic.sqlite` says how they are made). The database is then opened as the
bot opens it (:func:`vivy.storage.sqlite.open_sqlite_store`: production pragmas, the storage
owner's worker thread and second connection), and each query is timed through
:func:`vivy.retrieval.ranked.ranked_notes`, everything ``Retriever.search_notes`` does
except the embedding call: the binary KNN over the guild's vectors in memory, exact cosine
re-rank and FTS5 BM25 of the notes, FTS5 BM25 of their evidence windows, exact cosine of the
found notes' windows, scoring, gate, diversification, loading the top 10 notes with their
evidence lines and choosing the lines to quote with the local model's word vectors. The first
search, which loads the guild's vectors into memory (once per
process), is timed apart (``load_s``). Then ``recall_at_10_vs_exact`` compares the top 10 of
the quantised search + re-rank with an exact float KNN over the same guild.

``p50_ms`` and ``p99_ms`` time one pass of the queries right after the build, as a bot
searching a database it has just filled. With ``--passes N`` the same queries run N-1 times
more in the same process and ``warm_p50_ms`` is the median of those later passes: the pages
the queries read are then cached, as on a server whose database stays in memory. The two
differ most where the machine evicts file pages it has not touched for a while (the page
cache of a small VM), which the first pass after a long build then reads from disk.

With ``--db postgresql://…`` each size's SQLite database is built the same way and then
copied into PostgreSQL (:func:`vivy_lab.synthetic.postgres.copy_synthetic`; ``fill_s``
is then the copy with its index builds), so both engines answer exactly the same queries over
the same notes. Each query is timed through :func:`~vivy.retrieval.ranked.ranked_notes` on
the PostgreSQL engine as ``vivy run`` opens it (psycopg on the owner's worker thread); the
first search (which loads the guild's vectors into memory, as on SQLite) is timed apart,
``vector_p50_ms`` is the vector search alone and ``recall_at_10_vs_exact`` compares its top 10
with an exact scan. Every size lives in a fresh
schema of one throwaway database, ``vivy_bench_<random>``, created on that server for the run
and dropped after it, so the database the URL names is never changed.

Two columns say what the machine was doing when a size was timed (:mod:`vivy_lab.bench.machine`):
``loop_ms``, a million-step Python loop run just before its queries, and ``others_pct``, the
share of the machine's CPU time (every core, the hypervisor's steal included) that went to
anything but this process while the queries ran. The latency targets hold on an idle machine:
a row with ``others_pct`` above a few percent was timed beside other work. On PostgreSQL the
server's own processes count as others, so there it says less.

The benchmark reads the real clock (``time.perf_counter``); Vivy itself reads time only from
its :class:`~vivy.clock.Clock`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from vivy.config import is_postgres_url
from vivy.errors import ConfigError
from vivy.retrieval.lines import local_word_vectors
from vivy.retrieval.ranked import ranked_notes
from vivy.retrieval.ranking import GEMINI_CALIBRATION
from vivy.retrieval.settings import DEFAULT_SETTINGS, RetrievalSettings
from vivy.storage.port import Store
from vivy.storage.postgres.db import connect, migrate
from vivy.storage.postgres.stores import open_postgres_store
from vivy.storage.sqlite.stores import open_sqlite_store
from vivy.storage.vector_index import EXACT_SHARE
from vivy_lab.bench.machine import loop_ms, others_percent, read_cpu_times
from vivy_lab.scratch import new_schema, scratch_database
from vivy_lab.synthetic.postgres import copy_synthetic, exact_recall
from vivy_lab.synthetic.sqlite import GUILD_ID, WALL0, build, quantised_recall

__all__ = ["BenchResult", "format_results", "main", "run_retrieval_bench"]


@dataclass(frozen=True, slots=True)
class BenchResult:
    """Timings and recall for one size."""

    size: int
    fill_s: float
    index_load_s: float
    p50_ms: float
    p99_ms: float
    vector_p50_ms: float
    recall_at_10: float
    #: The median of the passes after the first (None with one pass).
    warm_p50_ms: float | None = None
    #: The machine's speed when the size was timed (:func:`~vivy_lab.bench.machine.loop_ms`).
    loop_ms: float = 0.0
    #: The share of the machine's CPU time others used while the queries ran (None where it
    #: cannot be read): :func:`~vivy_lab.bench.machine.others_percent`.
    others_pct: float | None = None
    #: The PostgreSQL server's ``shared_buffers`` (None on SQLite): whether the postings
    #: stay in the server's own cache sets much of a search's time.
    shared_buffers: str | None = None


def _percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def run_retrieval_bench(
    sizes: Sequence[int],
    queries: int,
    *,
    db_dir: str | None = None,
    settings: RetrievalSettings = DEFAULT_SETTINGS,
    seed: int = 0,
    db_url: str | None = None,
    passes: int = 1,
) -> list[BenchResult]:
    """Fill, time (``passes`` times over the queries) and measure each size, on SQLite, or
    on the PostgreSQL server of ``db_url`` (in a throwaway database dropped afterwards)."""
    with tempfile.TemporaryDirectory(dir=db_dir) as tmp:
        if db_url is None:
            return [
                _sqlite_size(Path(tmp), size, queries, settings, seed, passes) for size in sizes
            ]
        with scratch_database(db_url) as scratch:
            return [
                _postgres_size(Path(tmp), scratch, size, queries, settings, seed, passes)
                for size in sizes
            ]


def _sqlite_size(
    tmp: Path, size: int, queries: int, settings: RetrievalSettings, seed: int, passes: int
) -> BenchResult:
    """One size on SQLite."""
    path = tmp / f"retrieval-{size}.db"
    fill_s, workload = build(path, size, queries, seed)
    speed = loop_ms()
    timed = anyio.run(_time_searches, open_sqlite_store(path), workload, settings, passes)
    vector_timings, recalls = quantised_recall(path, workload, candidates=settings.reranked)
    return _result(
        size,
        fill_s,
        timed,
        statistics.median(vector_timings),
        statistics.fmean(recalls) if recalls else 0.0,
        speed,
    )


def _postgres_size(
    tmp: Path,
    scratch: str,
    size: int,
    queries: int,
    settings: RetrievalSettings,
    seed: int,
    passes: int,
) -> BenchResult:
    """One size on PostgreSQL: the SQLite build copied into a fresh schema of ``scratch``."""
    path = tmp / f"retrieval-{size}.db"
    _, workload = build(path, size, queries, seed)
    url = new_schema(scratch, f"retrieval_{size}")
    with connect(url) as conn:
        migrate(conn)
        conn.execute("SET statement_timeout = 0")  # a bulk build, as vivy db copy's steps
        fill_s = copy_synthetic(path, conn)
    path.unlink()
    speed = loop_ms()
    timed = anyio.run(_time_searches, open_postgres_store(url), workload, settings, passes)
    with connect(url) as conn:
        vector_s, recall = exact_recall(
            conn, workload, limit=settings.candidates, candidates=settings.reranked
        )
        row = conn.execute("SHOW shared_buffers").fetchone()
    result = _result(size, fill_s, timed, vector_s, recall, speed)
    return dataclasses.replace(result, shared_buffers=None if row is None else str(row[0]))


def _result(
    size: int,
    fill_s: float,
    timed: _Timed,
    vector_s: float,
    recall: float,
    speed_ms: float,
) -> BenchResult:
    """One size's row from its passes' timings (the first pass, then the warm ones)."""
    first, *warm = timed.passes
    return BenchResult(
        size=size,
        fill_s=fill_s,
        index_load_s=timed.load_s,
        p50_ms=statistics.median(first) * 1000,
        p99_ms=_percentile(first, 0.99) * 1000,
        vector_p50_ms=vector_s * 1000,
        recall_at_10=recall,
        warm_p50_ms=statistics.median([t for later in warm for t in later]) * 1000
        if warm
        else None,
        loop_ms=speed_ms,
        others_pct=timed.others_pct,
    )


@dataclass(frozen=True, slots=True)
class _Timed:
    """One size's timings: the first search's seconds, each pass's search seconds, and the
    share of the machine's CPU time others used during the passes."""

    load_s: float
    passes: list[list[float]]
    others_pct: float | None


async def _time_searches(
    store: Store,
    workload: Sequence[tuple[list[float], str]],
    settings: RetrievalSettings,
    passes: int,
) -> _Timed:
    """The first search's seconds (on SQLite it loads the guild's vectors into memory, once
    per process), each workload search's in each of ``passes`` passes through ``store`` as the
    bot opens it, and how busy others kept the machine meanwhile; closes the store."""
    try:

        async def one(vector: list[float], text: str) -> float:
            started = time.perf_counter()
            await ranked_notes(
                store.search,
                guild_id=GUILD_ID,
                vector=vector,
                text=text,
                limits=[(None, 10)],
                channel_id=1000,
                now=WALL0,
                calibration=GEMINI_CALIBRATION,
                settings=settings,
                words=local_word_vectors(),
            )
            return time.perf_counter() - started

        first = await one(*workload[0]) if workload else 0.0
        before = read_cpu_times()
        timings = [[await one(vector, text) for vector, text in workload] for _ in range(passes)]
        return _Timed(first, timings, others_percent(before, read_cpu_times()))
    finally:
        store.close()


def format_results(
    results: Sequence[BenchResult], settings: RetrievalSettings, *, postgres: bool = False
) -> str:
    """The results as a table, one row per size."""
    vectors = (
        f"{settings.reranked} binary-index candidates, int8 codes shortlist {EXACT_SHARE}x"
        " the kept for an exact re-rank"
    )
    if postgres:
        buffers = ", ".join(sorted({r.shared_buffers or "?" for r in results}))
        vectors += f" (pgvector's), shared_buffers {buffers}"
    lines = [
        f"retrieval bench: search_notes without the embedding call, top 10, {vectors}",
        f"{'size':>8} {'fill_s':>8} {'load_s':>7} {'p50_ms':>8} {'p99_ms':>8} {'vector_p50_ms':>14}"
        f" {'recall_at_10_vs_exact':>22} {'warm_p50_ms':>12} {'loop_ms':>8} {'others_pct':>10}",
    ]
    for r in results:
        warm = "-" if r.warm_p50_ms is None else f"{r.warm_p50_ms:.2f}"
        others = "-" if r.others_pct is None else f"{r.others_pct:.1f}"
        lines.append(
            f"{r.size:>8} {r.fill_s:>8.1f} {r.index_load_s:>7.2f} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f}"
            f" {r.vector_p50_ms:>14.2f} {r.recall_at_10:>22.3f} {warm:>12} {r.loop_ms:>8.1f}"
            f" {others:>10}"
        )
    return "\n".join(lines)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vivy bench retrieval",
        description="Time note search (without the embedding call) at several sizes.",
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated note counts")
    parser.add_argument("--queries", type=int, default=200, help="queries timed per size")
    parser.add_argument(
        "--candidates",
        type=int,
        default=DEFAULT_SETTINGS.reranked,
        help="approximate-index candidates re-ranked exactly (the retriever's setting by default)",
    )
    parser.add_argument("--db-dir", default=None, help="where the temporary databases go")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        help="times the queries run per size; passes after the first give warm_p50_ms",
    )
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
    """Run ``vivy bench retrieval`` with ``argv``; returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    except ValueError:
        parser.error("--sizes must be comma-separated integers")
    if not sizes or min(sizes) < 1 or min(args.queries, args.candidates, args.passes) < 1:
        parser.error("--sizes, --queries, --candidates and --passes must be positive")
    if args.db_dir is not None and not Path(args.db_dir).is_dir():
        raise ConfigError(f"--db-dir {args.db_dir}: no such directory; create it or leave it out")
    if args.db is not None and not is_postgres_url(args.db):
        parser.error(f"--db {args.db}: expected a postgresql:// URL (SQLite needs no option)")
    settings = RetrievalSettings(reranked=args.candidates)
    results = run_retrieval_bench(
        sizes,
        args.queries,
        db_dir=args.db_dir,
        settings=settings,
        seed=args.seed,
        db_url=args.db,
        passes=args.passes,
    )
    print(format_results(results, settings, postgres=args.db is not None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
