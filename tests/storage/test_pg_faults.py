"""The PostgreSQL owner through real faults: a black hole, a reset, a terminated backend, a
refused connection, and a stuck statement beside the leases' own connection.

The faults come from a loopback proxy (``tests/faultproxy.py``) in front of the embedded
server and from the server itself. The deadlines here are real time (a socket must really be
cut), kept at a second; no test asserts on how long anything took.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anyio
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.faultproxy import through
from tests.pg import embedded_postgres
from vivy.errors import DatabaseUnavailable, StorageError
from vivy.storage.postgres.connect import (
    KEEPALIVE_IDLE_S,
    TCP_USER_TIMEOUT_MS,
    with_timeouts,
)
from vivy.storage.postgres.db import PgDatabase, connect
from vivy.storage.postgres.stores import LeaseArea

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed (the dev extra)"
)


def one(db: PgDatabase) -> int:
    """``SELECT 1`` through the owner."""
    row = db.read_sync(lambda tx: tx.one("SELECT 1"))
    assert row is not None
    return int(row[0])


@pytest.fixture
def proxied(pg_uri: str) -> Iterator[tuple[object, str]]:
    """A fault proxy in front of the test's schema, and the URI through it (migrated)."""
    PgDatabase.open(pg_uri).close()
    with through(pg_uri) as (proxy, uri):
        yield proxy, uri


def owner(uri: str, deadline_s: float = 1.0) -> PgDatabase:
    """An owner of ``uri`` whose calls are cut after ``deadline_s``."""
    return PgDatabase(connect(uri), inline=True, uri=uri, deadline_s=deadline_s)


def test_connections_ask_the_kernel_to_notice_a_dead_peer(proxied: tuple[object, str]) -> None:
    """A TCP connection carries keepalives and a user time-out, so a partition ends it."""
    _, uri = proxied
    params = conninfo_to_dict(with_timeouts(uri))
    assert params["keepalives"] == "1"
    assert params["keepalives_idle"] == str(KEEPALIVE_IDLE_S)
    assert params["tcp_user_timeout"] == str(TCP_USER_TIMEOUT_MS)
    conn = connect(uri)
    try:
        sock = socket.socket(fileno=conn.fileno())
        try:
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE_S
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == (
                TCP_USER_TIMEOUT_MS
            )
        finally:
            sock.detach()  # libpq owns the descriptor
    finally:
        conn.close()


def test_a_black_holed_call_is_cut_at_its_deadline_and_the_next_connects_again(
    proxied: tuple[object, str],
) -> None:
    """Behind a black hole a call fails at its client-side deadline, naming the server,
    where the server's statement time-out never arrives; once healed the next call works."""
    proxy, uri = proxied
    db = owner(uri)
    try:
        assert one(db) == 1
        proxy.black_hole()  # type: ignore[attr-defined]
        with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1.*did not answer within 1 s"):
            one(db)
        proxy.heal()  # type: ignore[attr-defined]
        assert one(db) == 1
    finally:
        db.close()


def test_a_reset_connection_fails_one_call_and_the_next_connects_again(
    proxied: tuple[object, str],
) -> None:
    """A connection reset fails the call that finds it, as unavailable; the next reconnects."""
    proxy, uri = proxied
    db = owner(uri, deadline_s=30.0)
    try:
        assert one(db) == 1
        proxy.reset()  # type: ignore[attr-defined]
        with pytest.raises(DatabaseUnavailable):
            one(db)
        assert one(db) == 1
        assert proxy.accepted == 2  # type: ignore[attr-defined]
    finally:
        db.close()


def test_a_terminated_backend_fails_one_call_and_the_next_connects_again(pg_uri: str) -> None:
    """``pg_terminate_backend`` (an administrator, a failover) fails one call; the next
    connects again."""
    db = PgDatabase.open(pg_uri)
    try:
        pid = db.read_sync(lambda tx: tx.one("SELECT pg_backend_pid()"))
        assert pid is not None
        with psycopg.connect(pg_uri, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid[0],))
        with pytest.raises(DatabaseUnavailable):
            one(db)
        assert one(db) == 1
    finally:
        db.close()


def test_a_refused_connection_is_unavailable_but_a_wrong_database_is_not(pg_uri: str) -> None:
    """Nothing listening is worth waiting for; a database that does not exist is not."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(DatabaseUnavailable, match="cannot open database"):
        connect(make_conninfo(pg_uri, host="127.0.0.1", port=str(port)))
    with pytest.raises(StorageError, match="does not exist") as refused:
        connect(make_conninfo(pg_uri, dbname="no_such_database"))
    assert not isinstance(refused.value, DatabaseUnavailable)


def wait_for_a_waiter(admin: psycopg.Connection[tuple[object, ...]]) -> None:
    """Return once a session waits for an advisory lock, polling the server's lock table
    (on a worker thread: the event loop stays free)."""
    while True:
        row = admin.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
        if row is not None and int(str(row[0])):
            return
        admin.execute("SELECT pg_sleep(0.01)")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_leases_are_renewed_while_the_owner_is_stuck_in_a_statement(
    pg_uri: str, anyio_backend: str
) -> None:
    """A lease call answers while the owner's connection waits on a lock, because the leases
    have a connection of their own (real threads, asyncio)."""
    db = PgDatabase.open(pg_uri)
    leases = LeaseArea(db.beside(deadline_s=4.0))
    finished: list[str] = []
    key = 0x5EA7
    try:
        with psycopg.connect(pg_uri, autocommit=True) as admin:
            admin.execute("SELECT pg_advisory_lock(%s)", (key,))

            async def stuck() -> None:
                await db.read(lambda tx: tx.one("SELECT pg_advisory_lock_shared(?)", (key,)))
                finished.append("stuck statement")

            async with anyio.create_task_group() as tg:
                tg.start_soon(stuck)
                await anyio.to_thread.run_sync(wait_for_a_waiter, admin)
                epoch = await leases.acquire(0, 1, "owner", 100.0, 15.0)
                finished.append("lease")
                admin.execute("SELECT pg_advisory_unlock(%s)", (key,))
        assert epoch == 1
        assert finished == ["lease", "stuck statement"]
    finally:
        db.close()
