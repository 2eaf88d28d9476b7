"""``vivy reembed``: new note vectors wait in a staging table until every note has one, then
replace the old ones in one transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence

from vivy.memory.notes import NoteText, NoteType
from vivy.storage.db import Connection
from vivy.storage.maintenance import count_rows
from vivy.storage.schema import VEC_KINDS, binary_dimensions, serialize_vector
from vivy.storage.vector_index import vectors_replaced

__all__ = [
    "REEMBED_STAGING",
    "begin_staging",
    "notes_to_embed",
    "stage_vectors",
    "swap_note_vectors",
]

#: Work table of ``vivy reembed``: new vectors wait here until all notes have one.
REEMBED_STAGING = "reembed_staging"


def begin_staging(conn: Connection, model_key: str) -> int:
    """Start or resume staging vectors of ``model_key``; returns how many are staged already.

    Vectors staged by an unfinished run with another model are thrown away.
    """
    stored = conn.execute("SELECT value FROM meta WHERE key = 'reembed_model'").fetchone()
    if stored is None or str(stored[0]) != model_key:
        conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('reembed_model', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (model_key,),
        )
    _ensure_staging(conn)
    return count_rows(conn, REEMBED_STAGING)


def _ensure_staging(conn: Connection) -> None:
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {REEMBED_STAGING} ("
        " note_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"
    )


def notes_to_embed(conn: Connection, limit: int) -> list[NoteText]:
    """Up to ``limit`` notes without a staged vector, oldest first (after :func:`begin_staging`)."""
    rows = conn.execute(
        "SELECT n.id, n.note_type, n.channel_name, n.note_date, n.topics, n.title, n.summary"
        f" FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s ON s.note_id = n.id"
        " WHERE s.note_id IS NULL ORDER BY n.id LIMIT ?",
        (limit,),
    ).fetchall()
    ids = [int(r[0]) for r in rows]
    names: dict[int, list[str]] = {i: [] for i in ids}
    if ids:
        marks = ",".join("?" * len(ids))
        # Insertion order is the order the NoteWriter listed the participants in.
        for note_id, name in conn.execute(
            f"SELECT note_id, display_name FROM note_participants WHERE note_id IN ({marks})"
            " ORDER BY note_id, rowid",
            ids,
        ):
            names[int(note_id)].append(str(name))
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


def stage_vectors(conn: Connection, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Keep new vectors until every note has one."""
    _ensure_staging(conn)
    conn.executemany(
        f"INSERT OR REPLACE INTO {REEMBED_STAGING} (note_id, embedding) VALUES (?, ?)",
        [(note_id, serialize_vector(vector)) for note_id, vector in vectors],
    )


def swap_note_vectors(conn: Connection, model: str, dimension: int) -> int | None:
    """Replace every note vector with its staged one and record the model, atomically.

    Returns the number of vectors written, or None (changing nothing) when a note still has
    no staged vector.
    """
    missing = conn.execute(
        f"SELECT COUNT(*) FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s"
        " ON s.note_id = n.id WHERE s.note_id IS NULL"
    ).fetchone()[0]
    if missing:
        return None
    vectors_replaced(conn)
    conn.execute("DELETE FROM vec_notes")
    conn.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " SELECT n.id, n.guild_id, CASE n.note_type WHEN 'topic_cluster' THEN ? ELSE ? END,"
        " s.embedding, vec_quantize_binary(vec_slice(s.embedding, 0, ?))"
        f" FROM interaction_notes n JOIN {REEMBED_STAGING} s ON s.note_id = n.id ORDER BY n.id",
        (
            VEC_KINDS[NoteType.TOPIC_CLUSTER],
            VEC_KINDS[NoteType.CONVERSATION],
            binary_dimensions(dimension),
        ),
    )
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('embedding_model', ?), ('embedding_dimension', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (model, str(dimension)),
    )
    conn.execute("DELETE FROM meta WHERE key = 'reembed_model'")
    conn.execute(f"DROP TABLE {REEMBED_STAGING}")
    # Evidence windows embedded by the old model must not be compared with the new one's
    # questions; ``vivy reembed`` embeds them again right after (windows_to_embed).
    conn.execute("UPDATE evidence_windows SET embedding = NULL")
    return count_rows(conn, "vec_notes")
