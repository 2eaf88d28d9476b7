"""A short run of the memory page's benchmark (the full one is
`python benchmarks/memory_page.py --size 100000`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_page.py"


def test_prints_a_timed_row_for_every_view(tmp_path: Path) -> None:
    """On a small synthetic guild every view answers 200 and gets its p50, p90 and worst time."""
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--size",
            "200",
            "--runs",
            "2",
            "--db",
            str(tmp_path / "g.db"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "built 200 notes in " + lines[0].split(" in ", 1)[1]
    assert lines[1].split()[:4] == ["view", "p50_ms", "p90_ms", "max_ms"]
    rows = {name: figures for name, *figures in (line.rsplit(maxsplit=3) for line in lines[2:])}
    assert set(rows) == {
        "timeline (newest week)",
        "timeline (a week in the middle)",
        "profile (45 facts, 10 removed)",
        "members",
        "health and job log",
        "search: what did they decide about the release",
        "search: who talked about the garden",
        "search: plans",
    }
    for figures in rows.values():
        p50, p90, worst = (float(f) for f in figures)
        assert 0 < p50 <= p90 <= worst
