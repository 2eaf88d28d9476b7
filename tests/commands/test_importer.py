"""``vivy import``: the report, one-line errors, and its progress (a bar or log lines)."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.importer import THREAD_LATER, TWO_DAYS, snapshot
from vivy.commands import importer as importer_command
from vivy.commands.importer import (
    ETA_AFTER,
    LOG_EVERY_S,
    Eta,
    describe,
    format_report,
    run_import,
    summarised_warnings,
    summary,
)
from vivy.importer import ImportProgress, ImportReport

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


class _Ticker:
    """A real-time source that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_progress_is_a_bar_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a tty a rich bar shows messages, notes, calls and the ETA, and is removed at the end."""
    err = _Terminal()
    code = run_import(
        [str(TWO_DAYS)],
        database=tmp_path / "v.db",
        environ={},
        stderr=err,
        ticker=_Ticker(1.0),
    )
    assert code == 0
    text = err.getvalue()
    assert "23/23 messages" in text
    assert "notes" in text and "calls" in text and "ETA" in text
    assert "imported 1 file" in capsys.readouterr().out


def test_progress_off_a_terminal_is_a_line_every_few_seconds(tmp_path: Path) -> None:
    """Without a tty one line is logged each time LOG_EVERY_S of real time has passed."""
    err = io.StringIO()
    code = run_import(
        [str(TWO_DAYS)],
        database=tmp_path / "v.db",
        environ={},
        stderr=err,
        ticker=_Ticker(LOG_EVERY_S / 2),
    )
    assert code == 0
    lines = err.getvalue().splitlines()
    assert lines and all(line.startswith("vivy import: ") for line in lines)
    assert "replaying: 1/23 messages" in lines[0]  # the second record, 5 s after the start
    assert "calls" in lines[0] and "ETA" not in lines[0]  # too little done to extrapolate
    assert any("ETA" in line for line in lines[1:])


def test_progress_off_a_terminal_waits_for_the_interval(tmp_path: Path) -> None:
    """An import shorter than LOG_EVERY_S of real time logs nothing but its report."""
    err = io.StringIO()
    run_import(
        [str(TWO_DAYS)],
        database=tmp_path / "v.db",
        environ={},
        stderr=err,
        ticker=_Ticker(0.0),
    )
    assert err.getvalue() == ""


def test_eta_extrapolates_the_model_calls_left() -> None:
    """Half the messages in with 10 calls done and 10 more queued: 1/4 of the work is done."""
    ticker = _Ticker(0.0)
    eta = Eta(ticker)
    ticker.now = 30.0
    p = ImportProgress("replaying", 50, 100, 50, 0, 3, calls=10, in_flight=4, queued=4)
    # ahead = 4 in flight + 4 * 1.5 queued = 10; 50 messages more at (10 + 10) / 50 each = 20
    assert eta.fraction(p) == 10 / 40
    assert eta.seconds_left(p) == 30.0 * 3
    assert eta.fraction(replace(p, phase="done")) == 1.0
    assert eta.seconds_left(replace(p, calls=0)) is None
    assert eta.seconds_left(replace(p, phase="done")) is None  # nothing left to estimate
    early = replace(p, seen=2, calls=1, in_flight=4, queued=0)  # 1 of 5 + 98 * 2.5 calls
    assert eta.fraction(early) < ETA_AFTER and eta.seconds_left(early) is None


def test_progress_line_names_every_count() -> None:
    """The log line carries messages, stored, duplicates, notes, calls, in flight and ETA."""
    p = ImportProgress("finishing", 23, 23, 22, 1, 5, calls=12, in_flight=2, queued=0)
    assert describe(p, 75.0) == (
        "finishing: 23/23 messages, 22 stored, 1 already imported, 5 notes, 12 calls "
        "(2 in flight), ETA 1m15s"
    )
    assert describe(p, None) == (
        "finishing: 23/23 messages, 22 stored, 1 already imported, 5 notes, 12 calls (2 in flight)"
    )


def test_warnings_are_counted_and_summarised_in_one_line() -> None:
    """Warnings logged during an import are counted by message instead of printed, and the
    logging configuration is restored afterwards."""
    counts: Counter[str] = Counter()
    before = structlog.get_config()
    with summarised_warnings(counts):
        log = structlog.get_logger("test")
        for _ in range(3):
            log.warning("note call failed; will retry", buffer_id=1)
        log.error("profile update failed")
        log.info("note written")
    assert counts == Counter({"note call failed; will retry": 3, "profile update failed": 1})
    assert structlog.get_config() == before
    assert summary(counts) == (
        "4 warnings during the import (3 × note call failed; will retry; 1 × profile update "
        "failed); set VIVY_LOG_LEVEL=warning to see each one"
    )


def test_ctrl_c_says_what_was_kept_and_how_to_continue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the replay ends with one line naming what was stored and that the same
    command continues; the interrupt still ends the command (exit 130 at the CLI)."""

    def interrupted(*_: object, progress: Any, **__: object) -> None:
        progress(ImportProgress("replaying", 10, 23, 9, 1, 2, calls=3, in_flight=0, queued=1))
        raise KeyboardInterrupt

    monkeypatch.setattr(importer_command, "import_exports", interrupted)
    err = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        run_import([str(TWO_DAYS)], database=tmp_path / "v.db", environ={}, stderr=err)
    assert err.getvalue().splitlines()[-1] == (
        "vivy import: interrupted; 9 messages stored and 2 notes written are kept: run the "
        "same command again to continue where it stopped"
    )


@pytest.mark.parametrize(
    ("days", "shown"),
    [
        ((date(2026, 4, 6), date(2026, 4, 7)), "2026-04-06, 2026-04-07"),
        (
            tuple(date(2024, 1, 1) + timedelta(days=n) for n in range(400)),
            "2024-01-01 to 2025-02-03 (400 days)",
        ),
        (
            tuple(date(2024, 1, 1) + timedelta(days=2 * n) for n in range(300)),
            "300 days from 2024-01-01 to 2025-08-21",
        ),
    ],
)
def test_the_report_names_many_days_in_one_short_line(days: tuple[date, ...], shown: str) -> None:
    """A long history's nightly days (and failed days) are summed up as ranges or a count,
    not listed one by one on one line."""
    report = ImportReport(1, 10, 10, 0, 0, {}, {}, 1, 0, 0, days, failed_days=days)
    lines = format_report(report, "vivy.db").splitlines()
    assert f"  nightly job: {shown}" in lines
    assert f"  failed:      {shown}" in lines
    assert max(len(line) for line in lines) <= 100


def test_an_allow_list_that_excludes_every_guild_is_said(tmp_path: Path) -> None:
    """VIVY_ALLOWED_GUILDS without the export's guild: one line says nothing was remembered."""
    err = io.StringIO()
    code = run_import(
        [str(TWO_DAYS)],
        database=tmp_path / "v.db",
        environ={"VIVY_ALLOWED_GUILDS": "1"},
        stderr=err,
        ticker=_Ticker(0.0),
    )
    assert code == 0
    assert err.getvalue() == (
        "vivy import: VIVY_ALLOWED_GUILDS excludes every guild of these exports, so nothing "
        "was remembered; add their guild ids to it, or unset it\n"
    )
