"""The README's two commands work from a fresh clone: the demo, and the checks; and the
scripts the docs name run in the environment of the first."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.test_docs import BENCHMARK_SETUP, documented_scripts, quick_run, shell_lines

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The commands of the README's first code block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.DOTALL)
    assert block is not None, "the README must open with a sh code block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def clean_environment() -> dict[str, str]:
    """This environment without Vivy's settings, keys or an active virtual environment."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VIVY_", "PYTEST", "VIRTUAL_ENV"))
        and key not in {"GEMINI_API_KEY", "MEMORY_GEMINI_TOKEN", "DISCORD_TOKEN"}
    }


def test_readme_opens_with_two_commands() -> None:
    """Exactly two commands: set up and run the demo; set up and run the checks."""
    commands = readme_commands()
    assert len(commands) == 2
    assert "vivy demo" in commands[0]
    assert "scripts/check" in commands[1]
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("exec bash scripts/check")


def test_readme_commands_succeed_in_a_fresh_clone(tmp_path: Path) -> None:
    """In a fresh clone the demo runs to its end, every documented script starts in its
    environment with the benchmarks' documented additions, and the check script passes on a
    small test."""
    clone = tmp_path / "vivy"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    demo, check = readme_commands()
    first = subprocess.run(
        ["bash", "-c", demo],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_environment(),
        check=False,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Memory context" in first.stdout and "Vivy would answer" in first.stdout
    assert BENCHMARK_SETUP in shell_lines()
    setup = subprocess.run(
        ["bash", "-c", BENCHMARK_SETUP],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_environment(),
        check=False,
    )
    assert setup.returncode == 0, setup.stderr[-3000:]
    for script in sorted(documented_scripts()):
        started = subprocess.run(
            quick_run(".venv/bin/python", script),
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=300,
            env=clean_environment(),
            check=False,
        )
        assert started.returncode == 0, (script, started.stderr[-3000:])
    second = subprocess.run(
        ["bash", "-c", f"{check} tests/state/test_gate.py"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_environment(),
        check=False,
    )
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert re.search(r"\d+ passed", second.stdout)
