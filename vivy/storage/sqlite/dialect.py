"""SQLite's dialect of the storage written once (:mod:`vivy.storage.dialect`), and its
transaction handle: statements run as they are written."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from vivy.memory.notes import NoteType
from vivy.storage.dialect import REEMBED_STAGING, Dialect, Params, Tx
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.vectors import VEC_KINDS, binary_dimensions

__all__ = ["SQLITE", "sqlite_tx"]


def _as_written(text: str) -> str:
    """A statement as written: SQLite's spelling is the one the areas write."""
    return text


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


SQLITE = Dialect(
    name="sqlite",
    spell=_as_written,
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


def sqlite_tx(conn: sqlite3.Connection) -> Tx:
    """A call's transaction on a SQLite connection (its statements run as they are)."""

    def many(sql: str, rows: Sequence[Params]) -> int:
        return conn.executemany(sql, rows).rowcount

    return Tx(conn, SQLITE, conn.execute, many)
