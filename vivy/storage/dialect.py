"""Storage written once for both engines: the SQL dialects and the transaction handle.

The storage areas (:mod:`vivy.storage.buffers`, :mod:`~vivy.storage.notes`, …) write their
SQL once, in SQLite's spelling: ``?`` placeholders (or ``:name`` ones with a mapping), and
run it through a :class:`Tx`, the one transaction of one engine's owner that a call runs in.
What differs between the engines is named in a small :class:`Dialect`, the way aiosql's
adapters rewrite only what a driver needs; each engine's package holds its own
(:data:`vivy.storage.sqlite.dialect.SQLITE`, :data:`vivy.storage.postgres.dialect.POSTGRES`):

* placeholders: PostgreSQL's psycopg takes ``%s`` / ``%(name)s`` (and ``%%`` for ``%``);
  :meth:`Dialect.sql` rewrites a statement (PostgreSQL's remembers it);
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

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vivy.shards import ALL_SHARDS, Shards

__all__ = ["REEMBED_STAGING", "Cursor", "Dialect", "Execute", "Params", "Tx", "in_scope"]

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


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one engine's SQL spells differently; see the module docstring."""

    #: ``sqlite`` or ``postgresql``.
    name: str
    #: A statement written in SQLite's spelling as this engine's driver takes it.
    spell: Callable[[str], str]
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
        return self.spell(text)

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition that ``column`` is one of ``values``, and its parameters (to splice
        into the statement's own, in order)."""
        if self.arrays:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)


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
