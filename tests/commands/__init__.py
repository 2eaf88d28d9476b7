"""Helpers for the command tests: run ``vivy.cli.main`` in-process, or ``vivy`` in a clean
environment without the powers of root over files."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
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


def drop_file_override() -> None:
    """Run as root without the capabilities that bypass file permissions (a read-only file
    then stays read-only); a no-op for other users."""
    if os.geteuid() != 0:
        return
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def command_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This environment without Vivy's settings and keys (so each command logs at its default
    level, as for a new user), plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VIVY_", "GOOGLE_GEMINI"))
        and key not in {"GEMINI_API_KEY", "MEMORY_GEMINI_TOKEN", "DISCORD_TOKEN"}
    }
    return {**env, **extra}
