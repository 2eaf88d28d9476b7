"""Storage written once for both engines: the SQL dialects and the transaction handle.

The storage areas (:mod:`vivy.storage.buffers`, :mod:`~vivy.storage.notes`, …) write their
SQL once, in SQLite's spelling: ``?`` placeholders (or ``:name`` ones with a mapping), and
run it through a :class:`Tx`, the one transaction of one engine's owner that a call runs in.
What differs between the engines is named here, in a small :class:`Dialect`, the way aiosql's
adapters rewrite only what a driver needs:

* placeholders: PostgreSQL's psycopg takes ``%s`` / ``%(name)s`` (and ``%%`` for ``%``);
  :meth:`Dialect.sql` rewrites a statement once and remembers it;
* a list parameter: ``IN (?, ?, …)`` on SQLite, ``= ANY(?)`` with one array on PostgreSQL
  (:meth:`Dialect.any`);
* the larger of two values (SQLite's two-argument ``MAX``, PostgreSQL's ``GREATEST``), a read
  that locks the row it is about to change (``FOR UPDATE``), the column that keeps the order
  a note's participants were listed in, and whether binding a NULL costs more than a
  statement without the column (sqlean, on the ingest path);
* vectors: a float32 blob for sqlite-vec, pgvector's ``vector`` on PostgreSQL, and a note's
  vector row (sqlite-vec keeps its binary quantisation beside it), and a stored vector's
  length and floats;
* the keyword indexes' upkeep after notes or a member's words are deleted (FTS5 keeps deleted
  terms in its segments until they are merged; PostgreSQL's postings go with their rows),
  and telling in-memory copies of a guild's vectors that some were removed (SQLite's binary
  index; PostgreSQL's lives in the server).

On SQLite a :class:`Tx`'s ``execute`` is the connection's own method, so the written-once SQL
costs nothing there.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import psycopg

from vivy.memory.notes import NoteType
from vivy.shards import ALL_SHARDS, Shards
from vivy.storage.postgres.schema import note_vector_dimension, vec_notes_ddl
from vivy.storage.sqlite.schema import VEC_KINDS, binary_dimensions, serialize_vector

__all__ = [
    "POSTGRES",
    "REEMBED_STAGING",
    "SQLITE",
    "Cursor",
    "Dialect",
    "Params",
    "Tx",
    "in_scope",
    "postgres_tx",
    "sqlite_tx",
    "vector_text",
]

#: Work table of ``vivy reembed``: new vectors wait here until all notes have one.
REEMBED_STAGING = "reembed_staging"

#: A statement's parameters: positional for ``?``, by name for ``:name``.
Params = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    """What the areas use of a DB-API cursor (``sqlite3`` and psycopg alike)."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""

    def fetchone(self) -> Any:
        """The next row, or None."""

    def fetchall(self) -> list[Any]:
        """Every remaining row."""

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows."""


class Execute(Protocol):
    """Runs one statement with its parameters (a connection's ``execute``)."""

    def __call__(self, sql: str, params: Params = (), /) -> Cursor:
        """The statement's cursor."""


#: SQLite's placeholders and the characters psycopg reads specially, outside string literals
#: (a literal is matched first and kept), and PostgreSQL's ``::`` casts, kept as they are.
_TOKENS = re.compile(r"'(?:[^']|'')*'|::|\?|:([A-Za-z_]\w*)|%")


def _pyformat(match: re.Match[str]) -> str:
    token = match.group(0)
    if token == "?":
        return "%s"
    if token == "%":
        return "%%"
    if match.group(1) is not None:
        return f"%({match.group(1)})s"
    return token


@lru_cache(maxsize=2048)
def _to_pyformat(text: str) -> str:
    """``text`` with SQLite's placeholders in psycopg's form."""
    return _TOKENS.sub(_pyformat, text)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one engine's SQL spells differently; see the module docstring."""

    #: ``sqlite`` or ``postgresql``.
    name: str
    #: The scalar function of the larger of two values.
    greatest: str
    #: Appended to a ``SELECT`` of a row the transaction is about to change.
    for_update: str
    #: Whether binding a NULL costs more than a statement that leaves the column out.
    null_binding_costly: bool
    #: Whether a list is bound as one array parameter (else as one placeholder per item).
    arrays: bool
    #: Appended to an ``ORDER BY`` of text to order it bytewise (SQLite's default).
    bytewise: str
    #: A join the planner must take in the order written (SQLite's ``CROSS JOIN``).
    ordered_join: str
    #: The column of ``note_participants`` that keeps the order they were listed in.
    listed_order: str
    #: A vector parameter's placeholder, and the value bound to it for a vector's floats.
    vector: str
    encode_vector: Callable[[Sequence[float]], object]
    #: A stored vector's length, and its floats as JSON text (``{}``: the column).
    vector_dims: str
    vector_json: str
    #: Stores a note's vector: (tx, note id, guild id, note type, floats).
    insert_note_vector: Callable[[Tx, int, int, str, Sequence[float]], None]
    #: Statements that purge deleted evidence windows' and deleted notes' words from the
    #: keyword indexes.
    purge_evidence_index: tuple[str, ...]
    purge_note_index: tuple[str, ...]
    #: The column type of a vector in a work table.
    vector_type: str
    #: Replaces every note's vector by its staged one (``vivy reembed``); (tx, dimension) ->
    #: vectors written.
    refill_note_vectors: Callable[[Tx, int], int]
    #: Makes the (empty) note-vector table take vectors of this dimension.
    size_note_vectors: Callable[[Tx, int], None]
    #: Statements that make processes changing ``meta`` at once take their turns.
    lock_meta: tuple[str, ...]

    def sql(self, text: str) -> str:
        """``text`` as this engine's driver takes it."""
        return _to_pyformat(text) if self.arrays else text

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition that ``column`` is one of ``values``, and its parameters (to splice
        into the statement's own, in order)."""
        if self.arrays:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)


def _sqlite_note_vector(
    tx: Tx, note_id: int, guild_id: int, note_type: str, values: Sequence[float]
) -> None:
    """sqlite-vec's row of a note: its float32 vector and, for the KNN, its binary one."""
    vector = serialize_vector(values)
    tx.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " VALUES (?, ?, ?, ?, vec_quantize_binary(vec_slice(?, 0, ?)))",
        (note_id, guild_id, VEC_KINDS[note_type], vector, vector, binary_dimensions(len(values))),
    )


