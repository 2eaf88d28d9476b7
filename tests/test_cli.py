"""The CLI's error boundary: exception groups unwrapped, one line, documented exit codes."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import vivy.cli
from vivy.errors import ConfigError, StorageError


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
    monkeypatch.setattr(vivy.cli, "build_parser", lambda: _command(error))
    assert vivy.cli.main(["boom"]) == code
    assert capsys.readouterr().err.rstrip("\n") == line


def test_a_defect_names_its_type_and_the_debug_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error that is not Vivy's own is shown by type, with where to find the traceback."""
    monkeypatch.setattr(vivy.cli, "build_parser", lambda: _command(KeyError("x")))
    assert vivy.cli.main(["boom"]) == vivy.cli.EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.startswith("vivy boom: unexpected KeyError: 'x'\n")
    assert "VIVY_LOG_LEVEL=debug" in err
    assert "Traceback" not in err


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
