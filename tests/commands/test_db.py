"""``vivy db check`` and ``vivy db backup``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlean

from tests.hashing import sentence_model
from tests.importer import TWO_DAYS, import_files, snapshot
from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, LOCAL_EMBEDDING_MODEL
from vivy.storage.sqlite.checks import check_integrity, open_readonly
from vivy.storage.sqlite.schema import SCHEMA_VERSION

from . import run_cli


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the two-day fixture imported (shared; copy it before changing it)."""
    db = tmp_path_factory.mktemp("db") / "v.db"
    with sentence_model():  # the CLI is configured with the local model
        import_files(db, TWO_DAYS)
    return db


@pytest.fixture
def copy(imported: Path, tmp_path: Path) -> Path:
    """A private copy of the imported database."""
    target = tmp_path / "v.db"
    shutil.copy(imported, target)
    return target


def _raw(path: Path, *statements: str) -> None:
    """Run statements on a plain connection without foreign-key enforcement."""
    conn = sqlean.connect(str(path), isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def test_check_passes_on_a_healthy_database(
    imported: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh import passes every check: exit 0 and one line per check."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_GEMINI_TOKEN", raising=False)
    r = run_cli(capsys, "db", "check", "--db", str(imported))
    assert r.code == 0, r.out
    assert r.out.splitlines() == [
        "integrity_check: ok",
        "foreign_key_check: ok",
        f"schema version: {SCHEMA_VERSION} (this Vivy supports {SCHEMA_VERSION}) ok",
        f"embedding model: {LOCAL_EMBEDDING_MODEL} ({LOCAL_EMBEDDING_DIMENSION} dimensions);"
        " 6 vectors for 6 notes",
        "evidence: ok",
        f"{imported}: ok",
    ]


def test_check_reports_evidence_of_another_guild(
    copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An evidence window filed under a guild its note does not belong to fails the check."""
    _raw(copy, "UPDATE evidence_windows SET guild_id = 999 WHERE id = 1")
    r = run_cli(capsys, "db", "check", "--db", str(copy))
    assert r.code == 1
    assert "evidence: 1 misplaced rows" in r.out
    assert "problem: evidence: evidence window 1 is filed under guild 999" in r.out


def test_check_reports_a_foreign_key_violation(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A participant row of a deleted note fails the check with exit 1."""
    _raw(
        copy, "INSERT INTO note_participants (note_id, user_id, display_name) VALUES (999, 1, 'x')"
    )
    r = run_cli(capsys, "db", "check", "--db", str(copy))
    assert r.code == 1
    assert "foreign_key_check: 1 violations" in r.out
    assert "problem: foreign key: note_participants row" in r.out


def test_check_reports_vectors_that_do_not_match_the_notes(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recorded dimension that differs from vec_notes, or a note without vector, fails."""
    _raw(copy, "UPDATE meta SET value = '128' WHERE key = 'embedding_dimension'")
    conn = sqlean.connect(str(copy), isolation_level=None)
    conn.execute(
        "INSERT INTO interaction_notes (guild_id, channel_id, note_type, title, summary,"
        " note_date, quality, created_at) VALUES (1, 1, 'conversation', 't', 's',"
        " '2026-04-06', 'offline', 0)"
    )
    conn.close()
    r = run_cli(capsys, "db", "check", "--db", str(copy))
    assert r.code == 1
    assert (
        f"problem: vec_notes holds {LOCAL_EMBEDDING_DIMENSION}-dimensional vectors"
        " but meta records 128" in r.out
    )
    assert "problem: 7 notes but 6 note vectors" in r.out


def test_check_reports_a_newer_schema(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A schema version this Vivy does not know is a problem."""
    _raw(copy, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    r = run_cli(capsys, "db", "check", "--db", str(copy))
    assert r.code == 1
    assert (
        f"schema version: {SCHEMA_VERSION + 1} (this Vivy supports {SCHEMA_VERSION}) MISMATCH"
        in r.out
    )


def test_check_warns_when_the_configured_model_differs(
    imported: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a Gemini key set, the offline vectors draw a warning naming `vivy reembed`."""
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    r = run_cli(capsys, "db", "check", "--db", str(imported))
    assert r.code == 0
    assert "warning: the configured embedding model is gemini-embedding-001" in r.out
    assert "`vivy reembed`" in r.out


@pytest.mark.parametrize("argv", [["db", "check"], ["db", "backup", "out.db"]])
def test_missing_database_is_an_error(
    tmp_path: Path,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Checking or backing up a file that does not exist fails and creates nothing."""
    monkeypatch.chdir(tmp_path)
    r = run_cli(capsys, *argv, "--db", "missing.db")
    assert r.code == 1
    assert r.err.strip() == f"vivy db {argv[1]}: no such database file: missing.db"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_check_of_a_file_that_is_not_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Garbage is reported as unreadable, with exit 1."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    r = run_cli(capsys, "db", "check", "--db", str(junk))
    assert r.code == 1
    assert r.err.startswith(f"vivy db check: cannot open database {junk}: file is not a database")


def test_db_without_action_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`vivy db` alone exits 2."""
    assert run_cli(capsys, "db").code == 2


def test_backup_writes_a_checked_copy(
    imported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The backup has the same rows, opens with sqlite-vec and passes integrity_check."""
    target = tmp_path / "backup.db"
    r = run_cli(capsys, "db", "backup", str(target), "--db", str(imported))
    assert r.code == 0, r.err
    assert r.out.startswith(f"backed up {imported} to {target} (")
    assert r.out.rstrip().endswith("integrity_check: ok")
    assert snapshot(target) == snapshot(imported)
    conn = open_readonly(target)
    try:
        assert check_integrity(conn) == []
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT COUNT(*) FROM vec_notes").fetchone()[0] == 6
    finally:
        conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.db"]


def test_backup_refuses_to_overwrite_without_force(
    imported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An existing target is kept (exit 1) unless --force replaces it."""
    target = tmp_path / "backup.db"
    target.write_text("precious")
    r = run_cli(capsys, "db", "backup", str(target), "--db", str(imported))
    assert r.code == 1
    assert r.err.strip() == f"vivy db backup: {target} already exists; pass --force to replace it"
    assert target.read_text() == "precious"
    forced = run_cli(capsys, "db", "backup", str(target), "--force", "--db", str(imported))
    assert forced.code == 0
    assert snapshot(target) == snapshot(imported)


def test_backup_into_a_missing_directory_fails(
    imported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A target in a directory that does not exist is refused before copying."""
    target = tmp_path / "nope" / "b.db"
    r = run_cli(capsys, "db", "backup", str(target), "--db", str(imported))
    assert r.code == 1
    assert "no such directory" in r.err
