"""Every PostgreSQL connection's time-outs: connecting gives up, a statement is ended, and the
bulk steps lift the statement limit for themselves."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import psycopg
import pytest

from tests.pg import embedded_postgres
from vivy.errors import StorageError
from vivy.storage.postgres import db as pg_db
from vivy.storage.postgres.connect import (
    DEFAULT_TIMEOUT_S,
    set_timeout,
    timeout,
    with_timeouts,
)
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.readonly import open_postgres_readonly
from vivy.storage.postgres.schema import PG_MIGRATIONS, PG_SCHEMA_VERSION

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed (the dev extra)"
)


@pytest.fixture(autouse=True)
def default_timeout() -> Iterator[None]:
    """Each test starts, and leaves, with the default time-out."""
    set_timeout(DEFAULT_TIMEOUT_S)
    yield
    set_timeout(DEFAULT_TIMEOUT_S)


def open_connection(
    uri: str, *, read_only: bool = False, bounded: bool = True
) -> psycopg.Connection[tuple[object, ...]]:
    """A connection with the time-outs Vivy's own get."""
    return psycopg.connect(
        with_timeouts(uri, read_only=read_only, bounded=bounded), autocommit=True
    )


def _setting(conn: psycopg.Connection[tuple[object, ...]], name: str) -> str:
    return str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]


def test_connections_carry_the_statement_limit_unless_unbounded(pg_uri: str) -> None:
    """The server ends a statement after the time-out; a bulk connection has no limit; a
    read-only one keeps the URL's own options (its search path) beside both."""
    set_timeout(7)
    with open_connection(pg_uri) as bounded, open_connection(pg_uri, bounded=False) as bulk:
        assert _setting(bounded, "statement_timeout") == "7s"
        assert _setting(bulk, "statement_timeout") == "0"
    with open_connection(pg_uri, read_only=True) as reader:
        assert _setting(reader, "default_transaction_read_only") == "on"
        assert _setting(reader, "statement_timeout") == "7s"
        assert _setting(reader, "search_path").startswith("vivy_test_")


def test_a_server_that_never_answers_fails_in_one_line_naming_the_host() -> None:
    """A server that accepts the connection and says nothing is given up on after the
    time-out, with one line naming the host and the setting, never the password."""
    set_timeout(2)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(StorageError) as caught:
            open_postgres_readonly(f"postgresql://vivy:s3cret@127.0.0.1:{port}/vivy")
    message = str(caught.value)
    assert message.splitlines() == [message]
    assert f"127.0.0.1:{port}" in message and "VIVY_DB_TIMEOUT_SECONDS" in message
    assert "s3cret" not in message


def test_a_statement_past_the_limit_fails_naming_the_setting(pg_uri: str) -> None:
    """A statement the server ends at the limit becomes a StorageError that says which
    setting bounds it; the owner goes on working."""
    db = PgDatabase.open(pg_uri)
    try:
        with pytest.raises(StorageError, match="VIVY_DB_TIMEOUT_SECONDS"):
            db.read_sync(
                lambda conn: conn.execute(
                    "SET LOCAL statement_timeout = '10ms'; SELECT pg_sleep(1)"
                ).fetchall()
            )
        assert db.read_sync(lambda conn: conn.execute("SELECT 1").fetchone()) == (1,)
    finally:
        db.close()
    assert timeout() == DEFAULT_TIMEOUT_S


def test_migrations_are_not_bound_by_the_statement_limit(
    pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration may rebuild indexes over every row: it runs without the limit, here a
    migration that takes longer than the limit of one second."""
    set_timeout(1)
    monkeypatch.setattr(pg_db, "PG_MIGRATIONS", [*PG_MIGRATIONS, "SELECT pg_sleep(1.5)"])
    monkeypatch.setattr(pg_db, "PG_SCHEMA_VERSION", PG_SCHEMA_VERSION + 1)
    with open_connection(pg_uri) as conn:
        assert pg_db.migrate(conn) == PG_SCHEMA_VERSION + 1
        assert pg_db.schema_version(conn) == PG_SCHEMA_VERSION + 1
