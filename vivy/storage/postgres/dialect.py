"""PostgreSQL's dialect of the storage written once (:mod:`vivy.storage.dialect`), and its
transaction handle: psycopg's placeholders, arrays and pgvector's vectors."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import psycopg

from vivy.memory.notes import NoteType
from vivy.shards import ALL_SHARDS, Shards
from vivy.storage.dialect import REEMBED_STAGING, Cursor, Dialect, Params, Tx
from vivy.storage.postgres.schema import note_vector_dimension, vec_notes_ddl
from vivy.storage.vectors import VEC_KINDS

__all__ = ["POSTGRES", "postgres_tx", "vector_text"]

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


POSTGRES = Dialect(
    name="postgresql",
    spell=_to_pyformat,
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
