"""Direct-message and group-DM exports are refused in one line: Vivy remembers servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commands import run_cli
from tests.importer import TWO_DAYS


def _as_direct(tmp_path: Path, channel_type: str, guild_id: str) -> Path:
    """The two-day fixture's first channel, rewritten as DiscordChatExporter writes a DM."""
    export = json.loads(TWO_DAYS.read_text(encoding="utf-8"))[0]
    export["guild"] = {"id": guild_id, "name": "Direct Messages", "iconUrl": None}
    export["channel"] = {**export["channel"], "type": channel_type, "name": "Sam"}
    path = tmp_path / "dm.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "channel_type, guild_id",
    [("DirectTextChat", "0"), ("DirectGroupTextChat", "0"), ("GuildTextChat", "0")],
)
def test_a_direct_message_export_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], channel_type: str, guild_id: str
) -> None:
    """Exit 1, one line naming the file and saying why; no database is created."""
    dm = _as_direct(tmp_path, channel_type, guild_id)
    db = tmp_path / "v.db"
    result = run_cli(capsys, "import", "--db", str(db), str(TWO_DAYS), str(dm))
    assert result.code == 1
    assert result.err.strip() == (
        f"vivy import: {dm}: #Sam is a direct-message export; Vivy remembers servers: "
        "export a server's channels instead"
    )
    assert not db.exists()
