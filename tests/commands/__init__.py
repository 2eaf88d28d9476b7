"""Helpers for the command tests: run ``vivy.cli.main`` with the operator commands registered."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import vivy.cli

OPERATOR_COMMANDS = (
    "vivy.commands.importer",
    "vivy.commands.inspect",
    "vivy.commands.db",
    "vivy.commands.migrate",
    "vivy.commands.reembed",
)


@dataclass(frozen=True)
class Result:
    """Exit code and captured output of one command."""

    code: int
    out: str
    err: str


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str
) -> Result:
    """Run ``vivy ARGV...`` in-process; a usage error's ``SystemExit`` becomes its code."""
    modules = tuple(dict.fromkeys((*vivy.cli.COMMAND_MODULES, *OPERATOR_COMMANDS)))
    monkeypatch.setattr(vivy.cli, "COMMAND_MODULES", modules)
    capsys.readouterr()
    try:
        code = vivy.cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)
