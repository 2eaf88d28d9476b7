"""``vivy db copy``: move a Vivy database from one engine to the other, row for row.

A SQLite file and a PostgreSQL database hold the same logical schema at the same version
(:mod:`vivy.storage.schema`, :mod:`vivy.storage.postgres.schema`), so a copy moves rows, not
meaning. The rules:

* :data:`COPIED_TABLES` is the one list of what is copied, parents before children, each
  table with the key its batches are read by. :data:`NOT_COPIED` names every other table of
  either schema (a test holds the two lists against the migrations), so a table added to the
  schema fails that test until someone decides which list it belongs to.
* Columns are read from both schemas and must match; what one engine derives is never
  copied: SQLite's FTS5 tables (filled by triggers) and ``vec_notes.embedding_bits``,
  PostgreSQL's generated ``tsvector`` columns. ``note_participants.position`` is the column
  PostgreSQL keeps SQLite's rowid in (the order participants were listed in).
* Vectors travel as float32: SQLite's blob is sent to pgvector in pgvector's binary form, and
  pgvector's value is read back as ``real[]`` in binary, so a round trip keeps every bit. The
  target's vector indexes (HNSW) are set aside while rows arrive and built once at the end,
  several times faster than growing them row by row.
* Rows are read from the source in keyset batches by key and written to the target one
  transaction per batch, together with the progress (the ``meta`` row :data:`PROGRESS_KEY`:
  the source and each table's last copied key). A copy interrupted anywhere continues from
  there when run again with the same source, and ends with the same rows as one that was not
  interrupted. Self-references (``profile_facts.superseded_by``) are written after every row
  of their table, since a fact points at a newer one, in batches recorded the same way.
* Ids are kept, and each id sequence of the target is set to the source's highest id ever
  issued (SQLite's ``sqlite_sequence``, PostgreSQL's sequences), so no id is reused: a deleted
  buffer's id stays taken by its note's ``buffer_id``.
* The source is only read (SQLite through :func:`~vivy.storage.checks.open_readonly`,
  PostgreSQL in read-only transactions). A target holding rows is refused, unless it holds an
  unfinished copy of the same source (then the copy resumes) or ``replace`` empties it first.
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import psycopg
import sqlean
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import Format
from psycopg.types import TypeInfo

from vivy.errors import ConfigError, SchemaTooNew, StorageError
from vivy.storage import checks
from vivy.storage.db import Connection
from vivy.storage.db import connect as sqlite_connect
from vivy.storage.db import migrate as sqlite_migrate
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.db import migrate as pg_migrate
from vivy.storage.postgres.db import schema_version as pg_schema_version
from vivy.storage.postgres.readonly import connection_error, shown_url
from vivy.storage.postgres.reembed import note_vector_dimension
from vivy.storage.postgres.schema import VERSION_TABLE
from vivy.storage.postgres.schema import vec_notes_ddl as pg_vec_notes_ddl
from vivy.storage.reembed import REEMBED_STAGING
from vivy.storage.schema import SCHEMA_VERSION, binary_dimensions

__all__ = [
    "BATCH_ROWS",
    "COPIED_TABLES",
    "NOT_COPIED",
    "PROGRESS_KEY",
    "CopiedTable",
    "CopyReport",
    "copy_database",
    "shown",
]


@dataclass(frozen=True, slots=True)
class CopiedTable:
    """A table ``vivy db copy`` copies, and how."""

    name: str
    #: The columns batches are ordered and resumed by (the primary key, or a unique rowid).
    key: tuple[str, ...]
    #: float32 vectors: a blob on SQLite, a pgvector ``vector`` on PostgreSQL.
    vectors: tuple[str, ...] = ()
    #: References to rows of the same table, written once every row of it is copied.
    deferred: tuple[str, ...] = ()


#: Every table a copy moves, parents before children. Runtime-only state (shard leases) and
#: what an engine derives are left out: see :data:`NOT_COPIED`.
COPIED_TABLES: tuple[CopiedTable, ...] = (
    CopiedTable("meta", ("key",)),
    CopiedTable("users", ("id",)),
    CopiedTable("guild_members", ("guild_id", "user_id")),
    CopiedTable("member_names", ("guild_id", "name", "user_id")),
    CopiedTable("channel_watermarks", ("channel_id",)),
    CopiedTable("channel_buffers", ("id",)),
    CopiedTable("buffer_messages", ("message_id",)),
    CopiedTable("interaction_notes", ("id",)),
    CopiedTable("note_participants", ("position",)),
    CopiedTable("note_lines", ("message_id",)),
    CopiedTable("vec_notes", ("note_id",), vectors=("embedding",)),
    CopiedTable("evidence_windows", ("id",), vectors=("embedding",)),
    CopiedTable("vector_generations", ("guild_id",)),
    CopiedTable("user_profiles", ("guild_id", "user_id")),
    CopiedTable("profile_facts", ("id",), deferred=("superseded_by",)),
    CopiedTable("profile_updates", ("id",)),
    CopiedTable("server_lore", ("id",)),
    CopiedTable("memory_job_log", ("guild_id", "job_date", "pass")),
    CopiedTable("scheduler_runs", ("job_date",)),
)

#: Tables of either schema that are not copied: the schema version (each engine's migrations
#: write their own), a ``vivy reembed`` in progress (finish it before copying), shard leases
#: (runtime state of the processes running on a database), SQLite's own bookkeeping, and the
#: FTS5 keyword indexes, which SQLite's triggers fill as rows arrive (their shadow tables
#: are named after them: ``notes_fts_data``, ...).
NOT_COPIED: frozenset[str] = frozenset(
    {
        VERSION_TABLE,
        REEMBED_STAGING,
        "shard_leases",
        "shard_epochs",
        "sqlite_sequence",
        "sqlite_stat1",
        "notes_fts",
        "evidence_fts",
    }
)

#: The ``meta`` key a target keeps its copy's progress under until the copy is done.
PROGRESS_KEY = "copy_progress"

#: The PostgreSQL column that keeps SQLite's rowid of the same table.
_ROWID_COLUMNS: dict[str, str] = {"note_participants": "position"}

#: Columns only SQLite stores, derived from other columns as a row is written.
_SQLITE_DERIVED: dict[str, frozenset[str]] = {"vec_notes": frozenset({"embedding_bits"})}

#: Rows a batch moves unless told otherwise.
BATCH_ROWS = 500

#: A database: a SQLite file, or a PostgreSQL connection string (a ``postgresql://`` URL).
Database = Path | str


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What a finished copy holds: each table's rows on both sides, in copy order."""

    source: str
    target: str
    #: ``(table, rows in the source, rows in the target)``.
    counts: tuple[tuple[str, int, int], ...]
    #: Whether the copy continued one that had been interrupted.
    resumed: bool

    @property
    def mismatches(self) -> list[str]:
        """The tables whose row counts differ."""
        return [name for name, ours, theirs in self.counts if ours != theirs]


