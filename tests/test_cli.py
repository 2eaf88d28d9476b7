"""The CLI's error boundary: exception groups unwrapped, one line, documented exit codes."""

from __future__ import annotations

import argparse

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
