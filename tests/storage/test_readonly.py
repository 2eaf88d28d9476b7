"""The operator commands' read-only view of a database, and the online backup."""

from __future__ import annotations

from pathlib import Path

import pytest

from vivy.errors import StorageError
from vivy.storage.sqlite.readonly import backup_database, open_sqlite_readonly
from vivy.storage.sqlite.stores import open_sqlite_store

pytestmark = pytest.mark.anyio

GUILD = 100
WALL0 = 1772409600.0


async def _fill(path: Path) -> None:
    """A database with two members of one guild, a stated fact and server lore."""
    store = open_sqlite_store(path, inline=True)
    try:
        await store.members.remember_fact(GUILD, 12, "Sam", "bio", "Lives in Oslo", "x", WALL0)
        await store.members.remember_fact(GUILD, 11, "Alex", "bio", "Plays chess", "x", WALL0)
        await store.members.add_lore(GUILD, 11, "Founded in 2019", WALL0)
    finally:
        store.close()


async def test_reads_what_the_snapshot_and_inspect_show(tmp_path: Path) -> None:
    """Guilds, members by name, facts, lore and the embedding state come back as plain values."""
    path = tmp_path / "vivy.db"
    await _fill(path)
    with open_sqlite_readonly(path) as view:
        assert view.guild_ids() == [GUILD]
        assert view.guild_members(GUILD) == [(11, "Alex"), (12, "Sam")]
        assert view.member_name(GUILD, 12) == "Sam"
        facts = view.profile_records(GUILD, 12, include_invalidated=False)
        assert [f.text for f in facts] == ["Lives in Oslo"]
        assert view.active_lore(GUILD) == ["Founded in 2019"]
        assert view.newest_note_date(GUILD) is None
        assert view.list_notes(GUILD) == []
        state = view.embedding_state()
        assert (state.model, state.notes, state.vectors, state.reembed_staged) == (
            None,
            0,
            0,
            False,
        )
        assert view.integrity_problems() == view.foreign_key_problems() == []


def test_refuses_a_missing_file_and_creates_nothing(tmp_path: Path) -> None:
    """Opening a path with no database fails and leaves no file behind."""
    path = tmp_path / "missing.db"
    with pytest.raises(StorageError, match="no such database file"):
        open_sqlite_readonly(path)
    assert not path.exists()


async def test_backup_copies_a_checked_single_file(tmp_path: Path) -> None:
    """The backup is a self-contained copy that reads back the same data."""
    path = tmp_path / "vivy.db"
    await _fill(path)
    target = tmp_path / "copy.db"
    pages, problems = backup_database(path, target)
    assert pages > 0 and problems == []
    assert not (tmp_path / "copy.db-wal").exists()
    with open_sqlite_readonly(target) as view:
        assert view.guild_members(GUILD) == [(11, "Alex"), (12, "Sam")]
