"""The read-only commands read a database on read-only media (a folder and file this user
cannot write, as on a mounted snapshot or a CD), without creating or changing a byte."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hashing import sentence_model
from tests.importer import BEN, GUILD, TWO_DAYS, import_files

from . import command_environment, drop_file_override


@pytest.fixture(scope="module")
def read_only_media(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An imported database alone in a folder, the file and the folder read-only."""
    built = tmp_path_factory.mktemp("built") / "vivy.db"
    with sentence_model():  # the CLI is configured with the local model
        import_files(built, TWO_DAYS)
    folder = tmp_path_factory.mktemp("media")
    shutil.copyfile(built, folder / "vivy.db")
    (folder / "vivy.db").chmod(0o444)
    folder.chmod(0o555)
    try:
        yield folder / "vivy.db"
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize(
    "argv",
    [
        ("search", "--guild", str(GUILD), "movie night"),
        ("profile", "--guild", str(GUILD), str(BEN)),
        ("notes", "--guild", str(GUILD)),
        ("db", "check"),
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_a_read_only_command_reads_read_only_media(
    read_only_media: Path, argv: tuple[str, ...]
) -> None:
    """The command answers as on any database, and the folder holds the file alone, as it
    was (no journal, WAL or shared-memory file could be made there)."""
    before = hashlib.sha256(read_only_media.read_bytes()).hexdigest()
    done = subprocess.run(
        [sys.executable, "-m", "vivy.cli", *argv, "--db", str(read_only_media)],
        env=command_environment({}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=drop_file_override,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert os.listdir(read_only_media.parent) == ["vivy.db"]
    assert hashlib.sha256(read_only_media.read_bytes()).hexdigest() == before
