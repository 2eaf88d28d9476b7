"""``vivy import`` into PostgreSQL: the same export gives the same memory as into SQLite."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.pg import embedded_postgres
from vivy.clock import system_now
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.importer import import_exports
from vivy.llm.offline import OfflineLLM
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.leases import acquire, release

DEMO = Path(__file__).parents[2] / "vivy" / "data" / "demo_export.json"

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed"
)


def test_an_import_into_postgresql_matches_one_into_sqlite(tmp_path: Path, pg_uri: str) -> None:
    """Notes, clusters, facts and days of the demo export are the same on both engines, and a
    second run into PostgreSQL finds every message imported already."""
    on_sqlite = import_exports([DEMO], Settings(), llm=OfflineLLM, database=tmp_path / "v.db")
    postgres = replace(Settings(), database=tmp_path / "unused.db", database_url=pg_uri)
    on_postgres = import_exports([DEMO], postgres, llm=OfflineLLM)
    assert on_postgres.notes_written == on_sqlite.notes_written > 0
    assert on_postgres.clusters_written == on_sqlite.clusters_written
    assert on_postgres.facts_added == on_sqlite.facts_added > 0
    assert on_postgres.days == on_sqlite.days
    again = import_exports([DEMO], postgres, llm=OfflineLLM)
    assert again.stored == again.notes_written == again.llm_calls == 0
    assert again.duplicates == again.messages == on_postgres.messages
    assert not (tmp_path / "unused.db").exists()


def test_an_import_beside_a_running_fleet_is_refused(tmp_path: Path, pg_uri: str) -> None:
    """While a vivy run holds shard leases in the database, an import (whose store serves
    every guild) is refused with one line and writes no message; once the lease is released
    it runs."""
    postgres = replace(Settings(), database=tmp_path / "unused.db", database_url=pg_uri)
    database = PgDatabase.open(pg_uri)
    try:
        epoch = database.write_sync(acquire, 0, 2, "host:4242:abc", system_now(), 600.0)
        assert epoch == 1
        with pytest.raises(ConfigError, match=r"host:4242:abc .* hold shard leases"):
            import_exports([DEMO], postgres, llm=OfflineLLM)
        assert database.read_sync(
            lambda c: c.execute("SELECT COUNT(*) FROM buffer_messages").fetchone()
        ) == (0,)
        database.write_sync(release, "host:4242:abc", {0: 1})
        assert import_exports([DEMO], postgres, llm=OfflineLLM).notes_written > 0
    finally:
        database.close()