def shown(database: Database) -> str:
    """``database`` as a message may name it (a PostgreSQL URL without its password)."""
    return str(database) if isinstance(database, Path) else shown_url(database)


def copy_database(
    source: Database,
    target: Database,
    *,
    replace: bool = False,
    batch_rows: int = BATCH_ROWS,
    after_batch: Callable[[str, int], None] | None = None,
) -> CopyReport:
    """Copy every row of :data:`COPIED_TABLES` from ``source`` into ``target``.

    ``target`` is created or migrated by its engine's migrations. It must hold no rows,
    unless it holds an unfinished copy of ``source`` (which then continues) or ``replace``
    is given (its rows are deleted first). ``after_batch(table, rows)`` is called after each
    committed batch of ``batch_rows`` rows at most. Raises :class:`ConfigError` (nothing
    written) for a target that is the source or holds other rows, :class:`StorageError`
    when a database fails or is not a whole Vivy database of this version.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
    if _identity(source) == _identity(target) or _same_file(source, target):
        raise ConfigError(f"the target {shown(target)} is the source itself")
    with _open(source, read_only=True) as src, _open(target, read_only=False) as dst:
        _require_source(src)
        origin = _identity(source)
        resumed = _claim_target(dst, origin, replace=replace)
        dst.migrate()
        dimension = src.vector_dimension()
        if dimension is not None:
            dst.fit_vectors(dimension)
        if resumed:
            progress = _Progress.from_json(dst.meta(PROGRESS_KEY) or "{}")
        else:
            progress = _Progress(origin)
            dst.set_aside_indexes(progress)
        for table in COPIED_TABLES:
            columns = _columns(src, dst, table)
            _batches(src, dst, table, columns, progress, table.name, batch_rows, after_batch)
            if table.deferred:
                _copy_deferred(src, dst, table, progress, batch_rows, after_batch)
        high_waters = {table.name: src.high_water(table.name) for table in COPIED_TABLES}
        dst.finish(high_waters, progress.indexes)
        counts = tuple(
            (table.name, src.count(table.name), dst.count(table.name)) for table in COPIED_TABLES
        )
    return CopyReport(shown(source), shown(target), counts, resumed)


@dataclass(slots=True)
class _Progress:
    """What a target records of its unfinished copy: the source, the last key each step
    copied, and the definitions of the vector indexes set aside until the rows are in."""

    source: str
    keys: dict[str, list[Any]] = field(default_factory=dict)
    indexes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The ``meta`` value recording it."""
        return json.dumps({"source": self.source, "tables": self.keys, "indexes": self.indexes})

    @classmethod
    def from_json(cls, text: str) -> _Progress:
        """The progress a ``meta`` value records."""
        found = json.loads(text)
        keys = {str(step): list(key) for step, key in found.get("tables", {}).items()}
        return cls(str(found.get("source")), keys, [str(i) for i in found.get("indexes", [])])


