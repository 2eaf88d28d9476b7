"""The one owner of Vivy's SQLite connection.

sqlite-vec is a loadable extension and this machine's Python is built without loadable-extension
support, so the connection comes from ``sqlean.py`` (SQLite 3.50 with FTS5 and extension
loading). aiosqlite cannot be the core: it awaits asyncio futures and so does not run under
trio, where the timer tests run. Instead :class:`Database` owns one connection and runs every
call either inline (deterministic tests under trio's MockClock, where a task waiting on a worker
thread counts as idle, python-trio/trio#456) or on a worker thread through
``anyio.to_thread`` with a capacity limiter of one (production, asyncio or trio).

Writes are group-committed: writes submitted while another batch is on the thread are run
together in one transaction; if one of them fails, the batch is rolled back and each write is
run again alone, so one failing write does not undo the others. Reads submitted together are
likewise run in one hop to the thread, each with its own result or error.

In thread mode the WAL is checkpointed by a :class:`_Checkpointer` thread of its own, as SQLite
suggests for WAL databases, instead of inside whichever commit crosses the threshold: copying
pages back and syncing the database file then happens beside the writes, not before an ack.

SQLite's errors are translated into :class:`~vivy.errors.StorageError`; a file another
process kept locked past the busy time-out (``database is locked``) is a
:class:`~vivy.errors.DatabaseUnavailable`, since the same call may succeed once the lock is
gone, while a read-only file, a full disk or a constraint violation is not.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast

import anyio
import sqlean
import sqlite_vec
import structlog

from vivy.errors import DatabaseUnavailable, SchemaTooNew, StorageError
from vivy.storage.dialect import Tx
from vivy.storage.sqlite.dialect import sqlite_tx
from vivy.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from vivy.storage.sqlite.writer_lock import hold_writer_lock

__all__ = ["Connection", "Database", "connect", "migrate"]

T = TypeVar("T")
P = ParamSpec("P")

log = structlog.get_logger(__name__)

#: The DB-API connection type handed to storage functions.
Connection = sqlite3.Connection

BUSY_TIMEOUT_MS = 5000
#: Bytes of the database file mapped into memory for reads.
MMAP_BYTES = 1 << 30
#: Page cache of the connection, in KiB.
CACHE_KIB = 65536
#: Rows changed between checkpoints in thread mode; a row is about a page of the WAL, so this is
#: close to SQLite's own automatic checkpoint at 1,000 pages.
CHECKPOINT_ROWS = 1000
#: Read-only connections beside the main one, for searches whose parts run side by side.
SIDE_CONNECTIONS = 2


def connect(path: str | Path) -> Connection:
    """Open ``path`` with sqlite-vec loaded, WAL, foreign keys and a busy timeout.

    The connection is in autocommit mode; :class:`Database` opens transactions itself.
    """
    try:
        conn: Connection = sqlean.connect(str(path), isolation_level=None, check_same_thread=False)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.row_factory = sqlean.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:  # checked before WAL changes the file header
            conn.close()
            raise SchemaTooNew(version, SCHEMA_VERSION)
        if str(path) != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Vector chunks are read by memory mapping instead of copying (the KNN re-rank
        # touches them per candidate), and hot pages stay cached.
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    except sqlean.Error as exc:
        message = f"cannot open database {path}: {_open_failure(path, exc)}"
        if _locked(exc):
            raise DatabaseUnavailable(message) from exc
        raise StorageError(message) from exc
    return conn


def _locked(exc: sqlean.Error) -> bool:
    """Whether ``exc`` says another connection holds a lock (SQLITE_BUSY, SQLITE_LOCKED):
    the only SQLite failure that waiting cures."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (sqlean.SQLITE_BUSY, sqlean.SQLITE_LOCKED)


def _open_failure(path: str | Path, exc: sqlean.Error) -> str:
    """Why SQLite could not open ``path``: its own words, and for its vague "unable to open
    database file" the reason the folder gives (missing, or not writable by this user)."""
    if "unable to open" not in str(exc) or str(path) == ":memory:":
        return str(exc)
    folder = Path(path).parent
    if not folder.is_dir():
        return f"{exc} (no such folder: {folder})"
    if not Path(path).exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"{exc} (this user cannot create files in {folder})"
    return str(exc)


