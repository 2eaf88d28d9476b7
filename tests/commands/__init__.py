"""Helpers for the command tests: run ``vivy.cli.main`` with the operator commands registered."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import vivy.cli


@dataclass(frozen=True)
class Result:
    """Exit code and captured output of one command."""

    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Result:
    """Run ``vivy ARGV...`` in-process; a usage error's ``SystemExit`` becomes its code."""
    capsys.readouterr()
    try:
        code = vivy.cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)