def _sqlite_refill(tx: Tx, dimension: int) -> int:
    """sqlite-vec's note rows from the staged vectors, with their binary quantisations."""
    tx.execute("DELETE FROM vec_notes")
    return tx.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " SELECT n.id, n.guild_id, CASE n.note_type WHEN 'topic_cluster' THEN ? ELSE ? END,"
        " s.embedding, vec_quantize_binary(vec_slice(s.embedding, 0, ?))"
        f" FROM interaction_notes n JOIN {REEMBED_STAGING} s ON s.note_id = n.id ORDER BY n.id",
        (
            VEC_KINDS[NoteType.TOPIC_CLUSTER],
            VEC_KINDS[NoteType.CONVERSATION],
            binary_dimensions(dimension),
        ),
    ).rowcount


def _pg_refill(tx: Tx, dimension: int) -> int:
    """pgvector's note rows from the staged vectors; the table is made again at the new
    dimension when it changed."""
    if note_vector_dimension(tx.conn) == dimension:
        tx.execute("DELETE FROM vec_notes")
    else:
        tx.execute("DROP TABLE IF EXISTS vec_notes")
        tx.conn.execute(vec_notes_ddl(dimension).encode())
    return tx.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding)"
        " SELECT n.id, n.guild_id, CASE n.note_type WHEN 'topic_cluster' THEN ? ELSE ? END,"
        " s.embedding"
        f" FROM interaction_notes n JOIN {REEMBED_STAGING} s ON s.note_id = n.id ORDER BY n.id",
        (VEC_KINDS[NoteType.TOPIC_CLUSTER], VEC_KINDS[NoteType.CONVERSATION]),
    ).rowcount


def _pg_size(tx: Tx, dimension: int) -> None:
    """pgvector's note-vector table made again at ``dimension`` when its column has another
    one (called while no note exists)."""
    if note_vector_dimension(tx.conn) != dimension:
        tx.execute("DROP TABLE IF EXISTS vec_notes")
        tx.conn.execute(vec_notes_ddl(dimension).encode())


def vector_text(values: Sequence[float]) -> str:
    """pgvector's text form of ``values`` (``[x,y,…]``), bound as text and cast."""
    return "[" + ",".join(repr(float(x)) for x in values) + "]"


def _pg_note_vector(
    tx: Tx, note_id: int, guild_id: int, note_type: str, values: Sequence[float]
) -> None:
    """pgvector's row of a note (the in-memory copies make its bits when they read it)."""
    tx.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding)"
        " VALUES (?, ?, ?, ?::vector)",
        (note_id, guild_id, VEC_KINDS[note_type], vector_text(values)),
    )