def _storage_error(conn: Connection, call: str, exc: sqlean.Error) -> StorageError:
    """``exc`` in the operator's words, naming the database file; the storage call that
    failed (``call``) goes to the debug log."""
    log.debug("storage call failed", call=call, error=str(exc))
    try:
        file = str(conn.execute("PRAGMA database_list").fetchone()[2]) or "in memory"
    except sqlean.Error:
        file = "?"
    if _locked(exc):
        return DatabaseUnavailable(f"database {file} is locked by another process: {exc}")
    if "readonly" in str(exc):
        return StorageError(
            f"the database {file} cannot be written ({exc}); make the file and its folder "
            "writable by this user"
        )
    return StorageError(f"database {file}: {exc}")


def migrate(conn: Connection) -> int:
    """Apply every pending migration and return the resulting schema version.

    Raises :class:`SchemaTooNew` when the database was written by a newer Vivy.
    """
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version, SCHEMA_VERSION)
    for number in range(version + 1, SCHEMA_VERSION + 1):
        script = MIGRATIONS[number - 1]
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except sqlean.Error as exc:
            conn.execute("ROLLBACK")
            raise StorageError(f"migration {number} failed: {exc}") from exc
    return SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    """Split a migration script into complete statements (triggers included)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlean.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements


class _Job(Protocol):
    """What a batch runs: work in the transaction that keeps its own result or error."""

    name: str
    error: BaseException | None

    def run(self, tx: Tx) -> None:
        """Run the work in ``tx``; its exception propagates to the runner."""

    def succeed(self) -> None:
        """Mark the run kept (its transaction committed)."""


@dataclass(eq=False)
class _Call(Generic[T]):
    """A read or write waiting for its batch: the work on the connection, and its outcome once
    run. ``name`` names the storage function for the debug log when it fails."""

    fn: Callable[[Tx], T]
    name: str
    result: T | None = None
    error: BaseException | None = None
    done: bool = False

    def run(self, tx: Tx) -> None:
        """Run the work in ``tx``, keeping its result (errors propagate to the runner)."""
        self.result = self.fn(tx)

    def succeed(self) -> None:
        """Mark the result final: the call ran and (for a write) its transaction committed."""
        self.done, self.error = True, None

    def outcome(self) -> T:
        """The result of the call once run; raises the error it ended with."""
        if self.error is not None:
            raise self.error
        assert self.done, "outcome() of a call that has not run"
        return cast("T", self.result)


def _bind(fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs) -> _Call[T]:
    """A call of ``fn(tx, *args, **kwargs)`` waiting for the connection."""

    def work(tx: Tx) -> T:
        return fn(tx, *args, **kwargs)

    return _Call(work, getattr(fn, "__name__", repr(fn)))


class _Batches:
    """Runs calls on the worker thread in batches: those submitted while a batch is running
    go together in the next one, so a burst of calls costs one thread hop per batch.

    For writes this is group commit (``run`` commits each batch in one transaction); reads are
    batched too, since a hop costs more than most reads (a burst of new channel actors each
    reads its channel's state).
    """

    def __init__(self, run: Callable[[list[_Job]], None], limiter: anyio.CapacityLimiter) -> None:
        self._run = run
        self._limiter = limiter
        self._pending: list[_Job] = []
        #: Set once the pending calls have run; made when the first of them must wait.
        self._pending_done: anyio.Event | None = None
        self._flushing = False

    async def submit(self, call: _Job) -> None:
        """Run ``call`` in a batch; its result or error is on it when this returns."""
        self._pending.append(call)
        if self._flushing:  # the flushing task runs this call in its next batch
            if self._pending_done is None:
                self._pending_done = anyio.Event()
            await self._pending_done.wait()
        else:
            await self._flush()

    async def _flush(self) -> None:
        """Run pending calls in batches until none is left (the caller's own is among them)."""
        self._flushing = True
        try:
            while self._pending:
                batch, done = self._pending, self._pending_done
                self._pending, self._pending_done = [], None
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._run, batch, limiter=self._limiter)
                if done is not None:
                    done.set()
        finally:
            self._flushing = False


class _Checkpointer:
    """Checkpoints the WAL on a thread and connection of its own, when kicked.

    A PASSIVE checkpoint neither waits for nor blocks the writer; kicks that arrive while one
    runs are served by the next. The owner kicks after every ``CHECKPOINT_ROWS`` changed rows.
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._cond = threading.Condition()
        self._wanted = False
        self._running = False
        self._stopping = False
        #: Checkpoints run so far.
        self.runs = 0
        self._thread = threading.Thread(target=self._serve, name="vivy-checkpoint", daemon=True)
        self._thread.start()

    def kick(self) -> None:
        """Ask for a checkpoint (never waits for one)."""
        with self._cond:
            self._wanted = True
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no checkpoint is wanted or running; False if ``timeout`` seconds ran out."""
        with self._cond:
            return self._cond.wait_for(lambda: not (self._wanted or self._running), timeout)

    def close(self) -> None:
        """Stop the thread after the checkpoint under way, and close its connection.

        A wanted checkpoint that has not started is left to SQLite, which checkpoints when the
        last connection to the database closes.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        self._conn.close()

    def _serve(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._wanted or self._stopping)
                if self._stopping:
                    return
                self._wanted, self._running = False, True
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.runs += 1
            except sqlean.Error:  # the next kick tries again; no data is at risk
                log.exception("WAL checkpoint failed")
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()


class Database:
    """Owns the connection; every read and write of Vivy goes through :meth:`read` / :meth:`write`.

    Storage functions are plain synchronous functions taking the call's transaction
    (:class:`~vivy.storage.dialect.Tx`) first; the modules of :mod:`vivy.storage` hold them,
    grouped by area, and :mod:`vivy.storage.areas` runs them through this owner behind the
    storage port.
    """

    def __init__(
        self,
        conn: Connection,
        *,
        inline: bool,
        sides: tuple[Connection, ...] = (),
        checkpointer: _Checkpointer | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        self._conn = conn
        self._release = release
        self._tx = sqlite_tx(conn)
        self._sides = sides
        self._checkpointer = checkpointer
        self._checkpointed_changes = conn.total_changes
        self._inline = inline
        self._limiter = anyio.CapacityLimiter(1)
        self._reads = _Batches(self._run_reads, self._limiter)
        self._writes = _Batches(self._run_batch, self._limiter)
        self._closed = False

    @classmethod
    def open(cls, path: str | Path, *, inline: bool = False) -> Database:
        """Open (creating and migrating as needed) the database at ``path``, holding this
        process's writer lock on it (:mod:`vivy.storage.sqlite.writer_lock`) until :meth:`close`."""
        conn = connect(path)
        if str(path) == ":memory:":
            release = None
        else:
            try:
                release = hold_writer_lock(path)
            except BaseException:
                conn.close()
                raise
        try:
            migrate(conn)
            if release is None:
                return cls(conn, inline=inline)
            checkpointer = None
            if not inline:  # inline mode keeps SQLite's checkpoints: it has no threads
                conn.execute("PRAGMA wal_autocheckpoint = 0")
                checkpointer = _Checkpointer(connect(path))
            sides = tuple(connect(path) for _ in range(SIDE_CONNECTIONS))
        except BaseException:
            conn.close()
            if release is not None:
                release()
            raise
        return cls(conn, inline=inline, sides=sides, checkpointer=checkpointer, release=release)

    @property
    def inline(self) -> bool:
        """Whether calls run on the event loop's thread (mock-clock tests) or a worker thread."""
        return self._inline

    async def read(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(tx, *args, **kwargs)`` outside any explicit transaction; return its result."""
        self._check_open()
        call = _bind(fn, *args, **kwargs)
        if self._inline:
            await anyio.lowlevel.checkpoint()
            self._run_reads([call])
        else:
            await self._reads.submit(call)
        return call.outcome()

    async def write(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(tx, *args, **kwargs)`` in a committed transaction and return its result.

        When this returns, the change is durable. An exception raised by ``fn`` undoes only
        its own changes and is re-raised here.
        """
        self._check_open()
        call = _bind(fn, *args, **kwargs)
        if self._inline:
            await anyio.lowlevel.checkpoint()
            self._run_batch([call])
        else:
            await self._writes.submit(call)
        return call.outcome()

    async def read_with_sides(
        self,
        fn: Callable[Concatenate[Tx, tuple[Connection, ...], P], T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``fn(tx, sides, *args, **kwargs)``, where ``sides`` are more connections to
        the same database (none for ``:memory:``).

        ``fn`` may run independent queries on ``sides`` in other threads while it runs
        another in ``tx``: SQLite releases the GIL, and WAL lets readers run side by side.
        Every connection belongs to this owner; ``sides`` are only ever read.
        """
        self._check_open()
        sides = self._sides

        def work(tx: Tx) -> T:
            return fn(tx, sides, *args, **kwargs)

        call = _Call(work, getattr(fn, "__name__", repr(fn)))
        if self._inline:
            await anyio.lowlevel.checkpoint()
            self._run_reads([call])
        else:
            jobs: list[_Job] = [call]
            await anyio.to_thread.run_sync(self._run_reads, jobs, limiter=self._limiter)
        return call.outcome()

    def checkpoint_idle(self, timeout: float) -> bool:
        """Wait until the WAL checkpoint asked for (if any) has run; for tools and tests."""
        return self._checkpointer is None or self._checkpointer.wait_idle(timeout)

    def read_sync(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a read on the calling thread; for command-line tools outside any event loop."""
        self._check_open()
        call = _bind(fn, *args, **kwargs)
        self._run_reads([call])
        return call.outcome()

    def write_sync(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a write on the calling thread; for command-line tools outside any event loop."""
        self._check_open()
        call = _bind(fn, *args, **kwargs)
        self._run_batch([call])
        return call.outcome()

    def close(self) -> None:
        """Close the connection; later calls raise :class:`StorageError`."""
        if not self._closed:
            self._closed = True
            if self._checkpointer is not None:
                self._checkpointer.close()
            self._conn.close()
            for side in self._sides:
                side.close()
            if self._release is not None:
                self._release()

    def _run_reads(self, batch: list[_Job]) -> None:
        """Run reads one after another; each keeps its own result or error."""
        for call in batch:
            try:
                call.run(self._tx)
                call.succeed()
            except sqlean.Error as exc:
                call.error = _storage_error(self._conn, call.name, exc)
            except BaseException as exc:  # re-raised in the caller's task
                call.error = exc

    def _run_batch(self, batch: list[_Job]) -> None:
        """Run writes in one transaction and commit once (group commit).

        Writes are optimistic: if one of them fails, the transaction is rolled back and
        every write of the batch is run again in a transaction of its own, so the failure
        undoes only its own changes. Storage functions only touch the database, so running
        one again after a rollback is safe.
        """
        if len(batch) > 1 and self._run_together(batch):
            return
        for job in batch:
            self._run_together([job])

    def _run_together(self, batch: list[_Job]) -> bool:
        """Run ``batch`` in one transaction; True if it committed (or failed as a whole)."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlean.Error as exc:
            for job in batch:
                job.error = _storage_error(conn, "BEGIN", exc)
            return True
        for job in batch:
            try:
                job.run(self._tx)
            except BaseException as exc:  # re-raised in the caller's task
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if len(batch) > 1:
                    return False  # isolate the failure: run each write alone
                job.error = (
                    _storage_error(conn, job.name, exc) if isinstance(exc, sqlean.Error) else exc
                )
                return True
        try:
            conn.execute("COMMIT")
        except sqlean.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for job in batch:
                job.error = _storage_error(conn, "COMMIT", exc)
            return True
        for job in batch:
            job.succeed()
        self._after_commit()
        return True

    def _after_commit(self) -> None:
        """Kick the checkpointer once enough rows have changed since its last kick."""
        if self._checkpointer is None:
            return
        changes = self._conn.total_changes
        if changes - self._checkpointed_changes >= CHECKPOINT_ROWS:
            self._checkpointed_changes = changes
            self._checkpointer.kick()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("the database is closed")
