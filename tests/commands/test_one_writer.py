"""One writing process per SQLite file: a second writer is refused in one line naming the
process that holds the database; the read-only commands still read."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands.test_migrate import _v1_database
from tests.importer import GUILD, TWO_DAYS
from vivy.cli import EXIT_RUNTIME

from . import run_cli

#: A process that opens the database as a writer (as ``vivy run`` does) and holds it until
#: its stdin closes.
HOLDER = (
    "import sys\n"
    "from vivy.storage.sqlite.db import Database\n"
    "db = Database.open(sys.argv[1], inline=True)\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
    "db.close()\n"
)


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A SQLite database after an import of the two-day export."""
    database = tmp_path / "vivy.db"
    result = run_cli(capsys, "import", str(TWO_DAYS), "--db", str(database))
    assert result.code == 0, result.err
    return database


@pytest.fixture
def holder(imported: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process writing ``imported``, until the test ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(imported)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        yield process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


@pytest.mark.parametrize(
    "argv",
    [
        ("import", str(TWO_DAYS)),
        ("job", "run", "--date", "2026-04-06"),
        ("reembed",),
        ("migrate-v1", "--guild", str(GUILD), "--from", "V1"),
    ],
    ids=["import", "job run", "reembed", "migrate-v1"],
)
def test_a_second_writer_is_refused_naming_the_holder(
    imported: Path,
    holder: subprocess.Popen[str],
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    tmp_path: Path,
) -> None:
    """While another process writes the file, each writing command exits 1 with one line
    naming that process's pid, and changes nothing."""
    v1 = tmp_path / "v1.db"
    _v1_database(v1)
    before = imported.read_bytes()
    argv = tuple(str(v1) if word == "V1" else word for word in argv)
    result = run_cli(capsys, *argv, "--db", str(imported))
    assert result.code == EXIT_RUNTIME, result.err
    assert result.err.startswith(f"vivy {argv[0]}"), result.err
    held = f"the database {imported} is in use by another process (pid {holder.pid}:"
    assert held in result.err, result.err
    assert len(result.err.splitlines()) == 1
    assert imported.read_bytes() == before


def test_a_copy_into_a_file_another_process_writes_is_refused(
    imported: Path, holder: subprocess.Popen[str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``vivy db copy`` does not write a target another process writes."""
    source = tmp_path / "other.db"
    assert run_cli(capsys, "import", str(TWO_DAYS), "--db", str(source)).code == 0
    result = run_cli(capsys, "db", "copy", str(source), str(imported), "--replace")
    assert result.code == EXIT_RUNTIME
    assert f"is in use by another process (pid {holder.pid}:" in result.err


def test_readers_still_read_and_the_lock_goes_with_the_writer(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The read-only commands read while a writer holds the file; once it has gone, the next
    writer runs."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(imported)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    assert process.stdout.readline() == "ready\n"
    for argv in (("guilds",), ("notes", "--guild", str(GUILD)), ("db", "check")):
        result = run_cli(capsys, *argv, "--db", str(imported))
        assert result.code == 0, (argv, result.err)
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    result = run_cli(capsys, "import", str(TWO_DAYS), "--db", str(imported))
    assert result.code == 0, result.err
