"""Small things a new operator meets in the first week: plain choices, a port in use that
leaves no file, a malformed metrics host named as such, and the demo's word on ``--linger``."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.importer import GUILD, TWO_DAYS
from vivy.config import Settings
from vivy.errors import ConfigError

from . import run_cli


def test_note_type_choices_are_the_plain_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong ``--type`` lists ``conversation`` and ``topic_cluster`` as typed; a right one
    filters."""
    wrong = run_cli(capsys, "notes", "--guild", "1", "--type", "cluster")
    assert wrong.code == 2
    assert "(choose from 'conversation', 'topic_cluster')" in wrong.err
    assert "NoteType" not in wrong.err
    db = tmp_path / "v.db"
    assert run_cli(capsys, "import", "--db", str(db), str(TWO_DAYS)).code == 0
    clusters = run_cli(
        capsys, "notes", "--db", str(db), "--guild", str(GUILD), "--type", "topic_cluster"
    )
    assert clusters.code == 0
    assert "topic cluster" in clusters.out


@pytest.mark.parametrize("host", ["not a host", "exa mple.com", "-.."])
def test_a_malformed_metrics_host_is_called_malformed(host: str) -> None:
    """Not "not a loopback address", which would send the operator after a token."""
    with pytest.raises(ConfigError, match="is not a host name or an IP address"):
        Settings.from_env({"VIVY_METRICS_HOST": host})


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "vivy.example.org"])
def test_a_host_name_or_address_is_accepted(host: str) -> None:
    """Names and addresses pass (a non-loopback one still needs a token)."""
    settings = Settings.from_env({"VIVY_METRICS_HOST": host, "VIVY_API_TOKEN": "t" * 24})
    assert settings.metrics_host == host


def test_the_demo_with_its_port_in_use_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The port is bound before the database is created, so the refusal writes nothing."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        monkeypatch.setenv("VIVY_METRICS_PORT", str(holder.getsockname()[1]))
        result = run_cli(capsys, "demo", "--db", str(tmp_path / "dd.db"))
    assert result.code != 0
    assert len(result.err.splitlines()) == 1, result.err
    assert list(tmp_path.iterdir()) == []


def test_the_demo_says_how_to_keep_the_page_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--linger`` the demo ends by saying the page closes with it, and how not to."""
    result = run_cli(capsys, "demo", "--db", str(tmp_path / "dd.db"))
    assert result.code == 0
    assert (
        result.out.rstrip()
        .splitlines()[-1]
        .startswith("The memory page closes with the demo: run vivy demo --linger 600")
    )
