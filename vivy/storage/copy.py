"""``vivy db copy``: move a Vivy database from one engine to the other, row for row.

A SQLite file and a PostgreSQL database hold the same logical schema at the same version
(:mod:`vivy.storage.sqlite.schema`, :mod:`vivy.storage.postgres.schema`), so a copy moves rows, not
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
  pgvector's value is read back as ``real[]`` in binary, so a round trip keeps every bit.
* Rows are read from the source in keyset batches by key and written to the target one
  transaction per batch, together with the progress (the ``meta`` row :data:`PROGRESS_KEY`:
  the source and each table's last copied key). A copy interrupted anywhere continues from
  there when run again with the same source, and ends with the same rows as one that was not
  interrupted. The record stays after the last row until the command's checks of both sides
  passed (:func:`conclude_copy`): a copy interrupted during its checks, run again, copies
  nothing more and checks again. Self-references (``profile_facts.superseded_by``) are
  written after every row of their table, since a fact points at a newer one, in batches
  recorded the same way.
* Ids are kept, and each id sequence of the target is set to the source's highest id ever
  issued (SQLite's ``sqlite_sequence``, PostgreSQL's sequences), so no id is reused: a deleted
  buffer's id stays taken by its note's ``buffer_id``.
* The source is only read (SQLite through :func:`~vivy.storage.sqlite.checks.open_readonly`,
  PostgreSQL in read-only transactions). A target holding rows is refused, unless it holds an
  unfinished copy of the same source (then the copy resumes) or ``replace`` empties it first.

The lists of tables, the progress record and what a side of a copy does are in
:mod:`vivy.storage.copy_plan`; each engine's reads and writes in its package's ``copy_side``
module; this module runs the copy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from vivy.errors import ConfigError, SchemaTooNew, StorageError
from vivy.storage.copy_plan import (
    BATCH_ROWS,
    COPIED_TABLES,
    NOT_COPIED,
    PROGRESS_KEY,
    CopiedTable,
    CopySide,
    Database,
    Progress,
    shown,
)
from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.postgres.copy_side import PgCopySide
from vivy.storage.postgres.copy_side import identity as pg_identity
from vivy.storage.sqlite.copy_side import SqliteCopySide
from vivy.storage.sqlite.schema import SCHEMA_VERSION

__all__ = [
    "BATCH_ROWS",
    "COPIED_TABLES",
    "NOT_COPIED",
    "PROGRESS_KEY",
    "CopiedTable",
    "CopyReport",
    "conclude_copy",
    "copy_database",
    "shown",
]


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


def copy_database(
    source: Database,
    target: Database,
    *,
    replace: bool = False,
    batch_rows: int = BATCH_ROWS,
    after_batch: Callable[[str, int], None] | None = None,
    conclude: bool = True,
) -> CopyReport:
    """Copy every row of :data:`COPIED_TABLES` from ``source`` into ``target``.

    ``target`` is created or migrated by its engine's migrations. It must hold no rows,
    unless it holds an unfinished copy of ``source`` (which then continues) or ``replace``
    is given (its rows are deleted first). ``after_batch(table, rows)`` is called after each
    committed batch of ``batch_rows`` rows at most. Without ``conclude`` the target keeps the
    copy's progress record, so that the same copy run again continues, until
    :func:`conclude_copy` (``vivy db copy`` concludes once both sides passed its checks).
    Raises :class:`ConfigError` (nothing written) for a target that is the source or holds
    other rows, :class:`StorageError` when a database fails or is not a whole Vivy database
    of this version.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
    if _identity(source) == _identity(target) or _same_file(source, target):
        raise ConfigError(f"the target {shown(target)} is the source itself")
    with open_side(source, read_only=True) as src, open_side(target, read_only=False) as dst:
        _require_source(src)
        origin = _identity(source)
        resumed = _claim_target(dst, origin, replace=replace)
        dst.migrate()
        dimension = src.vector_dimension()
        if dimension is not None:
            dst.fit_vectors(dimension)
        if resumed:
            progress = Progress.from_json(dst.meta(PROGRESS_KEY) or "{}")
        else:
            progress = Progress(origin)
        for table in COPIED_TABLES:
            columns = _columns(src, dst, table)
            _batches(src, dst, table, columns, progress, table.name, batch_rows, after_batch)
            if table.deferred:
                _copy_deferred(src, dst, table, progress, batch_rows, after_batch)
        high_waters = {table.name: src.high_water(table.name) for table in COPIED_TABLES}
        dst.finish(high_waters, progress.to_json())
        counts = tuple(
            (table.name, src.count(table.name), _copied_rows(dst, table.name))
            for table in COPIED_TABLES
        )
        if conclude:
            dst.forget_progress()
    return CopyReport(shown(source), shown(target), counts, resumed)


def open_side(database: Database, *, read_only: bool) -> closing[CopySide]:
    """Open ``database`` as a source (``read_only``) or as a target, closed with the block."""
    if isinstance(database, Path):
        return closing(SqliteCopySide.open(database, read_only=read_only))
    return closing(PgCopySide.open(database, read_only=read_only))


def _copied_rows(dst: CopySide, name: str) -> int:
    """The rows of table ``name`` in the target, its copy's progress record left out."""
    rows = dst.count(name)
    return rows - 1 if name == "meta" and dst.meta(PROGRESS_KEY) is not None else rows


def conclude_copy(target: Database) -> None:
    """Forget ``target``'s copy progress once the finished copy passed its checks; until
    then the same copy, run again, continues (and checks again) instead of being refused."""
    with open_side(target, read_only=False) as dst:
        dst.forget_progress()


def _copy_deferred(
    src: CopySide,
    dst: CopySide,
    table: CopiedTable,
    progress: Progress,
    batch_rows: int,
    after_batch: Callable[[str, int], None] | None,
) -> None:
    """Write the table's self-references once all its rows are there, in batches of their
    own (recorded as ``TABLE.deferred``)."""
    columns = [*table.key, *table.deferred]
    name = f"{table.name}.deferred"
    _batches(src, dst, table, columns, progress, name, batch_rows, after_batch)


def _batches(
    src: CopySide,
    dst: CopySide,
    table: CopiedTable,
    columns: list[str],
    progress: Progress,
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


def _columns(src: CopySide, dst: CopySide, table: CopiedTable) -> list[str]:
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


def _require_source(src: CopySide) -> None:
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


def _claim_target(dst: CopySide, origin: str, *, replace: bool) -> bool:
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
    return pg_identity(database)


def _same_file(source: Database, target: Database) -> bool:
    """Whether both name one existing file (through a link, say)."""
    if not (isinstance(source, Path) and isinstance(target, Path)):
        return False
    return source.exists() and target.exists() and source.samefile(target)
