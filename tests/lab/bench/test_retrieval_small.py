"""The retrieval benchmark runs end to end at a small size (no timing assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vivy_lab.bench import retrieval as bench


def test_bench_prints_every_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 200-note run prints size, p50_ms, p99_ms and recall_at_10_vs_exact."""
    code = bench.main(["--sizes", "200", "--queries", "5", "--db-dir", str(tmp_path)])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1].split()
    for column in ("size", "p50_ms", "p99_ms", "recall_at_10_vs_exact"):
        assert column in header
    row = dict(zip(header, lines[2].split(), strict=True))
    assert row["size"] == "200"
    assert 0.0 <= float(row["recall_at_10_vs_exact"]) <= 1.0
    assert float(row["p99_ms"]) >= float(row["p50_ms"]) > 0


def test_bench_rejects_bad_sizes() -> None:
    """Sizes must be positive integers."""
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "ten"])
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "0"])
