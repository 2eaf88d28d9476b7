"""The one owner of Vivy's PostgreSQL connection.

psycopg's async API awaits asyncio futures and so does not run under trio, where the timer
tests run. :class:`PgDatabase` therefore owns one blocking psycopg connection and runs every
call either inline (tests under trio's MockClock, python-trio/trio#456) or on a worker thread
through ``anyio.to_thread.run_sync`` with a capacity limiter of one, which works under asyncio
and trio alike. Every call is one transaction: a write commits before it returns and fails as
a whole; a read runs in a read-only ``REPEATABLE READ`` transaction, so the statements of one
read see one snapshot.

One connection serves every call. A note search also reads on two side connections
(:class:`PgSide`, opened on first use), where its keyword searches run in other threads
beside its vector search (:meth:`PgDatabase.read_with_sides`); a ``psycopg_pool.ConnectionPool``
is the next step once a benchmark shows reads waiting behind writes.

Every call has a client-side deadline as well as the server's ``statement_timeout``, which a
partition never delivers: a call that overruns it has its socket shut down by one watchdog
thread (:class:`Watchdog`), so the blocked libpq call returns at once, the connection is
dropped and the next call connects again. The deadline is wall time of the machine, like
libpq's own ``connect_timeout``: it bounds I/O, it decides nothing.

psycopg's exceptions are translated into :class:`~vivy.errors.StorageError` here; integrity
violations are named in the words the SQLite engine uses (``UNIQUE constraint failed``,
``FOREIGN KEY constraint failed``), so callers and tests see one vocabulary. A connection the
server refused, dropped or left unanswered is a :class:`~vivy.errors.DatabaseUnavailable`:
waiting helps.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import anyio
import anyio.lowlevel
import psycopg
import psycopg.errors
import structlog

from vivy.errors import DatabaseUnavailable, SchemaTooNew, StorageError
from vivy.shards import Fence
from vivy.storage.dialect import Tx
from vivy.storage.postgres.connect import PgConnection, explained, timeout, with_timeouts
from vivy.storage.postgres.dialect import postgres_tx
from vivy.storage.postgres.leases import check_fence
from vivy.storage.postgres.schema import PG_MIGRATIONS, PG_SCHEMA_VERSION, VERSION_TABLE

__all__ = [
    "SIDE_CONNECTIONS",
    "PgConnection",
    "PgDatabase",
    "PgSide",
    "Watchdog",
    "call_deadline",
    "connect",
    "migrate",
    "schema_version",
]

T = TypeVar("T")
P = ParamSpec("P")

log = structlog.get_logger(__name__)

#: Key of the advisory lock that serialises migrations of processes sharing a database.
MIGRATION_LOCK = 0x76697679


#: How long the server lets a session sit idle inside a transaction before ending it. Vivy's
#: transactions never wait between statements, so only a process that was stopped (SIGSTOP,
#: a frozen VM) mid-transaction hits it: its locks, such as a fenced write's hold on a shard
#: lease, then block another process's takeover for this long at most.
IDLE_IN_TRANSACTION_TIMEOUT = "5s"


#: Words of libpq's answer to a connection attempt that waiting will not change (libpq gives
#: a refused connection no SQLSTATE, only its message).
_LASTING_REFUSALS = (
    "authentication failed",
    "does not exist",
    "pg_hba.conf",
    "password",
    "invalid",
    "unsupported",
    "permission denied",
)


def connect(
    uri: str, *, read_only: bool = False, connect_timeout_s: float | None = None
) -> PgConnection:
    """Open a connection to ``uri`` in autocommit mode (:class:`PgDatabase` opens the
    transactions itself); with ``read_only`` every transaction of it is read-only.

    A refusal that waiting may cure (no server listening, one starting or shutting down, no
    answer in time) raises :class:`DatabaseUnavailable`; a wrong password, database or
    setting raises a plain :class:`StorageError`.
    """
    try:
        conn = psycopg.connect(
            with_timeouts(uri, connect_timeout_s=connect_timeout_s), autocommit=True
        )
        if read_only:
            conn.execute("SET default_transaction_read_only = on")
        conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION_TIMEOUT}'")
    except psycopg.Error as exc:
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "failed")
        message = f"cannot open database {_safe(uri)}: {explained(first)}"
        if exc.sqlstate is not None:
            transient = _transient(exc)
        else:
            lasting = any(words in str(exc).lower() for words in _LASTING_REFUSALS)
            transient = isinstance(exc, psycopg.OperationalError) and not lasting
        if transient:
            raise DatabaseUnavailable(message) from exc
        raise StorageError(message) from exc
    return conn


#: Seconds a call may run past the statement time-out before its connection is cut.
DEADLINE_MARGIN_S = 10.0


def call_deadline() -> float:
    """Seconds a call of the owner may take, all of its statements together, before its
    connection is cut: the statement time-out and a margin, a backstop behind the server's
    limit and the kernel's TCP time-outs (40 s by default)."""
    return timeout() + DEADLINE_MARGIN_S


