"""Fixtures of the storage tests.

The tests of the storage port take ``store`` (a :class:`~vivy.storage.port.Store` over a fresh
database) and, to look at what the port does not show, ``probe`` (plain SQL with ``?``
placeholders on the same database). Both come from ``engine``, parametrized by engine: a
second engine joins the suite by adding its name to :data:`ENGINES` and a branch that opens it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.storage import Probe, SqliteProbe
from vivy.storage.db import Database
from vivy.storage.port import Store
from vivy.storage.sqlite import sqlite_store

#: The engines every port test runs on.
ENGINES = ["sqlite"]


@dataclass(frozen=True)
class Engine:
    """A store over a fresh database, and a probe into the same database."""

    name: str
    store: Store
    probe: Probe


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A freshly migrated database of each engine (SQLite runs inline, for the mock clock)."""
    assert request.param == "sqlite"
    database = Database.open(tmp_path / "vivy.db", inline=True)
    try:
        yield Engine(request.param, sqlite_store(database), SqliteProbe(database))
    finally:
        database.close()


@pytest.fixture
def store(engine: Engine) -> Store:
    """The storage port over the engine's fresh database."""
    return engine.store


@pytest.fixture
def probe(engine: Engine) -> Probe:
    """Plain SQL into the engine's database, for what the port does not show."""
    return engine.probe


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A freshly migrated SQLite database, used through its synchronous calls (run inline)."""
    database = Database.open(tmp_path / "vivy.db", inline=True)
    try:
        yield database
    finally:
        database.close()
