"""Filesystem mistakes of an operator (a folder this user cannot write or even enter, a
missing folder) through the real ``vivy`` entry point: one line naming the path, exit 1,
never "unexpected ... please report it"."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.importer import TWO_DAYS, import_files
from vivy.cli import EXIT_RUNTIME, error_line

from . import command_environment, drop_file_override


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the two-day fixture export."""
    db = tmp_path_factory.mktemp("imported") / "vivy.db"
    import_files(db, TWO_DAYS)
    return db


#: Each case: the command line (``{db}`` is a copy of the imported database) and the path
#: its one line must name. ``closed`` is a folder nobody may enter, ``ro`` one nobody may
#: write.
CASES = [
    (("db", "backup", "--db", "{db}", "closed/sub/b.db"), "closed/sub/b.db"),
    (("db", "backup", "--db", "{db}", "ro/b.db"), "ro/b.db"),
    (("snapshot", "--db", "{db}", "--out", "closed/sub"), "closed/sub"),
    (("snapshot", "--db", "{db}", "--out", "ro/snap"), "ro/snap"),
    (("db", "copy", "{db}", "closed/copy.db"), "closed/copy.db"),
    (("db", "copy", "{db}", "ro/copy.db"), "ro"),
    (("import", "--db", "nowhere/x.db", str(TWO_DAYS)), "no such folder: nowhere"),
    (("reembed", "--db", "closed/x.db"), "closed/x.db"),
]


@pytest.mark.parametrize("argv, names", CASES, ids=[" ".join(argv) for argv, _ in CASES])
def test_an_unusable_path_is_one_line_naming_it(
    imported: Path, tmp_path: Path, argv: tuple[str, ...], names: str
) -> None:
    """Exit 1 with one line that names the path, in Vivy's words, not a defect's report."""
    db = tmp_path / "vivy.db"
    shutil.copyfile(imported, db)
    (tmp_path / "closed" / "sub").mkdir(parents=True)
    (tmp_path / "ro").mkdir()
    (tmp_path / "closed").chmod(0o000)
    (tmp_path / "ro").chmod(0o555)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "vivy.cli", *(word.format(db=db) for word in argv)],
            cwd=tmp_path,
            env=command_environment({}),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            preexec_fn=drop_file_override,
        )
    finally:
        (tmp_path / "closed").chmod(0o755)
        (tmp_path / "ro").chmod(0o755)
    assert done.returncode == EXIT_RUNTIME, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "unexpected" not in done.stderr
    assert names in done.stderr
    assert list((tmp_path / "ro").iterdir()) == []


def test_an_operating_system_refusal_is_the_operators_mistake() -> None:
    """An OSError naming a path is reported by that path, not as a defect of Vivy's."""
    line = error_line("snapshot", PermissionError(13, "Permission denied", "out/x.md"))
    assert line.startswith("vivy snapshot: out/x.md: permission denied; ")
    assert "unexpected" not in line
    assert "unexpected OSError" in error_line("snapshot", OSError(28, "No space left on device"))