class Watchdog:
    """Shuts down the socket of a connection whose call overran its deadline.

    One daemon thread serves every armed call, sleeping until the earliest deadline; arming
    and disarming cost a lock and a heap push. Shutting the socket down (not closing its
    descriptor, which libpq owns) makes the blocked ``recv`` or ``send`` return an error.
    """

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, PgConnection] = {}
        self._fired: set[int] = set()
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, conn: PgConnection, seconds: float) -> int:
        """Cut ``conn`` unless :meth:`disarm` is called within ``seconds``; returns the
        token to disarm with."""
        with self._wake:
            token = next(self._tokens)
            self._armed[token] = conn
            heapq.heappush(self._heap, (time.monotonic() + seconds, token))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="vivy-pg-watchdog")
                self._thread.daemon = True
                self._thread.start()
            if self._heap[0][1] == token:
                self._wake.notify()
        return token

    def disarm(self, token: int) -> bool:
        """Stop watching the call of ``token``; returns whether its deadline had passed (its
        connection was cut)."""
        with self._wake:
            self._armed.pop(token, None)
            if token in self._fired:
                self._fired.discard(token)
                return True
            return False

    def _serve(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                while self._heap and (
                    self._heap[0][0] <= now or self._heap[0][1] not in self._armed
                ):
                    _, token = heapq.heappop(self._heap)
                    conn = self._armed.pop(token, None)
                    if conn is not None:
                        self._fired.add(token)
                        _sever(conn)
                self._wake.wait(self._heap[0][0] - now if self._heap else None)


def _sever(conn: PgConnection) -> None:
    """Shut the connection's socket down in both directions, whatever state libpq is in."""
    try:
        sock = socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM)
    except (OSError, psycopg.Error):
        return  # closed already
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


#: The process's one watchdog.
WATCHDOG = Watchdog()


def _safe(uri: str) -> str:
    """``uri`` without a password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(uri)
    except psycopg.Error:
        return "postgresql://?"
    host = info.get("host") or "localhost"
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{info.get('user') or ''}@{host}{port}/{info.get('dbname') or ''}"


def schema_version(conn: PgConnection) -> int:
    """The database's schema version (0 before the first migration)."""
    exists = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
    if exists is None or exists[0] is None:
        return 0
    row = conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()
    return 0 if row is None else int(row[0])


def migrate(conn: PgConnection) -> int:
    """Apply every pending migration, each in one transaction with its version bump, and
    return the resulting version; processes migrating at once wait for each other.

    Raises :class:`SchemaTooNew` when the database was written by a newer Vivy.
    """
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            # A migration may rebuild indexes over every row: the statement limit is lifted.
            conn.execute("SET LOCAL statement_timeout = 0")
            version = schema_version(conn)
            if version > PG_SCHEMA_VERSION:
                raise SchemaTooNew(version, PG_SCHEMA_VERSION)
            if version == 0:
                conn.execute(f"CREATE TABLE {VERSION_TABLE} (version INTEGER NOT NULL)")
                conn.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (0)")
            for number in range(version + 1, PG_SCHEMA_VERSION + 1):
                with conn.transaction():
                    conn.execute(PG_MIGRATIONS[number - 1].encode())
                    conn.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (number,))
    except psycopg.Error as exc:
        raise StorageError(f"migration failed: {exc}") from exc
    return PG_SCHEMA_VERSION