def _copy_deferred(
    src: _Side,
    dst: _Side,
    table: CopiedTable,
    progress: _Progress,
    batch_rows: int,
    after_batch: Callable[[str, int], None] | None,
) -> None:
    """Write the table's self-references once all its rows are there, in batches of their
    own (recorded as ``TABLE.deferred``)."""
    columns = [*table.key, *table.deferred]
    name = f"{table.name}.deferred"
    _batches(src, dst, table, columns, progress, name, batch_rows, after_batch)


def _batches(
    src: _Side,
    dst: _Side,
    table: CopiedTable,
    columns: list[str],
    progress: _Progress,
    step: str,
    batch_rows: int,
    after_batch: Callable[[str, int], None] | None,
) -> None:
    """Read ``columns`` of the table after the key ``progress`` records for ``step``, and
    write each batch to the target (rows, or with only the key and the deferred columns,
    updates) in one transaction with the progress."""
    after = progress.keys.get(step)
    positions = [columns.index(name) for name in table.key]
    while True:
        rows = src.read(table, columns, after, batch_rows)
        if not rows:
            return
        after = [rows[-1][i] for i in positions]
        progress.keys[step] = after
        recorded = progress.to_json()
        if step == table.name:
            dst.write(table, columns, rows, recorded)
        else:
            dst.update(table, rows, recorded)
        if after_batch is not None:
            after_batch(table.name, len(rows))


def _columns(src: _Side, dst: _Side, table: CopiedTable) -> list[str]:
    """The table's copied columns, in the source's order; both schemas must have them."""
    ours, theirs = src.columns(table.name), dst.columns(table.name)
    if ours is None:
        raise StorageError(f"the source has no table {table.name}")
    if theirs is None:
        raise StorageError(f"the target has no table {table.name}")
    if set(ours) != set(theirs):
        only = sorted(set(ours) ^ set(theirs))
        raise StorageError(
            f"the schemas differ: table {table.name} column {', '.join(only)} is on one side"
            " only; both sides must run the same Vivy"
        )
    return ours


