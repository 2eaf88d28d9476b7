"""``vivy import`` into PostgreSQL: the same export gives the same memory as into SQLite."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.pg import embedded_postgres
from vivy.config import Settings
from vivy.importer import import_exports
from vivy.llm.offline import OfflineLLM

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
