"""PostgreSQL storage of ``vivy reembed``: new note vectors wait in a staging table until
every note has one, then replace the old ones in one transaction.

The same behaviour as :mod:`vivy.storage.reembed`. When the new model's dimension differs,
``vec_notes`` is recreated with its HNSW index at that dimension (pgvector indexes up to
2,000 dimensions of ``vector``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from vivy.memory.notes import NoteText
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.evidence import vector_text
from vivy.storage.postgres.meta import get_meta, set_meta
from vivy.storage.postgres.schema import vec_notes_ddl
from vivy.storage.reembed import REEMBED_STAGING
from vivy.storage.schema import VEC_KINDS

__all__ = [
    "begin_staging",
    "note_vector_dimension",
    "notes_to_embed",
    "stage_vectors",
    "swap_note_vectors",
]


def begin_staging(conn: PgConnection, model_key: str) -> int:
    """Start or resume staging vectors of ``model_key``; returns how many are staged already.

    Vectors staged by an unfinished run with another model are thrown away.
    """
    if get_meta(conn, "reembed_model") != model_key:
        conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")
        set_meta(conn, "reembed_model", model_key)
    _ensure_staging(conn)
    row = conn.execute(f"SELECT COUNT(*) FROM {REEMBED_STAGING}").fetchone()
    return int(row[0]) if row else 0


def _ensure_staging(conn: PgConnection) -> None:
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {REEMBED_STAGING} ("
        " note_id BIGINT PRIMARY KEY, embedding vector NOT NULL)"
    )


def notes_to_embed(conn: PgConnection, limit: int) -> list[NoteText]:
    """Up to ``limit`` notes without a staged vector, oldest first (after
    :func:`begin_staging`); participants in the order the note writer listed them."""
    rows = conn.execute(
        "SELECT n.id, n.note_type, n.channel_name, n.note_date, n.topics, n.title, n.summary,"
        " ARRAY(SELECT p.display_name FROM note_participants p WHERE p.note_id = n.id"
        " ORDER BY p.position)"
        f" FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s ON s.note_id = n.id"
        " WHERE s.note_id IS NULL ORDER BY n.id LIMIT %s",
        (limit,),
    ).fetchall()
    return [
        NoteText(
            id=int(r[0]),
            note_type=str(r[1]),
            channel_name=str(r[2]),
            note_date=str(r[3]),
            participants=tuple(r[7]),
            topics=tuple(json.loads(str(r[4]))),
            title=str(r[5]),
            summary=str(r[6]),
        )
        for r in rows
    ]


def stage_vectors(conn: PgConnection, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Keep new vectors until every note has one (a note staged again keeps the newest)."""
    _ensure_staging(conn)
    if not vectors:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {REEMBED_STAGING} (note_id, embedding) VALUES (%s, %s::vector)"
            " ON CONFLICT (note_id) DO UPDATE SET embedding = excluded.embedding",
            [(note_id, vector_text(vector)) for note_id, vector in vectors],
        )


def note_vector_dimension(conn: PgConnection) -> int | None:
    """The dimension ``vec_notes`` was created with, or None when it is missing."""
    row = conn.execute(
        "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass('vec_notes')"
        " AND a.attname = 'embedding'"
    ).fetchone()
    return None if row is None or row[0] is None or int(row[0]) < 0 else int(row[0])


def swap_note_vectors(conn: PgConnection, model: str, dimension: int) -> int | None:
    """Replace every note vector with its staged one and record the model, atomically.

    Returns the number of vectors written, or None (changing nothing) when a note still has
    no staged vector.
    """
    missing = conn.execute(
        f"SELECT EXISTS (SELECT 1 FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s"
        " ON s.note_id = n.id WHERE s.note_id IS NULL)"
    ).fetchone()
    if missing is None or missing[0]:
        return None
    if note_vector_dimension(conn) == dimension:
        conn.execute("DELETE FROM vec_notes")
    else:
        conn.execute("DROP TABLE IF EXISTS vec_notes")
        conn.execute(vec_notes_ddl(dimension).encode())
    written = conn.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding)"
        " SELECT n.id, n.guild_id, CASE n.note_type WHEN 'topic_cluster' THEN %s ELSE %s END,"
        " s.embedding"
        f" FROM interaction_notes n JOIN {REEMBED_STAGING} s ON s.note_id = n.id ORDER BY n.id",
        (VEC_KINDS["topic_cluster"], VEC_KINDS["conversation"]),
    ).rowcount
    set_meta(conn, "embedding_model", model)
    set_meta(conn, "embedding_dimension", str(dimension))
    conn.execute("DELETE FROM meta WHERE key = 'reembed_model'")
    conn.execute(f"DROP TABLE {REEMBED_STAGING}")
    # Evidence windows embedded by the old model must not be compared with the new one's
    # questions; ``vivy reembed`` embeds them again right after (windows_to_embed).
    conn.execute("UPDATE evidence_windows SET embedding = NULL")
    return written