def _require_source(src: _Side) -> None:
    """Refuse a source that is not a whole Vivy database of this version."""
    version = src.schema_version()
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version, SCHEMA_VERSION)
    if version < SCHEMA_VERSION:
        raise StorageError(
            f"the source {src.shown} has schema version {version}, not this Vivy's"
            f" {SCHEMA_VERSION}"
            + (
                " (not a Vivy database)"
                if version == 0
                else "; start Vivy on it once to migrate it"
            )
        )
    if src.meta(PROGRESS_KEY) is not None:
        raise StorageError(
            f"the source {src.shown} holds an unfinished `vivy db copy`; finish that copy first"
        )
    if src.has_table(REEMBED_STAGING):
        raise StorageError(
            f"the source {src.shown} holds an unfinished `vivy reembed`; run it again to finish"
            " it first"
        )


def _claim_target(dst: _Side, origin: str, *, replace: bool) -> bool:
    """Check the target before anything is written to it; empty it when ``replace``.

    Returns whether it holds an unfinished copy of ``origin`` to continue.
    """
    version = dst.schema_version()
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version, SCHEMA_VERSION)
    rows = sum(dst.count(table.name) for table in COPIED_TABLES if dst.has_table(table.name))
    if not rows:
        return False
    if replace:
        dst.migrate()
        dst.clear([table.name for table in reversed(COPIED_TABLES)])
        return False
    progress = dst.meta(PROGRESS_KEY) if dst.has_table("meta") else None
    if progress is not None and json.loads(progress).get("source") == origin:
        return True
    held = "an unfinished copy of another database" if progress is not None else f"{rows} rows"
    raise ConfigError(
        f"the target {dst.shown} is not empty ({held}); pass --replace to empty it first"
    )


def _identity(database: Database) -> str:
    """What names a database across runs: a file's absolute path, or a connection string
    without its password."""
    if isinstance(database, Path):
        return f"sqlite:{database.resolve()}"
    try:
        info = conninfo_to_dict(database)
    except psycopg.Error:  # never connected to, so never recorded
        return f"postgresql:{database}"
    info.pop("password", None)
    return "postgresql:" + make_conninfo(**{key: str(value) for key, value in info.items()})


def _same_file(source: Database, target: Database) -> bool:
    """Whether both name one existing file (through a link, say)."""
    if not (isinstance(source, Path) and isinstance(target, Path)):
        return False
    return source.exists() and target.exists() and source.samefile(target)


# --- the two engines ------------------------------------------------------------------------


