"""What ``vivy db copy`` moves: the tables in copy order with their keys, what is left out,
how a target records an unfinished copy, and what each engine's side of a copy does
(:class:`CopySide`; :mod:`vivy.storage.sqlite.copy_side`, :mod:`vivy.storage.postgres.copy_side`).
See :mod:`vivy.storage.copy`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.postgres.readonly import shown_url
from vivy.storage.postgres.schema import POSTINGS_TABLES, VERSION_TABLE

__all__ = [
    "BATCH_ROWS",
    "COPIED_TABLES",
    "NOT_COPIED",
    "PROGRESS_KEY",
    "ROWID_COLUMNS",
    "SQLITE_DERIVED",
    "CopiedTable",
    "CopySide",
    "Database",
    "Progress",
    "keyset",
    "quoted",
    "shown",
    "update_by_key",
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
    CopiedTable("guild_names", ("guild_id",)),
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
    CopiedTable("memory_corrections", ("id",)),
)


#: Tables of either schema that are not copied: the schema version (each engine's migrations
#: write their own), a ``vivy reembed`` in progress (finish it before copying), shard leases
#: (runtime state of the processes running on a database), SQLite's own bookkeeping, and the
#: keyword indexes, which each engine's triggers fill as rows arrive: SQLite's FTS5 tables
#: (their shadow tables are named after them: ``notes_fts_data``, ...) and PostgreSQL's
#: postings.
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
        *POSTINGS_TABLES,
    }
)


#: The ``meta`` key a target keeps its copy's progress under until the copy is done.
PROGRESS_KEY = "copy_progress"


#: The PostgreSQL column that keeps SQLite's rowid of the same table.
ROWID_COLUMNS: dict[str, str] = {"note_participants": "position"}


#: Columns only SQLite stores, derived from other columns as a row is written.
SQLITE_DERIVED: dict[str, frozenset[str]] = {"vec_notes": frozenset({"embedding_bits"})}


#: Rows a batch moves unless told otherwise.
BATCH_ROWS = 500


#: A database: a SQLite file, or a PostgreSQL connection string (a ``postgresql://`` URL).
Database = Path | str


def shown(database: Database) -> str:
    """``database`` as a message may name it (a PostgreSQL URL without its password)."""
    return str(database) if isinstance(database, Path) else shown_url(database)


@dataclass(slots=True)
class Progress:
    """What a target records of its unfinished copy: the source and the last key each step
    copied."""

    source: str
    keys: dict[str, list[Any]] = field(default_factory=dict)

    def to_json(self) -> str:
        """The ``meta`` value recording it."""
        return json.dumps({"source": self.source, "tables": self.keys})

    @classmethod
    def from_json(cls, text: str) -> Progress:
        """The progress a ``meta`` value records."""
        found = json.loads(text)
        keys = {str(step): list(key) for step, key in found.get("tables", {}).items()}
        return cls(str(found.get("source")), keys)


class CopySide(Protocol):
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
    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None: ...
    def update(
        self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None: ...
    def finish(self, high_waters: dict[str, int | None], progress: str) -> None: ...
    def forget_progress(self) -> None: ...


def keyset(keys: Sequence[str], marks: Sequence[str], after: Sequence[Any] | None) -> str:
    """``WHERE (keys) > (after)`` when resuming after a key, else nothing."""
    if after is None:
        return ""
    return f" WHERE ({', '.join(keys)}) > ({', '.join(marks)})"


def update_by_key(
    table: CopiedTable,
    rows: Sequence[tuple[Any, ...]],
    key_column: Callable[[str], str],
    *,
    mark: str,
) -> tuple[str, list[tuple[Any, ...]]]:
    """The UPDATE that sets ``table``'s deferred columns by its key (each key named by
    ``key_column``, parameters written ``mark``), and its parameters from ``rows`` (each the
    key's values, then the deferred columns')."""
    keys = " AND ".join(f"{key_column(k)} = {mark}" for k in table.key)
    sets = ", ".join(f"{quoted(c)} = {mark}" for c in table.deferred)
    width = len(table.key)
    values = [(*row[width:], *row[:width]) for row in rows]
    return f"UPDATE {quoted(table.name)} SET {sets} WHERE {keys}", values


def quoted(name: str) -> str:
    """An identifier quoted for SQL (both engines quote with double quotes)."""
    return '"' + name.replace('"', '""') + '"'
