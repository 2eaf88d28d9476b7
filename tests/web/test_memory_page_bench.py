"""A short run of the memory page's benchmark (the full one is
`python benchmarks/memory_page.py --size 100000`), on each engine, in-process through the
script's ``main`` (that the script starts on its own is tests/test_docs.py's)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.pg import embedded_postgres

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_page.py"
VIEWS = {
    "timeline (newest week)",
    "timeline (a week in the middle)",
    "profile (45 facts, 10 removed)",
    "members",
    "health and job log",
    "search: what did they decide about the release",
    "search: who talked about the garden",
    "search: plans",
}


def _rows(database: str, capsys: pytest.CaptureFixture[str]) -> dict[str, list[str]]:
    """Run the benchmark on a 200-note guild in ``database``; its rows by view."""
    spec = importlib.util.spec_from_file_location("memory_page_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--size", "200", "--runs", "2", "--db", database]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("built 200 notes in ")
    header = next(i for i, line in enumerate(lines) if line.startswith("view "))
    assert lines[header].split()[:4] == ["view", "p50_ms", "p90_ms", "max_ms"]
    split = (line.rsplit(maxsplit=3) for line in lines[header + 1 :])
    return {name: figures for name, *figures in split}


def _timed(rows: dict[str, list[str]]) -> None:
    """Every view has a row, its p50 <= p90 <= worst."""
    assert set(rows) == VIEWS
    for figures in rows.values():
        p50, p90, worst = (float(f) for f in figures)
        assert 0 < p50 <= p90 <= worst


def test_prints_a_timed_row_for_every_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a small synthetic guild every view answers 200 and gets its p50, p90 and worst time."""
    _timed(_rows(str(tmp_path / "g.db"), capsys))


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
def test_on_postgresql_it_drops_its_database(
    pg_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """On PostgreSQL every view is timed too, in a throwaway database gone afterwards."""
    url = str(pg_server.get_uri())
    with psycopg.connect(url) as conn:
        before = conn.execute("SELECT datname FROM pg_database").fetchall()
    _timed(_rows(url, capsys))
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT datname FROM pg_database").fetchall() == before
