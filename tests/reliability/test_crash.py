"""A short run of the SIGKILL crash harness (the full one is `python benchmarks/crash.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "crash.py"


def test_kills_lose_nothing_and_duplicate_nothing() -> None:
    """Three SIGKILLs mid-replay: every acked message in one note or buffer, invariants hold
    (the children embed with the hashing double: no invariant reads what a vector means)."""
    result = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            *("--kills", "3", "--messages", "800", "--seed", "3", "--hashed-embeddings"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    figures = dict(
        line.split(": ", 1)
        for line in result.stdout.splitlines()
        if ": " in line and not line.startswith(" ")
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert figures["kills"] == "3"
    assert figures["invariant_failures"] == "0"
    assert int(figures["acked_messages"]) >= 800
