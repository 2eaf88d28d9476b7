"""The ingest benchmark on a tiny size: it runs, counts right and reports every figure."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.pg import embedded_postgres
from vivy.storage.sqlite.db import connect
from vivy_lab.bench.ingest import format_results, main, run_ingest_bench

FIGURES = {
    "messages",
    "seconds",
    "messages_per_s",
    "ack_p50_ms",
    "ack_p99_ms",
    "raw_sqlite_batched_rows_per_s",
    "ratio_vs_raw",
    "ratio_vs_raw_lowest_run",
    "ratio_vs_raw_highest_run",
    "json_rewrite_rows_per_s",
    "ratio_vs_json_rewrite",
    "lockstep_messages_per_s",
    "lockstep_ack_p50_ms",
    "lockstep_ack_p99_ms",
    "lockstep_ratio_vs_raw",
}


def count(path: Path, sql: str) -> int:
    """The single integer ``sql`` returns from the database at ``path``."""
    conn = connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def test_tiny_run_stores_every_message(tmp_path: Path) -> None:
    """3 channels × 5 messages: every figure is reported and all 15 messages are stored."""
    results = run_ingest_bench(3, 5, tmp_path)
    assert set(results) >= FIGURES
    assert results["messages"] == 15
    assert results["rows_stored"] == 15
    assert results["stored_outcomes"] == 15
    assert results["buffers_handed_off"] == 0  # 5 messages stay below the 100-message cap
    assert all(value >= 0 for value in results.values())
    assert results["ack_p50_ms"] <= results["ack_p99_ms"] <= results["ack_max_ms"]
    assert count(tmp_path / "vivy-ingest-0.db", "SELECT COUNT(*) FROM buffer_messages") == 15
    assert count(tmp_path / "vivy-lockstep.db", "SELECT COUNT(*) FROM buffer_messages") == 15
    assert count(tmp_path / "raw-batched-0.db", "SELECT COUNT(*) FROM buffer_messages") == 15


def test_every_run_stores_every_message_and_the_median_is_reported(tmp_path: Path) -> None:
    """Each gateway and raw run has a database of its own holding every message."""
    results = run_ingest_bench(2, 4, tmp_path, runs=3)
    assert results["runs"] == 3
    for n in range(3):
        for name in (f"vivy-ingest-{n}.db", f"raw-batched-{n}.db"):
            assert count(tmp_path / name, "SELECT COUNT(*) FROM buffer_messages") == 8
    assert 0 < results["ratio_vs_raw_lowest_run"] <= results["ratio_vs_raw"] < math.inf
    assert results["ratio_vs_raw"] <= results["ratio_vs_raw_highest_run"]


def test_json_baseline_keeps_one_array_per_channel(tmp_path: Path) -> None:
    """The seed-002 baseline leaves one row per channel holding that channel's messages."""
    run_ingest_bench(3, 5, tmp_path)
    conn = connect(tmp_path / "json-rewrite.db")
    try:
        rows = conn.execute("SELECT channel_id, messages FROM channel_buffers").fetchall()
    finally:
        conn.close()
    assert len(rows) == 3
    for channel_id, messages in rows:
        texts = [entry["text"] for entry in json.loads(messages)]
        assert len(texts) == 5
        assert all(f"in channel {int(channel_id) - 1000}:" in text for text in texts)


def test_cap_closes_buffers_during_the_run(tmp_path: Path) -> None:
    """Past the 100-message cap every channel hands off a full buffer and keeps going."""
    results = run_ingest_bench(2, 120, tmp_path)
    assert results["messages"] == results["rows_stored"] == 240
    assert results["buffers_handed_off"] == 2


def test_main_prints_one_figure_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The command prints ``name: value`` lines, counts as integers."""
    assert main(["--channels", "2", "--messages", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    figures = dict(line.split(": ") for line in lines)
    assert set(figures) >= FIGURES
    assert figures["messages"] == "6"
    assert all(float(value) >= 0 for value in figures.values())


def test_main_runs_on_trio(capsys: pytest.CaptureFixture[str]) -> None:
    """``--backend trio`` runs the same path on trio."""
    assert main(["--channels", "2", "--messages", "2", "--backend", "trio"]) == 0
    assert "rows_stored: 4" in capsys.readouterr().out.splitlines()


def test_a_window_of_one_still_stores_every_message(tmp_path: Path) -> None:
    """With one message in flight at a time the gateway sender stores every message."""
    results = run_ingest_bench(2, 7, tmp_path, window=1)
    assert results["window"] == 1
    assert results["rows_stored"] == 14
    conn = connect(tmp_path / "vivy-ingest-0.db")
    try:
        texts = [
            str(row[0])
            for row in conn.execute(
                "SELECT m.text FROM buffer_messages m JOIN channel_buffers b"
                " ON b.id = m.buffer_id WHERE b.channel_id = 1000 ORDER BY m.message_id"
            )
        ]
    finally:
        conn.close()
    assert [text.split(" in ")[0] for text in texts] == [f"message {k}" for k in range(7)]


@pytest.mark.parametrize("flag", ["--channels", "--messages", "--window", "--runs"])
def test_main_rejects_empty_sizes(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A zero size is a usage error, not a run."""
    with pytest.raises(SystemExit) as info:
        main([flag, "0"])
    assert info.value.code == 2
    assert "at least 1" in capsys.readouterr().err


def test_format_results_writes_counts_as_integers() -> None:
    """Counts are printed without decimals, measurements with three."""
    text = format_results({"messages": 15.0, "ack_p50_ms": 1.23456})
    assert text.splitlines() == ["messages: 15", "ack_p50_ms: 1.235"]


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
def test_postgres_run_reports_every_figure_and_leaves_the_server_as_it_was(
    pg_server: Any,
) -> None:
    """On PostgreSQL every figure is reported (the raw baseline is psycopg's), every message
    is stored, and the run's throwaway database is dropped afterwards."""
    url = str(pg_server.get_uri())
    before = databases(url)
    results = run_ingest_bench(3, 5, db_url=url, runs=2)
    raw = {"raw_sqlite_batched_rows_per_s"}
    assert set(results) >= (FIGURES - raw) | {"raw_psycopg_batched_rows_per_s"}
    assert not set(results) & raw
    assert results["messages"] == results["rows_stored"] == results["stored_outcomes"] == 15
    assert 0 < results["ratio_vs_raw"] < math.inf
    assert databases(url) == before


def databases(url: str) -> set[str]:
    """The names of the databases on the server of ``url``."""
    with psycopg.connect(url) as conn:
        return {str(row[0]) for row in conn.execute("SELECT datname FROM pg_database")}


def test_main_refuses_a_db_that_is_not_a_postgresql_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--db`` takes a PostgreSQL URL only; a path is a usage error."""
    with pytest.raises(SystemExit) as info:
        main(["--db", "vivy.db"])
    assert info.value.code == 2
    assert "postgresql://" in capsys.readouterr().err