def _storage_error(exc: psycopg.Error, uri: str = "") -> StorageError:
    """``exc`` as a :class:`StorageError`, integrity violations in SQLite's words; a lost
    connection names the server of ``uri``."""
    diag = exc.diag
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return StorageError(f"UNIQUE constraint failed ({diag.constraint_name}): {exc}")
    if isinstance(exc, psycopg.errors.ForeignKeyViolation):
        return StorageError(f"FOREIGN KEY constraint failed ({diag.constraint_name}): {exc}")
    if isinstance(exc, psycopg.errors.CheckViolation):
        return StorageError(f"CHECK constraint failed ({diag.constraint_name}): {exc}")
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return StorageError(
            f"the database did not finish a statement within {timeout()} s "
            "(VIVY_DB_TIMEOUT_SECONDS)"
        )
    if _transient(exc):
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "failed")
        where = f"the database at {_safe(uri)}" if uri else "the database"
        return DatabaseUnavailable(f"{where} is unavailable: {first}")
    return StorageError(f"database: {exc}")


#: SQLSTATEs of a session the server ended or would not start, which waiting cures: the
#: administrator or a crash ended it, the server is starting or shutting down, an idle session
#: or a transaction left idle (a slow network between two statements) was ended, or every
#: connection slot is taken (a restart's reconnecting clients).
_TRANSIENT_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57P05", "25P03", "53300"})


def _transient(exc: psycopg.Error) -> bool:
    """Whether ``exc`` is a lost or refused connection rather than a failed statement: libpq
    reports no SQLSTATE for a connection that broke (reset, closed, cut by the watchdog), and
    the server class 08 or one of :data:`_TRANSIENT_SQLSTATES` for one it ended. A read-only
    transaction, a full disk, a dropped database or a constraint violation is not."""
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith("08") or state in _TRANSIENT_SQLSTATES


#: Read-only connections beside the owner's one, for the keyword searches of a note search.
SIDE_CONNECTIONS = 2


