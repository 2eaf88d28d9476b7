"""The ``vivy`` command line: one subcommand per module of :mod:`vivy.commands`.

Each command module has ``register(commands)``, which adds its parser and sets ``handler``
to a function taking the parsed arguments and returning the exit code. Heavy imports happen
inside the handlers, so ``vivy --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from vivy.errors import VivyError
from vivy.logs import configure_logging

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

#: The modules that provide subcommands, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "vivy.commands.demo",
    "vivy.commands.run",
    "vivy.commands.importer",
    "vivy.commands.inspect",
    "vivy.commands.db",
    "vivy.commands.migrate",
    "vivy.commands.reembed",
    "vivy.commands.job",
    "vivy.commands.snapshot",
    "vivy.commands.eval",
    "vivy.commands.search",
    "vivy.commands.bench",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="vivy", description="Long-term memory for Discord communities."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (2 for usage errors)."""
    args = build_parser().parse_args(argv)
    configure_logging("warning")
    try:
        return int(args.handler(args))
    except VivyError as exc:
        print(f"vivy {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
