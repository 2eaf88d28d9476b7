"""Every mistake an operator can make, through the real ``vivy`` entry point.

Each case runs ``vivy.cli.main`` in-process, with the case's environment and working
directory, at the command's default log level; the cases whose behaviour depends on a
process of their own (a read-only database, which needs root's file powers dropped) and a
few others, so that exit codes and stderr are seen from a real interpreter too, run
``python -m tests.hashed_vivy`` in a subprocess. Each must end with a non-zero exit code, one
line on stderr, no traceback, the variable or file at fault named, and the database file
byte for byte as it was. The table of docs/errors.md lists every case (checked below).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.bot import payloads
from tests.importer import BEN, GUILD, THREAD_LATER, TWO_DAYS, import_files
from vivy.cli import EXIT_BROKEN_PIPE, EXIT_RUNTIME, EXIT_USAGE
from vivy.storage.postgres import connect

from . import command_environment, drop_file_override, run_cli

ROOT = Path(__file__).resolve().parents[2]

#: A well-formed bot token (its first part is the user id 1000000000000000001).
TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAwMQ.fake.token"

#: ``vivy`` in a child process, embedding with the hashing double as the tests do in-process
#: (the imported database's vectors are the double's).
VIVY = [sys.executable, "-m", "tests.hashed_vivy"]


@dataclass(frozen=True)
class Case:
    """One operator mistake: what they ran, and what the answer must name.

    ``argv`` and ``env`` values may hold ``{db}`` (a fresh copy of an imported database),
    ``{tmp}`` (the case's own directory), ``{port}`` (a port another socket holds) and
    ``{closed}`` (a loopback port nobody listens on), ``{discord}`` (a fake Discord REST
    API that knows the bot). ``failure`` is the case's row in the table of docs/errors.md.
    ``own_process``: run in a subprocess rather than in-process (always with ``read_only``).
    """

    failure: str
    argv: tuple[str, ...]
    names: str
    code: int
    env: Mapping[str, str] = field(default_factory=dict)
    read_only: bool = False
    absent: str = ""
    own_process: bool = False


IMPORT = ("import", str(THREAD_LATER), "--db", "{db}")

CASES = (
    Case(
        "`VIVY_BUFFER_CAP=inf`",
        IMPORT,
        "VIVY_BUFFER_CAP",
        EXIT_USAGE,
        {"VIVY_BUFFER_CAP": "inf"},
        own_process=True,
    ),
    Case(
        "`VIVY_BUFFER_CAP=2.7`", IMPORT, "VIVY_BUFFER_CAP", EXIT_USAGE, {"VIVY_BUFFER_CAP": "2.7"}
    ),
    Case(
        "`VIVY_BUFFER_CAP` below `VIVY_MIN_NOTE_MESSAGES`",
        IMPORT,
        "VIVY_MIN_NOTE_MESSAGES",
        EXIT_USAGE,
        {"VIVY_BUFFER_CAP": "3", "VIVY_MIN_NOTE_MESSAGES": "5"},
    ),
    Case(
        "`VIVY_METRICS_PORT=nan`",
        IMPORT,
        "VIVY_METRICS_PORT",
        EXIT_USAGE,
        {"VIVY_METRICS_PORT": "nan"},
    ),
    Case(
        "`VIVY_METRICS_PORT=70000`",
        IMPORT,
        "VIVY_METRICS_PORT",
        EXIT_USAGE,
        {"VIVY_METRICS_PORT": "70000"},
    ),
    Case(
        "`VIVY_INACTIVITY_MIN_MINUTES=nan`",
        IMPORT,
        "VIVY_INACTIVITY_MIN_MINUTES",
        EXIT_USAGE,
        {"VIVY_INACTIVITY_MIN_MINUTES": "nan"},
    ),
    Case(
        "`VIVY_INACTIVITY_MAX_MINUTES` below the minimum",
        IMPORT,
        "VIVY_INACTIVITY_MAX_MINUTES",
        EXIT_USAGE,
        {"VIVY_INACTIVITY_MAX_MINUTES": "10"},
    ),
    Case(
        "`VIVY_MAX_BUFFER_MINUTES=0`",
        IMPORT,
        "VIVY_MAX_BUFFER_MINUTES",
        EXIT_USAGE,
        {"VIVY_MAX_BUFFER_MINUTES": "0"},
    ),
    Case(
        "`VIVY_TIMEZONE=Mars/Olympus`",
        IMPORT,
        "VIVY_TIMEZONE",
        EXIT_USAGE,
        {"VIVY_TIMEZONE": "Mars/Olympus"},
    ),
    Case(
        "`vivy run --shard-ids 0-3 --shard-count 16`",
        ("run", "--shard-ids", "0-3", "--shard-count", "16"),
        "runs 4 of 16 shards",
        EXIT_USAGE,
    ),
    Case(
        "`vivy db backup` of a PostgreSQL `VIVY_DB` without `pg_dump`",
        ("db", "backup", "{tmp}/backup.dump"),
        "pg_dump is not installed here",
        EXIT_USAGE,
        {"VIVY_DB": "postgresql://vivy:secret@db.example/vivy", "PATH": "{tmp}"},
        absent="secret",
    ),
    Case(
        "`VIVY_SHARD_IDS=7` with `VIVY_SHARD_COUNT=4`",
        ("run",),
        "shard 7 is not among 4",
        EXIT_USAGE,
        {"VIVY_SHARD_IDS": "7", "VIVY_SHARD_COUNT": "4"},
    ),
    Case(
        "`VIVY_MEMORY_CAPTURE=maybe`",
        IMPORT,
        "VIVY_MEMORY_CAPTURE",
        EXIT_USAGE,
        {"VIVY_MEMORY_CAPTURE": "maybe"},
    ),
    Case(
        "`VIVY_ALLOWED_GUILDS=main`",
        IMPORT,
        "VIVY_ALLOWED_GUILDS",
        EXIT_USAGE,
        {"VIVY_ALLOWED_GUILDS": "main"},
    ),
    Case("`VIVY_LOG_LEVEL=loud`", IMPORT, "VIVY_LOG_LEVEL", EXIT_USAGE, {"VIVY_LOG_LEVEL": "loud"}),
    Case(
        "`VIVY_METRICS_HOST=0.0.0.0` without a token",
        ("run",),
        "VIVY_API_TOKEN",
        EXIT_USAGE,
        {"VIVY_METRICS_HOST": "0.0.0.0", "DISCORD_TOKEN": TOKEN, "VIVY_DB": "{db}"},
    ),
    Case(
        "`vivy run` without `DISCORD_TOKEN`",
        ("run",),
        "DISCORD_TOKEN",
        EXIT_USAGE,
        own_process=True,
    ),
    Case(
        "`VIVY_DISCORD_REST_URL='not a url'`",
        ("run",),
        "VIVY_DISCORD_REST_URL",
        EXIT_USAGE,
        {"DISCORD_TOKEN": TOKEN, "VIVY_DB": "{db}", "VIVY_DISCORD_REST_URL": "not a url"},
    ),
    Case(
        "`vivy run` with a malformed `DISCORD_TOKEN`",
        ("run",),
        "DISCORD_TOKEN",
        EXIT_USAGE,
        {"DISCORD_TOKEN": "not a token", "VIVY_DB": "{db}"},
    ),
    Case(
        "`vivy run` while `VIVY_METRICS_PORT` is in use",
        ("run",),
        "VIVY_METRICS_PORT",
        EXIT_USAGE,
        {"DISCORD_TOKEN": TOKEN, "VIVY_DB": "{db}", "VIVY_METRICS_PORT": "{port}"},
    ),
    Case(
        "`vivy run` while Discord is unreachable",
        ("run",),
        "Discord",
        EXIT_USAGE,
        {
            "DISCORD_TOKEN": TOKEN,
            "VIVY_DB": "{db}",
            "VIVY_METRICS_PORT": "{free}",
            "VIVY_DISCORD_REST_URL": "http://127.0.0.1:{closed}/api/v10",
        },
    ),
    Case(
        "`vivy run` on a read-only database",
        ("run",),
        "{db}",
        EXIT_RUNTIME,
        {
            "DISCORD_TOKEN": TOKEN,
            "VIVY_DB": "{db}",
            "VIVY_METRICS_PORT": "{free}",
            "VIVY_DISCORD_REST_URL": "{discord}",
            # The bot started before its first write failed: its log lines aside.
            "VIVY_LOG_LEVEL": "error",
        },
        read_only=True,
    ),
    Case(
        "`vivy job run` on a read-only database",
        ("job", "run", "--db", "{db}"),
        "{db}",
        EXIT_RUNTIME,
        read_only=True,
    ),
    Case(
        "`vivy import` into a read-only database",
        IMPORT,
        "{db}",
        EXIT_RUNTIME,
        read_only=True,
    ),
    Case(
        "`vivy reembed --force` on a read-only database",
        ("reembed", "--force", "--db", "{db}"),
        "{db}",
        EXIT_RUNTIME,
        read_only=True,
    ),
    Case(
        "`VIVY_DB` naming a PostgreSQL server that never answers",
        ("db", "check"),
        "127.0.0.1:{port}",
        EXIT_RUNTIME,
        {"VIVY_DB": "postgresql://vivy@127.0.0.1:{port}/vivy", "VIVY_DB_TIMEOUT_SECONDS": "2"},
    ),
    Case(
        "`vivy import` into a PostgreSQL server that never answers",
        IMPORT[:-2],
        "127.0.0.1:{port}",
        EXIT_RUNTIME,
        {"VIVY_DB": "postgresql://vivy@127.0.0.1:{port}/vivy", "VIVY_DB_TIMEOUT_SECONDS": "2"},
    ),
    Case(
        "`vivy db backup` into a missing directory",
        ("db", "backup", "{tmp}/nowhere/copy.db", "--db", "{db}"),
        "nowhere",
        EXIT_RUNTIME,
    ),
    Case(
        "`vivy job run` on a database file that does not exist",
        ("job", "run", "--db", "{tmp}/missing.db"),
        "missing.db",
        EXIT_RUNTIME,
        absent="{tmp}/missing.db",
    ),
    Case(
        "`vivy job run --date` on a day that has not ended",
        ("job", "run", "--db", "{db}", "--date", "2999-01-01"),
        "2999-01-01",
        EXIT_USAGE,
    ),
    Case(
        "`vivy job run --date` before Discord existed",
        ("job", "run", "--db", "{db}", "--date", "0001-01-01"),
        "0001-01-01",
        EXIT_USAGE,
        own_process=True,
    ),
    Case(
        "`vivy search` with a blank query",
        ("search", "--db", "{db}", "--guild", "1", " "),
        "query",
        EXIT_USAGE,
    ),
    Case(
        "`vivy job run --date` that is not a date",
        ("job", "run", "--db", "{db}", "--date", "06/04"),
        "06/04",
        EXIT_USAGE,
    ),
    Case(
        "`vivy snapshot --out` naming a file",
        ("snapshot", "--db", "{db}", "--out", "{tmp}/empty.json"),
        "empty.json",
        EXIT_USAGE,
    ),
    Case(
        "`vivy snapshot --out` where no folder can be made",
        ("snapshot", "--db", "{db}", "--out", "{tmp}/empty.json/snapshots"),
        "empty.json/snapshots",
        EXIT_RUNTIME,
    ),
    Case(
        "`vivy profile` on a database file that does not exist",
        ("profile", "--db", "{tmp}/missing.db", "--guild", "1", "2"),
        "missing.db",
        EXIT_RUNTIME,
        absent="{tmp}/missing.db",
    ),
    Case(
        "`vivy import` of a file that is not an export",
        ("import", "{tmp}/empty.json", "--db", "{db}"),
        "empty.json",
        EXIT_RUNTIME,
    ),
    Case(
        "`vivy eval --eval-set` on a missing file",
        ("eval", "--eval-set", "{tmp}/missing.json"),
        "missing.json",
        EXIT_USAGE,
    ),
    Case(
        "`vivy eval --eval-set` on `{}`",
        ("eval", "--eval-set", "{tmp}/empty.json"),
        "empty.json",
        EXIT_USAGE,
    ),
    Case(
        "`vivy bench retrieval --db-dir` on a missing directory",
        ("bench", "retrieval", "--db-dir", "{tmp}/nowhere"),
        "nowhere",
        EXIT_USAGE,
    ),
)


@dataclass(frozen=True)
class Outcome:
    """What one case's process did, and the database's hash before and after."""

    code: int
    stderr: str
    before: str
    after: str
    values: Mapping[str, str]


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Me(BaseHTTPRequestHandler):
    """Discord's ``GET /users/@me`` for the bot of :data:`TOKEN`; 404 for anything else."""

    def do_GET(self) -> None:
        """Answer the current-user route."""
        if self.path.endswith("/users/@me"):
            own = {**payloads.user(1000000000000000001, "vivy", bot=True), "mfa_enabled": False}
            body = json.dumps({**own, "flags": 0, "verified": True}).encode()
            self.send_response(200)
        else:
            body = b'{"message": "404: Not Found", "code": 0}'
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the two-day fixture export, nightly jobs included."""
    db = tmp_path_factory.mktemp("imported") / "vivy.db"
    import_files(db, TWO_DAYS)
    return db


@pytest.fixture(scope="module")
def shared_places() -> Iterator[dict[str, str]]:
    """The ports and the fake Discord every case may name: ``{port}`` (held, never
    answering), ``{closed}`` (nobody listens) and ``{discord}``."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    discord = ThreadingHTTPServer(("127.0.0.1", 0), _Me)
    threading.Thread(target=discord.serve_forever, daemon=True).start()
    try:
        yield {
            "port": str(holder.getsockname()[1]),
            "closed": str(_free_port()),
            "discord": f"http://127.0.0.1:{discord.server_address[1]}/api/v10",
        }
    finally:
        holder.close()
        discord.shutdown()


def _in_process(
    argv: list[str],
    env: Mapping[str, str],
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[int, str]:
    """``vivy ARGV`` run by ``vivy.cli.main`` in ``tmp`` with :func:`command_environment`'s
    environment plus ``env``; its exit code and stderr."""
    for key in set(os.environ) - set(command_environment({})):
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp)
    # The entry point sets the process's PostgreSQL time-out from VIVY_DB_TIMEOUT_SECONDS.
    monkeypatch.setattr(connect, "_timeout_s", connect.timeout())
    result = run_cli(capsys, *argv)
    return result.code, result.err


def _own_process(argv: list[str], env: Mapping[str, str], tmp: Path, read_only: bool) -> Any:
    """``vivy ARGV`` run in a child process in ``tmp`` (root's file powers dropped for a
    read-only database)."""
    return subprocess.run(
        [*VIVY, *argv],
        cwd=tmp,
        env=command_environment({"PYTHONPATH": str(ROOT), **env}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=drop_file_override if read_only else None,
    )


@pytest.fixture
def outcome(
    request: pytest.FixtureRequest,
    imported: Path,
    shared_places: Mapping[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Outcome:
    """The test's case run once, on a fresh copy of the imported database."""
    case: Case = request.node.callspec.params["case"]
    db = tmp_path / "vivy.db"
    shutil.copyfile(imported, db)
    (tmp_path / "empty.json").write_text("{}")
    values = {**shared_places, "db": str(db), "tmp": str(tmp_path), "free": str(_free_port())}
    fill: Callable[[str], str] = lambda text: text.format(**values)  # noqa: E731
    argv = [fill(word) for word in case.argv]
    env = {key: fill(value) for key, value in case.env.items()}
    if case.read_only:
        db.chmod(0o444)
    before = _hash(db)
    if case.own_process or case.read_only:
        done = _own_process(argv, env, tmp_path, case.read_only)
        code, stderr = done.returncode, done.stderr
    else:
        code, stderr = _in_process(argv, env, tmp_path, capsys, monkeypatch)
    return Outcome(code, stderr, before, _hash(db), values)


@pytest.mark.parametrize("case", CASES, ids=[c.failure for c in CASES])
def test_every_mistake_gets_one_clear_line(case: Case, outcome: Outcome) -> None:
    """At each command's default log level: non-zero exit, one stderr line in Vivy's own words
    (no log line, no traceback, no "unexpected" error), the culprit named, the database
    unchanged."""
    lines = outcome.stderr.splitlines()
    assert outcome.code == case.code, outcome.stderr
    assert len(lines) == 1, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert "unexpected" not in outcome.stderr  # Vivy's own words, not a defect's report
    assert case.names.format(**outcome.values) in outcome.stderr
    assert outcome.after == outcome.before
    if case.absent:
        assert not Path(case.absent.format(**outcome.values)).exists()


def test_the_docs_list_every_case() -> None:
    """The table of docs/errors.md has a row for each case, with its code."""
    section = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    rows = {
        row.split(" | ")[0].strip("| "): row
        for row in section.splitlines()
        if row.startswith("| `")
    }
    for case in CASES:
        assert case.failure in rows, case.failure
        row = rows[case.failure]
        assert row.rstrip(" |").endswith(str(case.code)), row
        if "{" not in case.names:  # the variable or file the answer names is in the row too
            assert case.names in row.split(" | ")[1], row


@pytest.mark.parametrize(
    "argv",
    [
        ("notes", "--guild", str(GUILD)),
        ("notes", "--guild", str(GUILD), "--limit", "1"),
        ("profile", "--guild", str(GUILD), str(BEN)),
    ],
)
def test_a_closed_stdout_ends_quietly(imported: Path, argv: tuple[str, ...]) -> None:
    """``vivy notes ... | head`` whose reader is gone exits 141 without a word on stderr,
    whether the output fills the pipe or waits in the buffer until the end."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*VIVY, *argv, "--db", str(imported)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=command_environment({"PYTHONPATH": str(ROOT)}),
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == EXIT_BROKEN_PIPE
    assert done.stderr == ""


def test_the_debug_log_has_the_traceback(tmp_path: Path) -> None:
    """With ``VIVY_LOG_LEVEL=debug`` the failure's traceback is in the log, above the line."""
    done = subprocess.run(
        [*VIVY, "eval", "--eval-set", str(tmp_path / "missing.json")],
        env=command_environment({"PYTHONPATH": str(ROOT), "VIVY_LOG_LEVEL": "debug"}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_USAGE
    assert "FileNotFoundError" in done.stderr
    assert re.search(r"vivy eval: --eval-set .*missing\.json", done.stderr.splitlines()[-1])
