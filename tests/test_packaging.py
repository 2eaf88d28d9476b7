"""The product wheel holds the product alone: no benchmarks, evals, eval data or fakes."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_no_lab_code_or_eval_data(tmp_path: Path) -> None:
    """``pip wheel .`` of a clean clone packs ``vivy`` only, with the demo export as its data."""
    clone = tmp_path / "vivy"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(clone), "-w", str(dist)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("vivy-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith("vivy-")}
    assert packages == {"vivy"}
    assert [name for name in names if name.endswith(".json")] == ["vivy/data/demo_export.json"]
    lab = {"bench", "eval", "fakes", "fake_gemini", "synthetic", "baseline", "scratch", "longconv"}
    assert [name for name in names if lab & {Path(part).stem for part in name.split("/")}] == []
