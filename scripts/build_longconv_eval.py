#!/usr/bin/env python3
"""Build the long-conversation retrieval eval set (issue 13, Build item 4).

    python scripts/build_longconv_eval.py [--seed N] [--guilds N] [--out PATH] [--small-out PATH]

It writes ``lab/vivy_lab/data/longconv_eval.json`` (the full set) and
``tests/lab/eval/longconv_small.json`` (the test suite's subset), and prints the report of the
full set. How the set is made is told in :mod:`vivy_lab.synthetic.longconv`, which holds the
generator.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vivy_lab.synthetic.longconv import build, dumps, small_subset
from vivy_lab.synthetic.longconv.report import report

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "lab" / "vivy_lab" / "data" / "longconv_eval.json"
DEFAULT_SMALL_OUT = ROOT / "tests" / "lab" / "eval" / "longconv_small.json"
DEFAULT_SEED = 7
DEFAULT_GUILDS = 8


def main() -> None:
    """Generate both files and print the report of the full set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="RNG seed (default %(default)s)"
    )
    parser.add_argument(
        "--guilds", type=int, default=DEFAULT_GUILDS, help="number of guilds in the full set"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the full set goes")
    parser.add_argument(
        "--small-out", type=Path, default=DEFAULT_SMALL_OUT, help="where the test-suite subset goes"
    )
    args = parser.parse_args()
    data = build(args.seed, args.guilds)
    args.out.write_text(dumps(data), encoding="utf-8")
    args.small_out.write_text(dumps(small_subset(data)), encoding="utf-8")
    print("\n".join(report(data)))


if __name__ == "__main__":
    main()
