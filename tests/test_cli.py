"""The CLI's error boundary: exception groups unwrapped, one line, documented exit codes."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import vivy
import vivy.cli
from vivy.errors import ConfigError, StorageError
from vivy_lab.commands.bench import BENCHMARKS


def _command(error: BaseException) -> argparse.ArgumentParser:
    """A parser whose one command, ``boom``, raises ``error``."""
    parser = argparse.ArgumentParser(prog="vivy")
    commands = parser.add_subparsers(dest="command", required=True)

    def fail(_args: argparse.Namespace) -> int:
        raise error

    commands.add_parser("boom").set_defaults(handler=fail)
    return parser


@pytest.mark.parametrize(
    ("error", "line", "code"),
    [
        (
            ExceptionGroup("tg", [ExceptionGroup("inner", [StorageError("disk full")])]),
            "vivy boom: disk full",
            vivy.cli.EXIT_RUNTIME,
        ),
        (
            BaseExceptionGroup("tg", [ConfigError("VIVY_X='1' is out of range"), ValueError()]),
            "vivy boom: VIVY_X='1' is out of range",
            vivy.cli.EXIT_USAGE,
        ),
        (StorageError("one\ntwo\nthree"), "vivy boom: one\ntwo", vivy.cli.EXIT_RUNTIME),
        (BaseExceptionGroup("tg", [KeyboardInterrupt()]), "", vivy.cli.EXIT_INTERRUPTED),
    ],
)
def test_errors_become_one_line_and_an_exit_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: BaseException,
    line: str,
    code: int,
) -> None:
    """Vivy's error is found inside nested groups and printed alone, at most two lines."""
    monkeypatch.setattr(vivy.cli, "build_parser", lambda *_: _command(error))
    assert vivy.cli.main(["boom"]) == code
    assert capsys.readouterr().err.rstrip("\n") == line


def test_a_defect_names_its_type_and_the_debug_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error that is not Vivy's own is shown by type, with where to find the traceback."""
    monkeypatch.setattr(vivy.cli, "build_parser", lambda *_: _command(KeyError("x")))
    assert vivy.cli.main(["boom"]) == vivy.cli.EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.startswith("vivy boom: unexpected KeyError: 'x'\n")
    assert "VIVY_LOG_LEVEL=debug" in err
    assert "Traceback" not in err


def test_every_command_is_registered_by_the_module_named_for_it() -> None:
    """``COMMANDS`` says which module registers each subcommand: the parser built for one
    command knows it (and none of another module), and the whole parser knows exactly those
    and the lab's."""
    for name, module in vivy.cli.COMMANDS.items():
        alone = _choices(vivy.cli.build_parser(name))
        assert name in alone
        assert {other for other in alone if vivy.cli.COMMANDS.get(other) != module} == set()
    assert _choices(vivy.cli.build_parser()) == {*vivy.cli.COMMANDS, *vivy.cli.LAB_COMMANDS}


def test_a_command_runs_without_importing_the_other_commands(tmp_path: Path) -> None:
    """``vivy db check`` in a fresh interpreter loads its own module, not the bot, the
    retriever or the other commands' modules."""
    code = (
        "import sys, vivy.cli; vivy.cli.main(['db', 'check', '--db', sys.argv[1]]); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('vivy.commands.', "
        "'vivy.bot', 'vivy.retrieval', 'hikari')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "missing.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("VIVY_")},
    )
    loaded = done.stdout.split()
    assert "vivy.commands.db" in loaded, done.stderr
    assert [m for m in loaded if m.startswith(("vivy.bot", "vivy.retrieval", "hikari"))] == []
    assert [m for m in loaded if m.startswith("vivy.commands.") and m != "vivy.commands.db"] == []


def _choices(parser: argparse.ArgumentParser) -> set[str]:
    """The subcommands ``parser`` knows."""
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(found[0].choices)


def test_lab_commands_come_from_the_entry_point_group() -> None:
    """With the development package installed, its entry points add ``bench`` and ``eval``."""
    parser = vivy.cli.build_parser()
    args = parser.parse_args(["eval", "--check"])
    assert args.command == "eval" and args.check is True
    assert parser.parse_args(["bench", "ingest"]).name == "ingest"


@pytest.mark.parametrize("words", [["eval", "--check"], ["bench", "retrieval", "--sizes", "1"]])
def test_a_lab_command_without_the_lab_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    """Without the development package, a lab command fails in one line naming the install."""
    monkeypatch.setattr(vivy.cli, "entry_points", lambda **_: ())
    assert vivy.cli.main(words) == vivy.cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == f"vivy {words[0]}: {vivy.cli.LAB_HINT}\n"
    assert "not installed" in vivy.cli.build_parser().format_help()


def test_the_product_imports_nothing_from_the_lab() -> None:
    """No module of ``vivy/`` names the development package."""
    root = Path(vivy.cli.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "vivy_lab" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy --version`` prints ``vivy X.Y.Z`` and exits 0."""
    with pytest.raises(SystemExit) as exited:
        vivy.cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"vivy {vivy.__version__}\n"


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command's parser under ``parser``, with its command words."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [((*path, name), sub), *_parsers(sub, (*path, name))]
    return found


def _bench_parsers() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The parsers of ``vivy bench NAME``, which each benchmark builds on its own."""
    found = []
    for name in BENCHMARKS:
        try:
            importlib.import_module(BENCHMARKS[name]).main(["--help"])
        except _Captured as captured:
            found.append((("bench", name), captured.parser))
    return found


class _Captured(Exception):
    """Raised instead of printing a benchmark's help, carrying its parser."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__()
        self.parser = parser


MARKUP = re.compile(r"`|:(func|class|data|mod):|\bseed \d{3}", re.IGNORECASE)


def test_every_command_has_a_plain_description(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command and subcommand says what it does, in plain text: no markup, no seed names."""

    def capture(self: argparse.ArgumentParser, *_args: object, **_kwargs: object) -> None:
        raise _Captured(self)

    monkeypatch.setattr(argparse.ArgumentParser, "print_help", capture)
    parsers = _parsers(vivy.cli.build_parser()) + _bench_parsers()
    assert {words for words, _ in parsers} >= {("run",), ("eval",), ("job", "run")}
    for words, parser in parsers:
        assert parser.description, words
        texts = [parser.description, *(action.help or "" for action in parser._actions)]
        for text in texts:
            assert not MARKUP.search(text), (words, text)
