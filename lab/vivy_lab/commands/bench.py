"""``vivy bench NAME``: the benchmark scripts, which print ``name: value`` figures."""

from __future__ import annotations

import argparse
import importlib

__all__ = ["BENCHMARKS", "register"]

#: Benchmark name -> module with ``main(argv) -> int``.
BENCHMARKS = {
    "ingest": "vivy_lab.bench.ingest",
    "import": "vivy_lab.bench.importer",
    "llm-cost": "vivy_lab.bench.llm_cost",
    "retrieval": "vivy_lab.bench.retrieval",
}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy bench``."""
    parser = commands.add_parser(
        "bench",
        help="run a benchmark and print its figures",
        description="Run a benchmark; options after the name go to it (try NAME --help).",
    )
    parser.add_argument("name", choices=sorted(BENCHMARKS), help="which benchmark")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="options of the benchmark")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    module = importlib.import_module(BENCHMARKS[args.name])
    return int(module.main(args.options))
