"""The retrieval benchmark on a tiny size, on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.pg import embedded_postgres
from vivy.retrieval.settings import DEFAULT_SETTINGS
from vivy_lab.bench.retrieval import format_results, main, run_retrieval_bench


def test_sqlite_run_reports_a_row_per_size() -> None:
    """Two small sizes give two rows of timings, with the quantised search's recall."""
    results = run_retrieval_bench([60, 120], 5)
    assert [r.size for r in results] == [60, 120]
    for r in results:
        assert 0 < r.p50_ms <= r.p99_ms
        assert r.vector_p50_ms > 0
        assert 0.0 <= r.recall_at_10 <= 1.0
        assert r.warm_p50_ms is None  # one pass: nothing warm to report
    table = format_results(results, DEFAULT_SETTINGS).splitlines()
    warm = table[1].split().index("warm_p50_ms")
    assert [line.split()[warm] for line in table[2:]] == ["-", "-"]
    # Each row says how fast the machine was when it was timed.
    loop = table[1].split().index("loop_ms")
    for r, line in zip(results, table[2:], strict=True):
        assert r.loop_ms > 0
        assert float(line.split()[loop]) == pytest.approx(r.loop_ms, abs=0.05)
    # ... and how much of its CPU time other work took meanwhile.
    others = table[1].split().index("others_pct")
    for r, line in zip(results, table[2:], strict=True):
        if r.others_pct is None:
            assert line.split()[others] == "-"
        else:
            assert 0.0 <= r.others_pct <= 100.0
            assert float(line.split()[others]) == pytest.approx(r.others_pct, abs=0.05)


def test_later_passes_give_the_warm_median() -> None:
    """With three passes the first is reported as p50/p99 and the other two as warm_p50_ms."""
    (result,) = run_retrieval_bench([60], 4, passes=3)
    assert result.warm_p50_ms is not None and result.warm_p50_ms > 0
    header, row = (
        line.split() for line in format_results([result], DEFAULT_SETTINGS).splitlines()[1:]
    )
    assert float(row[header.index("warm_p50_ms")]) == pytest.approx(result.warm_p50_ms, abs=0.01)


def test_main_refuses_zero_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """``--passes 0`` is a usage error naming the option."""
    with pytest.raises(SystemExit) as info:
        main(["--passes", "0"])
    assert info.value.code == 2
    assert "--passes" in capsys.readouterr().err


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
def test_postgres_run_searches_the_same_notes_and_drops_its_database(pg_server: Any) -> None:
    """On PostgreSQL the copied notes are found (the vector search's top 10 is the exact one
    on a small guild), and the throwaway database is gone afterwards."""
    url = str(pg_server.get_uri())
    with psycopg.connect(url) as conn:
        before = conn.execute("SELECT datname FROM pg_database").fetchall()
    results = run_retrieval_bench([80], 5, db_url=url)
    assert len(results) == 1
    assert 0 < results[0].p50_ms <= results[0].p99_ms
    assert results[0].recall_at_10 == 1.0
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT datname FROM pg_database").fetchall() == before
    table = format_results(results, DEFAULT_SETTINGS, postgres=True)
    assert "pgvector" in table.splitlines()[0]
    assert results[0].shared_buffers is not None
    assert f"shared_buffers {results[0].shared_buffers}" in table.splitlines()[0]
    assert table.splitlines()[2].split()[0] == "80"


def test_main_refuses_a_db_that_is_not_a_postgresql_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--db`` takes a PostgreSQL URL only; a path is a usage error."""
    with pytest.raises(SystemExit) as info:
        main(["--db", "notes.db"])
    assert info.value.code == 2
    assert "postgresql://" in capsys.readouterr().err