SQLITE = Dialect(
    name="sqlite",
    greatest="MAX",
    for_update="",
    null_binding_costly=True,
    arrays=False,
    bytewise="",
    ordered_join="CROSS JOIN",
    listed_order="rowid",
    vector="?",
    encode_vector=serialize_vector,
    vector_dims="length({}) / 4",
    vector_json="vec_to_json({})",
    insert_note_vector=_sqlite_note_vector,
    purge_evidence_index=("INSERT INTO evidence_fts (evidence_fts) VALUES ('optimize')",),
    purge_note_index=("INSERT INTO notes_fts (notes_fts) VALUES ('optimize')",),
    vector_type="BLOB",
    refill_note_vectors=_sqlite_refill,
    size_note_vectors=lambda tx, dimension: None,  # a BLOB column takes any length
    lock_meta=(),
)
POSTGRES = Dialect(
    name="postgresql",
    greatest="GREATEST",
    for_update=" FOR UPDATE",
    null_binding_costly=False,
    arrays=True,
    bytewise=' COLLATE "C"',
    ordered_join="JOIN",
    listed_order="position",
    vector="?::vector",
    encode_vector=vector_text,
    vector_dims="vector_dims({})",
    vector_json="{}::text",
    insert_note_vector=_pg_note_vector,
    purge_evidence_index=(),
    purge_note_index=(),
    vector_type="vector",
    refill_note_vectors=_pg_refill,
    size_note_vectors=_pg_size,
    lock_meta=("LOCK TABLE meta IN SHARE ROW EXCLUSIVE MODE",),
)


class Tx:
    """One call's transaction on one engine, as the storage areas use it.

    ``execute`` runs a statement written in SQLite's spelling; ``scope`` is the shards whose
    guilds the store serves (lists of pending work keep to them); ``fence`` checks, before a
    write of a guild's data, that this process still holds the guild's shard (None: one
    process owns every shard). ``conn`` is the engine's own connection, for the engine's
    hooks in its :class:`Dialect` only.
    """

    __slots__ = ("_fence", "_many", "conn", "dialect", "execute", "scope")

    def __init__(
        self,
        conn: Any,
        dialect: Dialect,
        execute: Execute,
        many: Callable[[str, Sequence[Params]], int],
        *,
        scope: Shards = ALL_SHARDS,
        fence: Callable[[int], None] | None = None,
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.execute = execute
        self._many = many
        self.scope = scope
        self._fence = fence

    @property
    def fenced(self) -> bool:
        """Whether writes are fenced (a process of a fleet)."""
        return self._fence is not None

    def check_fence(self, guild_id: int | None) -> None:
        """Refuse the write unless this process still holds ``guild_id``'s shard (no guild:
        nothing of a guild's is written)."""
        if self._fence is not None and guild_id is not None:
            self._fence(guild_id)

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run ``sql`` once per row; returns the rows changed."""
        return self._many(sql, rows) if rows else 0

    def one(self, sql: str, params: Params = ()) -> Any:
        """The first row of ``sql``, or None."""
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        """Every row of ``sql``."""
        return self.execute(sql, params).fetchall()

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row of ``sql`` (None without a row)."""
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def unfenced(self) -> Tx:
        """This transaction without the fence, for statements a fenced call already checked."""
        return Tx(self.conn, self.dialect, self.execute, self._many, scope=self.scope)


def in_scope(tx: Tx, column: str = "guild_id") -> tuple[str, list[Any]]:
    """A condition (``AND …``) keeping rows of guilds on ``tx``'s shards, and its parameters;
    empty for a scope of every shard."""
    scope = tx.scope
    if scope.complete:
        return "", []
    condition, params = tx.dialect.any(f"({column} >> 22) % ?", scope.ids)
    return f" AND {condition}", [scope.count, *params]


def sqlite_tx(conn: sqlite3.Connection) -> Tx:
    """A call's transaction on a SQLite connection (its statements run as they are)."""

    def many(sql: str, rows: Sequence[Params]) -> int:
        return conn.executemany(sql, rows).rowcount

    return Tx(conn, SQLITE, conn.execute, many)


def postgres_tx(
    conn: psycopg.Connection[tuple[Any, ...]],
    *,
    scope: Shards = ALL_SHARDS,
    fence: Callable[[int], None] | None = None,
) -> Tx:
    """A call's transaction on a psycopg connection, its statements in psycopg's spelling."""

    def execute(sql: str, params: Params = (), /) -> Cursor:
        return conn.execute(_to_pyformat(sql), params)

    def many(sql: str, rows: Sequence[Params]) -> int:
        with conn.cursor() as cursor:
            cursor.executemany(_to_pyformat(sql), rows)
            return cursor.rowcount

    return Tx(conn, POSTGRES, execute, many, scope=scope, fence=fence)
