"""``vivy job run`` and ``vivy snapshot`` against an imported conversation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.importer import GUILD, TWO_DAYS

from . import run_cli


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A database holding the two-day fixture export, nightly jobs included."""
    db = tmp_path / "v.db"
    assert run_cli(capsys, "import", str(TWO_DAYS), "--db", str(db)).code == 0
    return db


def test_job_run_is_idempotent_per_day(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A day the import already processed is reported as done and changes nothing."""
    result = run_cli(capsys, "job", "run", "--db", str(imported), "--date", "2026-04-06")
    assert result.code == 0
    assert "complete" in result.out
    assert "topic clusters written: 0" in result.out
    assert "already done before" in result.out


def test_job_run_without_a_key_says_so_in_its_report_and_logs_nothing(
    imported: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At the default log level a job run prints its report only; the report names the
    offline provider it used, instead of a log line about the missing key on every run."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_GEMINI_TOKEN", raising=False)
    monkeypatch.delenv("VIVY_LOG_LEVEL", raising=False)
    result = run_cli(capsys, "job", "run", "--db", str(imported), "--date", "2026-04-05")
    assert result.code == 0
    assert result.err == ""
    assert result.out.startswith("nightly job for 2026-04-05 (offline LLM): complete")


def test_job_run_rejects_a_bad_date(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed date is a usage error (exit 2) naming the value."""
    result = run_cli(capsys, "job", "run", "--db", str(imported), "--date", "06/04")
    assert result.code == 2
    assert "06/04" in result.err


def test_snapshot_writes_one_markdown_file_per_guild(
    imported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The snapshot lists people with sourced facts and the recent notes."""
    out = tmp_path / "snap"
    result = run_cli(capsys, "snapshot", "--db", str(imported), "--out", str(out))
    assert result.code == 0
    files = sorted(out.glob("guild-*.md"))
    assert len(files) == 1
    text = files[0].read_text(encoding="utf-8")
    assert "## People" in text and "## Recent notes" in text and "## Recent topic clusters" in text
    assert "Lives in Austin — _" in text


def test_snapshot_of_a_missing_database_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing database is a one-line error with exit 1, and no file is created."""
    missing = tmp_path / "none.db"
    result = run_cli(capsys, "snapshot", "--db", str(missing), "--out", str(tmp_path / "s"))
    assert result.code == 1
    assert "no such database" in result.err
    assert not missing.exists()


def test_search_ranks_the_matching_note_first(
    imported: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vivy search` prints the fused ranking with the note about the query on top."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_GEMINI_TOKEN", raising=False)
    result = run_cli(capsys, "search", "--db", str(imported), "--guild", str(GUILD), "Austin")
    assert result.code == 0
    first = result.out.splitlines()[0]
    assert first.startswith(" 1. ")
    assert "Austin" in result.out
    # The message that said it is quoted under its note, with its author and date.
    quoted = [line for line in result.out.splitlines() if line.lstrip().startswith("> ")]
    assert any("I live in Austin" in line and ", Apr " in line for line in quoted), result.out


def test_search_quotes_mentions_by_name(
    imported: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quoted line that mentions a member shows "@Name", as notes do, not Discord's raw
    ``<@id>``."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_GEMINI_TOKEN", raising=False)
    result = run_cli(
        capsys, "search", "--db", str(imported), "--guild", str(GUILD), "coming to movie night"
    )
    assert result.code == 0
    quoted = [line for line in result.out.splitlines() if "still coming to movie night" in line]
    assert quoted, result.out
    assert all("<@" not in line and ": @" in line for line in quoted), quoted


def test_search_usage_errors(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A limit out of range is a usage error (exit 2)."""
    result = run_cli(capsys, "search", "--db", str(imported), "--guild", "1", "--limit", "0", "x")
    assert result.code == 2