class PgSide:
    """A read-only connection beside the owner's, for a part of one read that runs in another
    thread. Its statements run outside any transaction, each in a snapshot of its own (no
    ``BEGIN``, ``SET TRANSACTION`` and ``COMMIT`` round trips): a search's side reads only
    find and describe notes, and a note gone in between is dropped by the read that misses
    it. It connects on first use and again after the server dropped it, refuses writes, and
    translates errors as the owner does."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self._conn: PgConnection | None = None
        self._lock = threading.Lock()

    def read(self, fn: Callable[[PgConnection], T]) -> T:
        """Run ``fn(conn)`` on this side connection."""
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                if conn is not None:
                    conn.close()
                conn = self._conn = connect(self._uri)
                conn.execute("SET default_transaction_read_only = on")
            try:
                return fn(conn)
            except psycopg.Error as exc:
                raise _storage_error(exc, self._uri) from exc

    def close(self) -> None:
        """Close the connection if it was opened."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PgDatabase:
    """Owns the connection; every read and write of the PostgreSQL engine goes through
    :meth:`read` / :meth:`write`, each running one synchronous storage function in one
    transaction (:class:`~vivy.storage.dialect.Tx`, scoped to ``fence``'s shards and fenced
    by its leases when given: a process of a fleet).

    A connection the server dropped (a restart, a failover, an idle timeout, the watchdog
    after a missed deadline) fails the call that finds it broken, with
    :class:`DatabaseUnavailable`, and the next call connects again: the process outlives its
    connection. :meth:`beside` makes a second owner on a connection of its own (the lease
    keeper's), so its calls never wait behind another's.
    """

    def __init__(
        self,
        conn: PgConnection | None,
        *,
        inline: bool,
        uri: str = "",
        fence: Fence | None = None,
        read_only: bool = False,
        deadline_s: float | None = None,
        sides: bool = True,
    ) -> None:
        self._conn = conn
        self._uri = uri
        self._read_only = read_only
        self._fence = fence
        self._tx = None if conn is None else self._transaction_of(conn)
        self._inline = inline
        self._limiter = anyio.CapacityLimiter(1)
        self._closed = False
        self._deadline_s = deadline_s
        self._sides = tuple(PgSide(uri) for _ in range(SIDE_CONNECTIONS)) if uri and sides else ()
        self._companions: list[PgDatabase] = []

    def beside(self, *, deadline_s: float) -> PgDatabase:
        """An unfenced owner of the same database on a connection of its own, opened on its
        first call, whose calls are cut after ``deadline_s`` (and give up connecting as
        soon); closed with this one."""
        other = PgDatabase(
            None, inline=self._inline, uri=self._uri, deadline_s=deadline_s, sides=False
        )
        self._companions.append(other)
        return other

    @classmethod
    def open(
        cls,
        uri: str,
        *,
        inline: bool = False,
        fence: Fence | None = None,
        read_only: bool = False,
    ) -> PgDatabase:
        """Connect to ``uri`` and migrate the database as needed; with ``read_only`` the
        database must be at this Vivy's schema version already, and every write through the
        owner is refused.

        ``inline`` runs calls on the event loop's thread (tests under trio's MockClock).
        """
        conn = connect(uri, read_only=read_only)
        try:
            if not read_only:
                migrate(conn)
            elif (version := schema_version(conn)) != PG_SCHEMA_VERSION:
                if version > PG_SCHEMA_VERSION:
                    raise SchemaTooNew(version, PG_SCHEMA_VERSION)
                raise StorageError(
                    f"the database has schema version {version}, not this Vivy's"
                    f" {PG_SCHEMA_VERSION}; start Vivy on it once to migrate it"
                )
        except BaseException:
            conn.close()
            raise
        return cls(conn, inline=inline, uri=uri, fence=fence, read_only=read_only)

    def _transaction_of(self, conn: PgConnection) -> Tx:
        """The :class:`Tx` of calls on ``conn``: the fence's shards, its leases checked."""
        fence = self._fence
        if fence is None:
            return postgres_tx(conn)

        def check(guild_id: int) -> None:
            check_fence(conn, *fence.token(guild_id))

        return postgres_tx(conn, scope=fence.shards, fence=check)

    async def read(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(tx, *args, **kwargs)`` in a read-only transaction; return its result."""
        return await self._run(lambda: self._transaction(fn, True, *args, **kwargs))

    async def write(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(tx, *args, **kwargs)`` in a transaction committed before this returns;
        an exception undoes all of the call's changes and is re-raised here."""
        return await self._run(lambda: self._transaction(fn, False, *args, **kwargs))

    async def read_with_sides(self, fn: Callable[[Tx, tuple[PgSide, ...]], T]) -> T:
        """Run ``fn(tx, sides)`` in a read-only transaction, where ``sides`` are more
        connections to the same database (none without a URI) that ``fn`` may read on from
        other threads (:class:`PgSide`: each statement in a snapshot of its own)."""
        sides = self._sides
        return await self._run(lambda: self._transaction(fn, True, sides))

    def read_sync(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a read on the calling thread; for tools outside any event loop."""
        self._check_open()
        return self._transaction(fn, True, *args, **kwargs)

    def write_sync(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a write on the calling thread; for tools outside any event loop."""
        self._check_open()
        return self._transaction(fn, False, *args, **kwargs)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`StorageError`."""
        if not self._closed:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
            for side in self._sides:
                side.close()
            for other in self._companions:
                other.close()

    async def _run(self, work: Callable[[], T]) -> T:
        """Run ``work`` inline or on the owner's worker thread, one call at a time."""
        self._check_open()
        if self._inline:
            await anyio.lowlevel.checkpoint()
            return work()
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    def _transaction(
        self,
        fn: Callable[Concatenate[Tx, P], T],
        read_only: bool,
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``fn`` in one transaction on the connection, psycopg errors translated; a call
        that overruns the deadline has its connection cut."""
        conn, tx = self._connection()
        deadline = self._deadline_s if self._deadline_s is not None else call_deadline()
        token = WATCHDOG.arm(conn, deadline)
        try:
            with conn.transaction():
                if read_only:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return fn(tx, *args, **kwargs)
        except psycopg.Error as exc:
            log.debug("storage call failed", call=getattr(fn, "__name__", "?"), error=str(exc))
            if WATCHDOG.disarm(token):
                raise DatabaseUnavailable(
                    f"the database at {_safe(self._uri)} did not answer within {deadline:g} s;"
                    " its connection was dropped"
                ) from exc
            raise _storage_error(exc, self._uri) from exc
        finally:
            WATCHDOG.disarm(token)

    def _connection(self) -> tuple[PgConnection, Tx]:
        """The open connection and its :class:`Tx`, connecting first if there is none or
        the server dropped it."""
        conn, tx = self._conn, self._tx
        if conn is not None and tx is not None and not (conn.closed or conn.broken):
            return conn, tx
        if not self._uri:
            raise DatabaseUnavailable("the database connection was lost")
        reopened = conn is not None
        if conn is not None:
            conn.close()
        self._conn = self._tx = None
        conn = connect(self._uri, read_only=self._read_only, connect_timeout_s=self._deadline_s)
        self._conn, self._tx = conn, self._transaction_of(conn)
        if reopened:
            log.info("database connection opened again")
        return conn, self._tx

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("the database is closed")
