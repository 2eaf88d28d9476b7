"""Opening a store: either engine by what ``VIVY_DB`` names, and read-only without changing it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.pg import ENGINES
from vivy.errors import StorageError
from vivy.storage.engines import Target, open_store, target_of


@pytest.fixture(params=ENGINES)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    """An empty database of each engine: a SQLite file's path, or a PostgreSQL connection
    string."""
    if request.param == "postgres":
        uri: str = request.getfixturevalue("pg_uri")
        return uri
    return tmp_path / "vivy.db"


def test_a_url_names_postgresql_and_anything_else_a_file() -> None:
    """``postgresql://`` (and ``postgres://``) URLs stay strings; the rest are paths."""
    assert target_of("postgresql://vivy@db/vivy") == "postgresql://vivy@db/vivy"
    assert target_of("postgres://db/vivy") == "postgres://db/vivy"
    assert target_of("data/vivy.db") == Path("data/vivy.db")


def test_a_read_only_store_reads_and_refuses_every_write(database: Target) -> None:
    """A read-only store of a migrated database reads it; a write through it fails as a
    StorageError and changes nothing."""

    async def main() -> None:
        writable = open_store(database, inline=True)
        try:
            await writable.meta.adopt_embedding_model("model-a", 8)
        finally:
            writable.close()
        store = open_store(database, read_only=True, inline=True)
        try:
            assert await store.meta.get_meta("embedding_model") == "model-a"
            with pytest.raises(StorageError):
                await store.meta.adopt_embedding_model("model-b", 8)
            with pytest.raises(StorageError):
                await store.buffers.open_buffer(1, 2, "general", 100.0, 1500.0)
            assert await store.meta.get_meta("embedding_model") == "model-a"
            assert await store.buffers.open_channels() == []
        finally:
            store.close()

    anyio.run(main)


def test_a_read_only_store_never_creates_a_database(tmp_path: Path) -> None:
    """A missing SQLite file is refused in one line, and not created."""
    missing = tmp_path / "missing.db"
    with pytest.raises(StorageError, match=r"missing\.db"):
        open_store(missing, read_only=True)
    assert not missing.exists()
