"""The ``vivy`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vivy", description="Long-term memory for Discord communities."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="replay a bundled conversation offline and show what Vivy remembers"
    )
    demo.add_argument("--db", default=None, help="database file (default: a temporary file)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _build_parser().parse_args(argv)
    if args.command == "demo":
        from vivy.demo import run_demo

        return run_demo(args.db)
    return 2


if __name__ == "__main__":
    sys.exit(main())
