"""``vivy reembed``: new note vectors wait in a staging table until every note has one, then
replace the old ones in one transaction.

Written once for both engines (:mod:`vivy.storage.dialect`); the swap itself is each engine's
(sqlite-vec keeps a binary quantisation beside each vector; PostgreSQL recreates the table
when the dimension changes). Either way the guilds' in-memory copies of the vectors load again
(:func:`~vivy.storage.vector_index.vectors_replaced`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from vivy.memory.notes import NoteText
from vivy.storage.dialect import REEMBED_STAGING, Tx
from vivy.storage.evidence import participant_names
from vivy.storage.maintenance import count_rows
from vivy.storage.meta import get_meta, set_meta
from vivy.storage.vector_index import vectors_replaced

__all__ = [
    "REEMBED_STAGING",
    "begin_staging",
    "notes_to_embed",
    "stage_vectors",
    "swap_note_vectors",
]


def begin_staging(tx: Tx, model_key: str) -> int:
    """Start or resume staging vectors of ``model_key``; returns how many are staged already.

    Vectors staged by an unfinished run with another model are thrown away.
    """
    if get_meta(tx, "reembed_model") != model_key:
        tx.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")
        set_meta(tx, "reembed_model", model_key)
    _ensure_staging(tx)
    return count_rows(tx, REEMBED_STAGING)


def _ensure_staging(tx: Tx) -> None:
    tx.execute(
        f"CREATE TABLE IF NOT EXISTS {REEMBED_STAGING} ("
        f" note_id BIGINT PRIMARY KEY, embedding {tx.dialect.vector_type} NOT NULL)"
    )


def notes_to_embed(tx: Tx, limit: int) -> list[NoteText]:
    """Up to ``limit`` notes without a staged vector, oldest first (after
    :func:`begin_staging`); participants in the order the note writer listed them."""
    rows = tx.all(
        "SELECT n.id, n.note_type, n.channel_name, n.note_date, n.topics, n.title, n.summary"
        f" FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s ON s.note_id = n.id"
        " WHERE s.note_id IS NULL ORDER BY n.id LIMIT ?",
        (limit,),
    )
    names = participant_names(tx, [int(r[0]) for r in rows])
    return [
        NoteText(
            id=int(r[0]),
            note_type=str(r[1]),
            channel_name=str(r[2]),
            note_date=str(r[3]),
            participants=tuple(names[int(r[0])]),
            topics=tuple(json.loads(str(r[4]))),
            title=str(r[5]),
            summary=str(r[6]),
        )
        for r in rows
    ]


def stage_vectors(tx: Tx, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Keep new vectors until every note has one (a note staged again keeps the newest)."""
    _ensure_staging(tx)
    encode = tx.dialect.encode_vector
    tx.executemany(
        f"INSERT INTO {REEMBED_STAGING} (note_id, embedding) VALUES (?, {tx.dialect.vector})"
        " ON CONFLICT (note_id) DO UPDATE SET embedding = excluded.embedding",
        [(note_id, encode(vector)) for note_id, vector in vectors],
    )


def swap_note_vectors(tx: Tx, model: str, dimension: int) -> int | None:
    """Replace every note vector with its staged one and record the model, atomically.

    Returns the number of vectors written, or None (changing nothing) when a note still has
    no staged vector.
    """
    missing = tx.one(
        f"SELECT 1 FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s"
        " ON s.note_id = n.id WHERE s.note_id IS NULL LIMIT 1"
    )
    if missing is not None:
        return None
    vectors_replaced(tx, None)
    written = tx.dialect.refill_note_vectors(tx, dimension)
    set_meta(tx, "embedding_model", model)
    set_meta(tx, "embedding_dimension", str(dimension))
    tx.execute("DELETE FROM meta WHERE key = 'reembed_model'")
    tx.execute(f"DROP TABLE {REEMBED_STAGING}")
    # Evidence windows embedded by the old model must not be compared with the new one's
    # questions; ``vivy reembed`` embeds them again right after (windows_to_embed).
    tx.execute("UPDATE evidence_windows SET embedding = NULL")
    return written