class _Side(Protocol):
    """One database of a copy, read or written in the copy's neutral row form: Python values
    of the logical columns, vectors as float32 blobs (or None)."""

    shown: str

    def close(self) -> None: ...
    def schema_version(self) -> int: ...
    def has_table(self, name: str) -> bool: ...
    def columns(self, name: str) -> list[str] | None: ...
    def count(self, name: str) -> int: ...
    def meta(self, key: str) -> str | None: ...
    def vector_dimension(self) -> int | None: ...
    def high_water(self, name: str) -> int | None: ...
    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]: ...
    def migrate(self) -> None: ...
    def clear(self, names: Sequence[str]) -> None: ...
    def fit_vectors(self, dimension: int) -> None: ...
    def set_aside_indexes(self, progress: _Progress) -> None: ...
    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None: ...
    def update(
        self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None: ...
    def finish(self, high_waters: dict[str, int | None], indexes: Sequence[str]) -> None: ...


class _Opened:
    """A context manager closing a side."""

    def __init__(self, side: _Side) -> None:
        self._side = side

    def __enter__(self) -> _Side:
        return self._side

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._side.close()


def _open(database: Database, *, read_only: bool) -> _Opened:
    """Open ``database`` as a source (``read_only``) or as a target."""
    if isinstance(database, Path):
        return _Opened(_SqliteSide.open(database, read_only=read_only))
    return _Opened(_PgSide.open(database, read_only=read_only))


def _keyset(keys: Sequence[str], marks: Sequence[str], after: Sequence[Any] | None) -> str:
    """``WHERE (keys) > (after)`` when resuming after a key, else nothing."""
    if after is None:
        return ""
    return f" WHERE ({', '.join(keys)}) > ({', '.join(marks)})"


def _quoted(name: str) -> str:
    """An identifier quoted for SQL (both engines quote with double quotes)."""
    return '"' + name.replace('"', '""') + '"'


class _SqliteSide:
    """A SQLite file: read through a read-only connection, or written as a target."""

    def __init__(self, path: Path, conn: Connection | None) -> None:
        self.shown = str(path)
        self._path = path
        self._conn = conn
        self._writable = False

    @classmethod
    def open(cls, path: Path, *, read_only: bool) -> _SqliteSide:
        """A source must exist; a target is looked at read-only (if it exists) until the
        first write, which creates it if needed."""
        if read_only or path.exists():
            return cls(path, checks.open_readonly(path))
        if not path.parent.is_dir():
            raise StorageError(f"no such directory: {path.parent}")
        return cls(path, None)

    @property
    def _db(self) -> Connection:
        """The connection to read with."""
        if self._conn is None:
            return self._writer()
        return self._conn

    def _writer(self) -> Connection:
        """The connection to write with, opened (and the file created) on first use."""
        if not self._writable:
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            self._conn = sqlite_connect(self._path)
            self._writable = True
        assert self._conn is not None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def schema_version(self) -> int:
        return 0 if self._conn is None else checks.schema_version(self._conn)

    def has_table(self, name: str) -> bool:
        return self.columns(name) is not None

    def columns(self, name: str) -> list[str] | None:
        if self._conn is None:
            return None
        found = [str(r[1]) for r in self._conn.execute(f"PRAGMA table_info({_quoted(name)})")]
        if not found:
            return None
        derived = _SQLITE_DERIVED.get(name, frozenset())
        rowid = [_ROWID_COLUMNS[name]] if name in _ROWID_COLUMNS else []
        return rowid + [column for column in found if column not in derived]

    def count(self, name: str) -> int:
        if self._conn is None:
            return 0
        return int(self._conn.execute(f"SELECT COUNT(*) FROM {_quoted(name)}").fetchone()[0])

    def meta(self, key: str) -> str | None:
        if self._conn is None:
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def vector_dimension(self) -> int | None:
        return None if self._conn is None else checks.vec_notes_dimension(self._conn)

    def high_water(self, name: str) -> int | None:
        if self._conn is None:
            return None
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (name,))
        found = row.fetchone()
        return None if found is None else int(found[0])

    def _column(self, table: str, column: str) -> str:
        """The SQL naming ``column``: SQLite's rowid where PostgreSQL has a column for it."""
        return "rowid" if _ROWID_COLUMNS.get(table) == column else _quoted(column)

    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        keys = [self._column(table.name, key) for key in table.key]
        query = (
            f"SELECT {', '.join(self._column(table.name, c) for c in columns)}"
            f" FROM {_quoted(table.name)}"
            + _keyset(keys, ["?"] * len(keys), after)
            + f" ORDER BY {', '.join(keys)} LIMIT ?"
        )
        try:
            rows = self._db.execute(query, [*(after or ()), limit]).fetchall()
        except sqlean.Error as exc:
            raise StorageError(f"reading {table.name} from {self.shown}: {exc}") from exc
        return [tuple(row) for row in rows]

    def migrate(self) -> None:
        sqlite_migrate(self._writer())

    def _transaction(self, work: Callable[[Connection], None]) -> None:
        conn = self._writer()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                work(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlean.Error as exc:
            raise StorageError(f"writing {self.shown}: {exc}") from exc

    def clear(self, names: Sequence[str]) -> None:
        def work(conn: Connection) -> None:
            for name in names:
                conn.execute(f"DELETE FROM {_quoted(name)}")
            conn.execute("DELETE FROM sqlite_sequence")
            conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")

        self._transaction(work)

    def fit_vectors(self, dimension: int) -> None:
        """Nothing to do: SQLite's vectors are blobs of any length."""

    def set_aside_indexes(self, progress: _Progress) -> None:
        """Nothing to do: SQLite's vector search has no index in the database."""

    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None:
        names = [self._column(table.name, c) for c in columns]
        marks = ["?"] * len(columns)
        deferred = {columns.index(c) for c in table.deferred}
        bits = table.name in _SQLITE_DERIVED
        if bits:
            names.append("embedding_bits")
            marks.append("vec_quantize_binary(vec_slice(?, 0, ?))")
            vector = columns.index("embedding")
        values = []
        for row in rows:
            value = [None if i in deferred else v for i, v in enumerate(row)]
            if bits:
                blob = row[vector]
                value += [blob, binary_dimensions(len(blob) // 4)]
            values.append(value)
        insert = (
            f"INSERT INTO {_quoted(table.name)} ({', '.join(names)}) VALUES ({', '.join(marks)})"
        )

        def work(conn: Connection) -> None:
            conn.executemany(insert, values)
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def update(self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str) -> None:
        keys = " AND ".join(f"{self._column(table.name, k)} = ?" for k in table.key)
        sets = ", ".join(f"{_quoted(c)} = ?" for c in table.deferred)
        width = len(table.key)
        values = [(*row[width:], *row[:width]) for row in rows]
        update = f"UPDATE {_quoted(table.name)} SET {sets} WHERE {keys}"

        def work(conn: Connection) -> None:
            conn.executemany(update, values)
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def finish(self, high_waters: dict[str, int | None], indexes: Sequence[str]) -> None:
        def work(conn: Connection) -> None:
            for name, seq in high_waters.items():
                if seq is None:
                    continue
                conn.execute(
                    "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (seq, name)
                )
                conn.execute(
                    "INSERT INTO sqlite_sequence (name, seq) SELECT ?, ?"
                    " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)"
                    " AND EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?"
                    " AND sql LIKE '%AUTOINCREMENT%')",
                    (name, seq, name, name),
                )
            conn.execute("DELETE FROM meta WHERE key = ?", (PROGRESS_KEY,))

        self._transaction(work)


def _set_sqlite_progress(conn: Connection, progress: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (PROGRESS_KEY, progress),
    )


class _PgSide:
    """A PostgreSQL database: read in read-only transactions, or written as a target."""

    def __init__(self, uri: str, conn: PgConnection) -> None:
        self.shown = shown_url(uri)
        self._conn = conn
        self._vectors_sent = False

    @classmethod
    def open(cls, uri: str, *, read_only: bool) -> _PgSide:
        try:
            if read_only:
                given = str(conninfo_to_dict(uri).get("options") or "")
                options = f"{given} -c default_transaction_read_only=on".strip()
                conn = psycopg.connect(make_conninfo(uri, options=options), autocommit=True)
            else:
                conn = psycopg.connect(uri, autocommit=True)
        except psycopg.Error as exc:
            raise connection_error(uri, exc) from exc
        return cls(uri, conn)

    def close(self) -> None:
        self._conn.close()

    def _fail(self, doing: str, exc: psycopg.Error) -> StorageError:
        first = next((line for line in str(exc).splitlines() if line.strip()), "failed")
        return StorageError(f"{doing} {self.shown}: {first}")

    def _fetch(self, query: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(query, params).fetchall()
        except psycopg.Error as exc:
            raise self._fail("reading", exc) from exc

    def schema_version(self) -> int:
        return pg_schema_version(self._conn)

    def has_table(self, name: str) -> bool:
        return bool(self._fetch("SELECT to_regclass(%s) IS NOT NULL", (name,))[0][0])

    def columns(self, name: str) -> list[str] | None:
        if not self.has_table(name):
            return None
        rows = self._fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0"
            " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            (name,),
        )
        return [str(r[0]) for r in rows]

    def count(self, name: str) -> int:
        query = sql.SQL("SELECT COUNT(*) FROM {}").format(sql.Identifier(name))
        return int(self._fetch(query)[0][0])

    def meta(self, key: str) -> str | None:
        rows = self._fetch("SELECT value FROM meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def vector_dimension(self) -> int | None:
        if not self._fetch("SELECT EXISTS (SELECT 1 FROM vec_notes)")[0][0]:
            return None
        return note_vector_dimension(self._conn)

    def _sequence(self, name: str) -> tuple[str, str] | None:
        """The table's identity column and its sequence, if it has one."""
        rows = self._fetch(
            "SELECT attname, pg_get_serial_sequence(%s, attname) FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attidentity <> ''",
            (name, name),
        )
        return None if not rows else (str(rows[0][0]), str(rows[0][1]))

    def high_water(self, name: str) -> int | None:
        found = self._sequence(name)
        if found is None:
            return None
        row = self._fetch(
            sql.SQL("SELECT last_value, is_called FROM {}").format(sql.SQL(found[1]))
        )[0]
        return int(row[0]) if row[1] else None

    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        shown_columns = [
            f"{_quoted(c)}::real[]" if c in table.vectors else _quoted(c) for c in columns
        ]
        keys = [_quoted(key) for key in table.key]
        query = (
            f"SELECT {', '.join(shown_columns)} FROM {_quoted(table.name)}"
            + _keyset(keys, ["%s"] * len(keys), after)
            + f" ORDER BY {', '.join(keys)} LIMIT %s"
        )
        vectors = [i for i, c in enumerate(columns) if c in table.vectors]
        try:
            with self._conn.cursor(binary=True) as cursor:
                rows = cursor.execute(query.encode(), [*(after or ()), limit]).fetchall()
        except psycopg.Error as exc:
            raise self._fail(f"reading {table.name} from", exc) from exc
        if not vectors:
            return rows
        return [_blobs(row, vectors) for row in rows]

    def _transaction(self, doing: str, work: Callable[[PgConnection], None]) -> None:
        try:
            with self._conn.transaction():
                work(self._conn)
        except psycopg.Error as exc:
            raise self._fail(doing, exc) from exc

    def migrate(self) -> None:
        pg_migrate(self._conn)

    def clear(self, names: Sequence[str]) -> None:
        tables = sql.SQL(", ").join(sql.Identifier(name) for name in names)

        def work(conn: PgConnection) -> None:
            conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY").format(tables))
            conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")

        self._transaction("emptying", work)

    def fit_vectors(self, dimension: int) -> None:
        """Create ``vec_notes`` for ``dimension`` while it is empty and made for another."""
        if note_vector_dimension(self._conn) == dimension or self.count("vec_notes"):
            return

        def work(conn: PgConnection) -> None:
            conn.execute("DROP TABLE vec_notes")
            conn.execute(pg_vec_notes_ddl(dimension).encode())

        self._transaction("creating vec_notes in", work)

    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None:
        names = ", ".join(_quoted(c) for c in columns)
        marks = ", ".join("%b" if c in table.vectors else "%s" for c in columns)
        vectors = {i for i, c in enumerate(columns) if c in table.vectors}
        deferred = {columns.index(c) for c in table.deferred}
        if vectors:
            self._send_vectors()
        values = [
            [
                None if i in deferred or v is None else _Vector(v) if i in vectors else v
                for i, v in enumerate(row)
            ]
            for row in rows
        ]
        insert = (
            f"INSERT INTO {_quoted(table.name)} ({names}) OVERRIDING SYSTEM VALUE VALUES ({marks})"
        )

        def work(conn: PgConnection) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(insert.encode(), values)
            _set_pg_progress(conn, progress)

        self._transaction(f"writing {table.name} to", work)

    def _send_vectors(self) -> None:
        """Send :class:`_Vector` values in pgvector's binary form (once the extension is
        there): no text to format and parse (18,000 evidence windows of 768 dimensions took
        51 s through ``::vector`` text, 4 s so)."""
        if self._vectors_sent:
            return
        info = TypeInfo.fetch(self._conn, "vector")
        if info is None:
            raise StorageError(f"the target {self.shown} has no vector type")
        dumper = type("_VectorDumper", (_VectorBinaryDumper,), {"oid": info.oid})
        self._conn.adapters.register_dumper(_Vector, dumper)
        self._vectors_sent = True

    def update(self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str) -> None:
        keys = " AND ".join(f"{_quoted(k)} = %s" for k in table.key)
        sets = ", ".join(f"{_quoted(c)} = %s" for c in table.deferred)
        width = len(table.key)
        values = [(*row[width:], *row[:width]) for row in rows]
        update = f"UPDATE {_quoted(table.name)} SET {sets} WHERE {keys}"

        def work(conn: PgConnection) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(update.encode(), values)
            _set_pg_progress(conn, progress)

        self._transaction(f"writing {table.name} to", work)

    def set_aside_indexes(self, progress: _Progress) -> None:
        """Drop the copied tables' vector indexes (HNSW, IVFFlat) and record them in
        ``progress``, in one transaction: pgvector builds an index over loaded rows several
        times faster than it grows one row by row. :meth:`finish` builds them again."""
        rows = self._fetch(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i"
            " JOIN pg_class c ON c.oid = to_regclass(quote_ident(i.schemaname) || '.'"
            " || quote_ident(i.indexname)) JOIN pg_am a ON a.oid = c.relam"
            " WHERE i.schemaname = current_schema() AND a.amname IN ('hnsw', 'ivfflat')"
            " AND i.tablename = ANY(%s) ORDER BY i.indexname",
            ([table.name for table in COPIED_TABLES],),
        )
        if not rows:
            return
        progress.indexes = [str(r[1]) for r in rows]

        def work(conn: PgConnection) -> None:
            for name, _ in rows:
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
            _set_pg_progress(conn, progress.to_json())

        self._transaction("setting the vector indexes aside in", work)

    def finish(self, high_waters: dict[str, int | None], indexes: Sequence[str]) -> None:
        def work(conn: PgConnection) -> None:
            for definition in indexes:
                conn.execute(definition.encode())
            for name, seq in high_waters.items():
                found = self._sequence(name)
                if found is None:
                    continue
                column, sequence = found
                conn.execute(
                    sql.SQL(
                        "SELECT setval({seq}, m) FROM (SELECT GREATEST(MAX({col}), %s) AS m"
                        " FROM {table}) s WHERE m IS NOT NULL"
                    ).format(
                        seq=sql.Literal(sequence),
                        col=sql.Identifier(column),
                        table=sql.Identifier(name),
                    ),
                    (seq,),
                )
            conn.execute("DELETE FROM meta WHERE key = %s", (PROGRESS_KEY,))

        self._transaction("finishing the copy in", work)


class _Vector(bytes):
    """A float32 blob bound as a pgvector ``vector``."""


class _VectorBinaryDumper(Dumper):
    """pgvector's binary form of a float32 blob: the dimension and a reserved word (two
    unsigned 16-bit integers), then the floats, all big-endian (``vector_recv``)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        """``obj`` (a :class:`_Vector`) as pgvector reads it."""
        floats = array("f", bytes(obj))
        if sys.byteorder == "little":
            floats.byteswap()
        return struct.pack(">HH", len(floats), 0) + floats.tobytes()


def _set_pg_progress(conn: PgConnection, progress: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (PROGRESS_KEY, progress),
    )


def _blobs(row: tuple[Any, ...], vectors: Sequence[int]) -> tuple[Any, ...]:
    """``row`` with its ``real[]`` vectors as float32 blobs."""
    values = list(row)
    for i in vectors:
        if values[i] is not None:
            values[i] = array("f", values[i]).tobytes()
    return tuple(values)
