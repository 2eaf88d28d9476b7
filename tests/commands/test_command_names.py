"""``--db`` on every command that opens the database, and errors that name the subcommand."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from vivy.cli import EXIT_USAGE, build_parser
from vivy.commands import run

from . import run_cli


def test_run_takes_db_as_the_database_it_opens(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vivy run --db r.db`` runs the bot on r.db: the option stands for ``VIVY_DB``."""
    seen: list[Mapping[str, str]] = []

    def fake_run_bot(environ: Mapping[str, str], *, guild_ids: Sequence[int] = ()) -> int:
        seen.append(environ)
        return 0

    monkeypatch.setattr(run, "run_bot", fake_run_bot)
    monkeypatch.setenv("VIVY_DB", "elsewhere.db")
    assert run_cli(capsys, "run", "--db", "r.db", "--shard-count", "2").code == 0
    assert seen[0]["VIVY_DB"] == "r.db"
    assert seen[0]["VIVY_SHARD_COUNT"] == "2"
    assert run_cli(capsys, "run").code == 0
    assert seen[1]["VIVY_DB"] == "elsewhere.db"


#: Every product command that opens a database (``db copy`` names two, as arguments).
OPENING = (
    "demo", "run", "import", "profile", "notes", "guilds", "db check", "db backup",
    "migrate-v1", "reembed", "job run", "snapshot", "search", "ask", "export", "members",
)  # fmt: skip


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parsers of ``parser``'s subcommands, by name."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


@pytest.mark.parametrize("command", OPENING)
def test_every_command_that_opens_the_database_takes_db(command: str) -> None:
    """``--db`` is an option of each, so the README's promise holds."""
    leaf = build_parser()
    for word in command.split():
        leaf = _subcommands(leaf)[word]
    assert "--db" in {option for action in leaf._actions for option in action.option_strings}


@pytest.mark.parametrize(
    "argv, prefix",
    [
        (("run", "--bogus"), "vivy run: unrecognized arguments: --bogus"),
        (("db", "backup"), "vivy db backup: the following arguments are required: PATH"),
        (("db", "check", "extra"), "vivy db check: unrecognized arguments: extra"),
    ],
)
def test_a_usage_error_names_the_subcommand(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], prefix: str
) -> None:
    """The one line names the innermost command, whose ``--help`` explains it."""
    result = run_cli(capsys, *argv)
    assert result.code == EXIT_USAGE
    assert result.err.startswith(prefix), result.err
    assert len(result.err.splitlines()) == 1


def test_a_runtime_error_names_the_subcommand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failure while ``vivy db backup`` runs is reported as ``vivy db backup: ...``."""
    result = run_cli(capsys, "db", "backup", "--db", str(tmp_path / "missing.db"), "b.db")
    assert result.code == 1
    assert result.err.startswith("vivy db backup: no such database file")
