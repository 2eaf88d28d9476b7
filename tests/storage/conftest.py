"""Fixtures of the storage tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vivy.storage.db import Database


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A freshly migrated database, used through its synchronous calls (run inline)."""
    database = Database.open(tmp_path / "vivy.db", inline=True)
    try:
        yield database
    finally:
        database.close()
