"""The ``vivy`` command line: one subcommand per module of :mod:`vivy.commands`.

Each command module has ``register(commands)``, which adds its parser and sets ``handler``
to a function taking the parsed arguments and returning the exit code. A command imports only
its own module (:data:`COMMANDS` names it), since the modules import the parts of Vivy they
run: ``vivy db check`` does not load the bot, the retriever and the sentence model; ``vivy
--help`` and an unknown command register them all. Installed packages add subcommands through
the ``vivy.commands`` entry-point group (a name -> a module with ``register``): the development
package in ``lab/`` adds ``vivy bench`` and ``vivy eval`` that way, and without it those two
say in one line how to install it.

:func:`main` is the one error boundary of every command. The settings are read and checked
before the command runs; an error the command raises, bare or wrapped in the exception groups
of anyio's task groups, becomes one line ``vivy COMMAND: what is wrong and what to do`` on
stderr, and its traceback goes to the debug log only (``VIVY_LOG_LEVEL=debug``). The exit
codes are :data:`EXIT_RUNTIME`, :data:`EXIT_USAGE`, :data:`EXIT_INTERRUPTED` and
:data:`EXIT_BROKEN_PIPE`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any, NoReturn

import structlog

from vivy import __version__
from vivy.config import Settings
from vivy.errors import ConfigError, VivyError
from vivy.logs import configure_logging

__all__ = [
    "COMMAND_GROUP",
    "COMMAND_MODULES",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "LAB_COMMANDS",
    "build_parser",
    "error_line",
    "main",
]

#: A command failed while it ran (database, network, LLM, a file it reads).
EXIT_RUNTIME = 1
#: The command line or a setting is wrong; nothing was changed.
EXIT_USAGE = 2
#: Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: The reader of stdout went away, as ``vivy profile ... | head`` does (128 + SIGPIPE).
EXIT_BROKEN_PIPE = 141

#: Lines of an error message shown to the user; the rest goes to the debug log.
MAX_ERROR_LINES = 2

_log = structlog.get_logger(__name__)

#: Each subcommand and the module that registers it, in the order ``--help`` lists them.
COMMANDS: dict[str, str] = {
    "demo": "vivy.commands.demo",
    "run": "vivy.commands.run",
    "import": "vivy.commands.importer",
    "profile": "vivy.commands.inspect",
    "notes": "vivy.commands.inspect",
    "guilds": "vivy.commands.guilds",
    "members": "vivy.commands.members",
    "db": "vivy.commands.db",
    "migrate-v1": "vivy.commands.migrate",
    "reembed": "vivy.commands.reembed",
    "job": "vivy.commands.job",
    "snapshot": "vivy.commands.snapshot",
    "search": "vivy.commands.search",
    "ask": "vivy.commands.ask",
    "export": "vivy.commands.export",
}
#: The modules that provide subcommands, each once, in :data:`COMMANDS`' order.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))

#: The entry-point group through which other installed packages add subcommands.
COMMAND_GROUP = "vivy.commands"

#: Subcommands of the development package, not of the product, and how to get them.
LAB_COMMANDS = ("eval", "bench")
LAB_HINT = "a development tool, not installed: in a clone of the repository run pip install -e lab"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like Vivy's other errors (its
    subcommands' parsers are of this class too).

    Each records itself as the parsed arguments' ``parser``; a subcommand's record replaces
    its parent's, so the arguments name the innermost command (``vivy db backup``), and an
    error found after parsing (a word no parser took) is reported by that command.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_defaults(parser=self)

    def error(self, message: str) -> NoReturn:
        """Print ``vivy COMMAND: message`` and where the usage is, then exit 2."""
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with ``command`` registered, when it is one of :data:`COMMANDS` or an
    installed package's; with every subcommand otherwise (``--help``, a mistyped command)."""
    parser = _Parser(prog="vivy", description="Long-term memory for Discord communities.")
    parser.add_argument("--version", action="version", version=f"vivy {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command]).register(commands)
        return parser
    added = {entry.name: entry for entry in entry_points(group=COMMAND_GROUP)}
    if command in added:
        added[command].load().register(commands)
        return parser
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(commands)
    for entry in added.values():
        entry.load().register(commands)
    for name in LAB_COMMANDS:
        if name not in commands.choices:
            commands.add_parser(name, help=LAB_HINT, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (see the module docstring).

    The settings are checked before the command modules are even imported, so a wrong
    setting is reported at once, by every command.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    configure_logging("warning")
    command = next((word for word in words if not word.startswith("-")), None)
    if command is not None and not {"-h", "--help"} & set(words):
        try:
            settings = Settings.from_env(os.environ)
        except ConfigError as exc:
            return _fail(command, exc)
        configure_logging(settings.log_level or "warning")
        from vivy.storage.postgres.connect import set_timeout  # imported by commands only

        set_timeout(settings.db_timeout_s)
    if command in LAB_COMMANDS and not entry_points(group=COMMAND_GROUP, name=command):
        return _fail(command, ConfigError(LAB_HINT))
    top = build_parser(command)
    args, unknown = top.parse_known_args(words)
    parser: argparse.ArgumentParser = getattr(args, "parser", top)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    name = parser.prog.removeprefix("vivy ") if parser is not top else args.command
    try:
        code = int(args.handler(args))
        sys.stdout.flush()  # a closed pipe fails here, inside the boundary, not at exit
        return code
    except BaseException as exc:  # the boundary: everything becomes an exit code
        return _fail(name, exc)


def _fail(command: str, exc: BaseException) -> int:
    """Report ``exc`` as the failure of ``command``; returns the exit code."""
    leaves = _leaves(exc)
    if any(isinstance(leaf, SystemExit) for leaf in leaves):
        raise exc
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        return EXIT_INTERRUPTED
    if any(isinstance(leaf, BrokenPipeError) for leaf in leaves):
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    _log.debug("command failed", command=command, exc_info=exc)
    ours = [leaf for leaf in leaves if isinstance(leaf, VivyError)]
    print(error_line(command, ours[0] if ours else leaves[0]), file=sys.stderr)
    return EXIT_USAGE if ours and isinstance(ours[0], ConfigError) else EXIT_RUNTIME


def error_line(command: str, exc: BaseException) -> str:
    """What the user sees of ``exc``: ``vivy COMMAND: message``, two lines at most.

    A :class:`VivyError` says what is wrong in its own words, and so does the operating
    system's refusal of a path (a folder this user cannot write, a missing one: an operator's
    mistake, named by its path); anything else is a defect of Vivy's, shown by its type and
    message with a pointer to the debug log.
    """
    if isinstance(exc, VivyError):
        text = str(exc)
    elif isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.filename}: {_os_reason(exc)}"
    else:
        detail = f": {exc}" if str(exc) else ""
        text = (
            f"unexpected {type(exc).__name__}{detail}\n"
            "run again with VIVY_LOG_LEVEL=debug for the traceback, and please report it"
        )
    lines = [line for line in text.splitlines() if line.strip()] or ["failed"]
    message = "\n".join(lines[:MAX_ERROR_LINES])
    prefix = f"vivy {command}: "
    return message if message.startswith(prefix) else prefix + message


def _os_reason(exc: OSError) -> str:
    """What the operating system said about a path, with what the operator can do."""
    reason = (exc.strerror or str(exc)).lower()
    if isinstance(exc, PermissionError):
        return f"{reason}; give this user access to it and its folder"
    if isinstance(exc, FileNotFoundError):
        return f"{reason}; check the path and that its folder exists"
    return reason


def _leaves(exc: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, or ``exc`` itself."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        return


if __name__ == "__main__":
    sys.exit(main())
