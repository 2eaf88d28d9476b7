"""``vivy import``: the report, one-line errors, and the progress line on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.importer import THREAD_LATER, TWO_DAYS, snapshot
from vivy.commands.importer import progress_line, run_import
from vivy.importer import ImportProgress

from . import run_cli


def test_import_prints_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A successful import exits 0 and reports messages, skips, notes, facts and days."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_GEMINI_TOKEN", raising=False)
    db = tmp_path / "v.db"
    r = run_cli(capsys, "import", str(TWO_DAYS), "--db", str(db))
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        f"imported 1 file into {db} (offline LLM)",
        "  messages:    25 seen, 22 stored, 0 imported before",
        "  skipped:     by type: ChannelPinnedMessage 1, GuildMemberJoin 1; "
        "by the capture gate: bot 1",
        "  notes:       5 conversation notes, 1 topic cluster",
        "  profiles:    5 facts added",
        "  nightly job: 2026-04-06, 2026-04-07",
    ]
    assert "[info" not in r.out + r.err  # pipeline logs stay out of the command's output


def test_reimport_with_a_later_export_via_vivy_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """VIVY_DB names the database; known ids are counted, repeated copies too."""
    db = tmp_path / "v.db"
    monkeypatch.setenv("VIVY_DB", str(db))
    assert run_cli(capsys, "import", str(TWO_DAYS)).code == 0
    r = run_cli(capsys, "import", str(TWO_DAYS), str(THREAD_LATER))
    assert r.code == 0
    assert (
        "  messages:    27 seen (3 more repeated across files), 2 stored, 23 imported before"
        in (r.out.splitlines())
    )
    assert "  nightly job: 2026-04-08" in r.out.splitlines()


def test_malformed_file_is_one_line_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad file exits 1 with `vivy import: file: field: problem` and no write."""
    db = tmp_path / "v.db"
    assert run_cli(capsys, "import", str(TWO_DAYS), "--db", str(db)).code == 0
    before = snapshot(db)
    bad = tmp_path / "export.json"
    bad.write_text(TWO_DAYS.read_text().replace('"isBot": false', '"isBot": "no"', 1))
    r = run_cli(capsys, "import", str(THREAD_LATER), str(bad), "--db", str(db))
    assert r.code == 1
    assert r.out == ""
    assert r.err == (
        f"vivy import: {bad}: [0].messages[0].author.isBot: expected true or false, "
        "got the string 'no'\n"
    )
    assert snapshot(db) == before


def test_missing_file_and_no_file_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing file exits 1 without creating the database; no PATH at all exits 2."""
    db = tmp_path / "v.db"
    missing = tmp_path / "nope.json"
    r = run_cli(capsys, "import", str(missing), "--db", str(db))
    assert r.code == 1
    assert r.err == f"vivy import: {missing}: no such file\n"
    assert not db.exists()
    assert run_cli(capsys, "import", "--db", str(db)).code == 2


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        """Pretend to be a tty."""
        return True


def test_progress_is_one_updating_line_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a tty the progress line is rewritten in place and cleared at the end."""
    err = _Terminal()
    code = run_import([str(TWO_DAYS)], database=str(tmp_path / "v.db"), environ={}, stderr=err)
    assert code == 0
    text = err.getvalue()
    assert "\n" not in text
    assert text.count("\r") >= 3
    assert "replaying: 23/23 messages, 22 stored, 0 already imported" in text
    assert text.endswith("\r\x1b[K")
    assert "imported 1 file" in capsys.readouterr().out


def test_progress_is_quiet_off_a_terminal(tmp_path: Path) -> None:
    """Without a tty nothing but the report is written."""
    err = io.StringIO()
    assert run_import([str(TWO_DAYS)], database=str(tmp_path / "v.db"), environ={}, stderr=err) == 0
    assert err.getvalue() == ""


def test_progress_line_throttles_repeats() -> None:
    """Updates that change nothing visible are not redrawn."""
    out = io.StringIO()
    show = progress_line(out)
    for seen in range(1, 11):
        show(ImportProgress("replaying", seen, 100, seen, 0, 0))
    show(ImportProgress("replaying", 100, 100, 100, 0, 3))
    assert out.getvalue().count("\r") == 2
