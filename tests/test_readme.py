"""The README's first command works from a fresh clone: a virtual environment, the install and
the demo, on the shipped sentence model. The second command (``bash scripts/check``) is what
CI runs from a fresh clone (``.ci/run``), so the suite does not run it inside itself; the
scripts the docs name are started by ``tests/test_docs.py``."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from vivy.commands.demo import PARAPHRASED_ANSWER

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
        and key not in {"GEMINI_API_KEY", "MEMORY_GEMINI_TOKEN", "DISCORD_TOKEN", "PYTHONPATH"}
    }


def test_readme_opens_with_two_commands() -> None:
    """Exactly two commands: set up and run the demo; set up and run the checks, which is
    exactly what CI runs."""
    commands = readme_commands()
    assert len(commands) == 2
    assert commands[0] == "bash scripts/demo"
    assert commands[1] == "bash scripts/check"
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("exec bash scripts/check")


def test_the_first_command_runs_the_demo_in_a_fresh_clone(tmp_path: Path) -> None:
    """In a fresh clone the first command installs Vivy without its development tools and
    runs the demo to its end with the shipped sentence model: the memory context, the answer,
    and the question in other words answered by the message that says it in others."""
    clone = tmp_path / "vivy"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    demo = readme_commands()[0]
    first = subprocess.run(
        ["bash", "-c", demo],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=900,
        env=clean_environment(),
        check=False,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    tools = subprocess.run(
        [str(clone / ".venv" / "bin" / "python"), "-c", "import pytest"],
        capture_output=True,
        check=False,
    )
    assert tools.returncode != 0, "the first command installs Vivy without the test tools"
    out = first.stdout
    assert "Memory context" in out and "Vivy would answer" in out
    section = out.split("======== Memory for a question in other words ")[1]
    notes = section.split("<notes>")[1].split("</notes>")[0]
    assert f"> Maya, Mar 2: wait kai is a musician?? {PARAPHRASED_ANSWER}" in notes
    assert "The message that answers it, quoted in the memory: > Maya, Mar 2:" in section
