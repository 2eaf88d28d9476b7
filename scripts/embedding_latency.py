#!/usr/bin/env python3
"""How fast the offline embedding model embeds, on one core: load, queries, documents, memory.

    python scripts/embedding_latency.py [--queries 2000]

The process pins itself to one CPU and keeps numpy's thread pools to one thread, then loads
the local model (:class:`vivy.llm.offline.LocalEmbedder`), embeds every question of the
bundled long-conversation eval set one at a time (a reply embeds its question alone: the
question and up to two earlier messages) and every evidence window of it in batches, as an
import does. It prints ``name: value`` lines: the load time, query p50/p99 in milliseconds,
documents per second, the resident memory the model added, and ``others_pct`` /
``loop_ms`` (how busy the rest of the machine was and how fast this process ran, as
``vivy bench`` reports them), since figures taken on a shared machine are noisy, and
``blas_kernels``: the kernels numpy's OpenBLAS runs (as threadpoolctl reads them), which set
the pace of the model's matrix products. Where the environment forces an older core type
(``OPENBLAS_CORETYPE``, ``OPENBLAS_L2_SIZE``), unset both in the command to measure what a
current numpy does on the processor: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python
scripts/embedding_latency.py``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from threadpoolctl import threadpool_info  # noqa: E402

from vivy.llm.offline import LocalEmbedder  # noqa: E402
from vivy_lab.bench.machine import loop_ms, others_percent, read_cpu_times  # noqa: E402
from vivy_lab.eval.baselines import raw_windows  # noqa: E402
from vivy_lab.eval.longconv import load_longconv  # noqa: E402


def rss_mb() -> float:
    """The process's peak resident memory in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def blas_kernels() -> str:
    """The kernels numpy's BLAS runs, and what the environment forced, e.g. ``Haswell``."""
    kernels = ", ".join(
        f"{pool['internal_api']} {pool.get('architecture', '?')}"
        for pool in threadpool_info()
        if pool["user_api"] == "blas"
    )
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return f"{kernels or 'unknown'} ({'OPENBLAS_CORETYPE=' + forced if forced else 'unforced'})"


def main(count: int) -> None:
    """Measure and print."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    data = load_longconv()
    questions = [q.question for guild in data.guilds for q in guild.questions]
    windows = [text for guild in data.guilds for _, text in raw_windows(guild)]
    before_mb = rss_mb()
    embedder = LocalEmbedder()
    started = time.perf_counter()
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - started
    model_mb = rss_mb() - before_mb
    for question in questions[:50]:
        embedder.embed([question])
    cpu_before = read_cpu_times()
    speed = loop_ms()
    times: list[float] = []
    for index in range(count):
        question = questions[index % len(questions)]
        started = time.perf_counter()
        embedder.embed([question])
        times.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    for at in range(0, len(windows), 64):
        embedder.embed(windows[at : at + 64])
    documents_s = time.perf_counter() - started
    busy = others_percent(cpu_before, read_cpu_times())
    times.sort()
    print(f"model: {embedder.model} ({embedder.dimension} dimensions)")
    print(f"load_s: {load_s:.3f}")
    print(f"queries: {count}")
    print(f"query_p50_ms: {statistics.median(times):.3f}")
    print(f"query_p99_ms: {times[int(0.99 * (len(times) - 1))]:.3f}")
    print(f"documents_per_s: {len(windows) / documents_s:.0f} ({len(windows)} windows)")
    print(f"model_rss_mb: {model_mb:.1f}")
    print(f"others_pct: {'n/a' if busy is None else f'{busy:.1f}'}")
    print(f"loop_ms: {speed:.1f}")
    print(f"blas_kernels: {blas_kernels()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    main(parser.parse_args().queries)
