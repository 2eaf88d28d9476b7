"""PostgreSQL storage of notes' evidence: their kept lines and windows of them.

The same rules as :mod:`vivy.storage.evidence`: windows are written in the note's own
transaction; a Discord edit or delete after the note rewrites the windows that held the line
and drops their embeddings; retention drops old windows and the lines no pending profile
update needs. The keyword index is a generated ``tsvector`` column, so it follows every
rewrite without a trigger; embeddings are pgvector ``vector`` values, made from the floats
the port takes.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.memory.evidence import EvidenceWindow, WindowText, window_text
from vivy.storage.postgres.db import PgConnection

__all__ = [
    "delete_evidence_message",
    "edit_evidence_message",
    "evidence_problems",
    "forget_lines",
    "insert_windows",
    "postings_problems",
    "prune_evidence",
    "set_window_embeddings",
    "vector_text",
    "windows_to_embed",
]


def vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form of ``vector`` (``[x,y,…]``), bound as text and cast to ``vector``."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def insert_windows(
    conn: PgConnection,
    note_id: int,
    guild_id: int,
    windows: Sequence[EvidenceWindow],
    vectors: Sequence[Sequence[float]],
) -> None:
    """Store a note's windows and, where given, their vectors (same order)."""
    if not windows:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO evidence_windows (note_id, guild_id, first_message_id, last_message_id,"
            " text, embedding) VALUES (%s, %s, %s, %s, %s, %s::vector)",
            [
                (
                    note_id,
                    guild_id,
                    window.first_message_id,
                    window.last_message_id,
                    window.text,
                    vector_text(vectors[index]) if index < len(vectors) else None,
                )
                for index, window in enumerate(windows)
            ],
        )


def _rewrite_windows(conn: PgConnection, note_id: int, message_id: int) -> None:
    """Rewrite the note's windows that cover ``message_id`` from its current lines, dropping
    their embeddings; a window left without any line is deleted."""
    covering = conn.execute(
        "SELECT id, first_message_id, last_message_id FROM evidence_windows"
        " WHERE note_id = %s AND first_message_id <= %s AND last_message_id >= %s",
        (note_id, message_id, message_id),
    ).fetchall()
    for window_id, first, last in covering:
        rows = conn.execute(
            "SELECT author_name, text FROM note_lines WHERE note_id = %s"
            " AND message_id BETWEEN %s AND %s ORDER BY message_id",
            (note_id, first, last),
        ).fetchall()
        text = window_text([(str(a), str(t)) for a, t in rows])
        if text:
            conn.execute(
                "UPDATE evidence_windows SET text = %s, embedding = NULL WHERE id = %s",
                (text, window_id),
            )
        else:
            conn.execute("DELETE FROM evidence_windows WHERE id = %s", (window_id,))


def edit_evidence_message(conn: PgConnection, message_id: int, text: str) -> bool:
    """Replace a kept line's text (a Discord edit after its note); False if not kept."""
    row = conn.execute(
        "UPDATE note_lines SET text = %s WHERE message_id = %s RETURNING note_id",
        (text, message_id),
    ).fetchone()
    if row is None:
        return False
    _rewrite_windows(conn, int(row[0]), message_id)
    return True


def delete_evidence_message(conn: PgConnection, message_id: int) -> bool:
    """Remove a kept line (a Discord delete after its note); False if not kept."""
    row = conn.execute(
        "DELETE FROM note_lines WHERE message_id = %s RETURNING note_id", (message_id,)
    ).fetchone()
    if row is None:
        return False
    _rewrite_windows(conn, int(row[0]), message_id)
    return True


def prune_evidence(conn: PgConnection, before: float) -> int:
    """Drop the evidence of notes that ended before ``before``; returns windows removed.

    Lines go too, except those a pending profile update still needs for its guard.
    """
    doomed = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT w.note_id FROM evidence_windows w"
            " JOIN interaction_notes n ON n.id = w.note_id"
            " WHERE COALESCE(n.ended_at, n.created_at) < %s",
            (before,),
        ).fetchall()
    ]
    if not doomed:
        return 0
    removed = conn.execute(
        "DELETE FROM evidence_windows WHERE note_id = ANY(%s)", (doomed,)
    ).rowcount
    conn.execute(
        "DELETE FROM note_lines l WHERE l.note_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM"
        " profile_updates u WHERE u.note_id = l.note_id AND u.status = 'pending')",
        (doomed,),
    )
    return removed


def windows_to_embed(conn: PgConnection, limit: int) -> list[WindowText]:
    """Up to ``limit`` evidence windows without an embedding, oldest first."""
    rows = conn.execute(
        "SELECT w.id, w.text, n.channel_name, n.note_date, n.title,"
        " ARRAY(SELECT p.display_name FROM note_participants p WHERE p.note_id = n.id"
        " ORDER BY p.position)"
        " FROM evidence_windows w JOIN interaction_notes n ON n.id = w.note_id"
        " WHERE w.embedding IS NULL ORDER BY w.id LIMIT %s",
        (limit,),
    ).fetchall()
    return [
        WindowText(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), tuple(r[5])) for r in rows
    ]


def set_window_embeddings(
    conn: PgConnection, vectors: Sequence[tuple[int, Sequence[float]]]
) -> None:
    """Store windows' new embeddings by window id."""
    if not vectors:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            "UPDATE evidence_windows SET embedding = %s::vector WHERE id = %s",
            [(vector_text(vector), window_id) for window_id, vector in vectors],
        )


def forget_lines(conn: PgConnection, guild_id: int, user_id: int) -> int:
    """Remove every kept line a member wrote in the guild, rewriting the windows that held
    them; returns how many."""
    rows = conn.execute(
        "SELECT l.message_id FROM note_lines l JOIN interaction_notes n ON n.id = l.note_id"
        " WHERE l.author_id = %s AND n.guild_id = %s",
        (user_id, guild_id),
    ).fetchall()
    for (message_id,) in rows:
        delete_evidence_message(conn, int(message_id))
    return len(rows)


def evidence_problems(conn: PgConnection) -> list[str]:
    """Evidence rows that belong to no note, or to a note of another guild, and keyword
    postings that differ from the text of their note or window (``db check``)."""
    problems = [
        f"evidence window {int(r[0])} belongs to no note"
        for r in conn.execute(
            "SELECT w.id FROM evidence_windows w LEFT JOIN interaction_notes n"
            " ON n.id = w.note_id WHERE n.id IS NULL ORDER BY w.id"
        ).fetchall()
    ]
    problems += [
        f"evidence window {int(r[0])} is filed under guild {int(r[1])}"
        f" but its note belongs to guild {int(r[2])}"
        for r in conn.execute(
            "SELECT w.id, w.guild_id, n.guild_id FROM evidence_windows w"
            " JOIN interaction_notes n ON n.id = w.note_id WHERE w.guild_id != n.guild_id"
            " ORDER BY w.id"
        ).fetchall()
    ]
    problems += [
        f"evidence line {int(r[0])} belongs to no note"
        for r in conn.execute(
            "SELECT l.message_id FROM note_lines l LEFT JOIN interaction_notes n"
            " ON n.id = l.note_id WHERE n.id IS NULL ORDER BY l.message_id"
        ).fetchall()
    ]
    return problems + postings_problems(conn)


#: Each postings table: what it is of, its rows' id column, its stored columns, and the
#: same columns derived from the rows' ``tsvector`` as the triggers derive them.
_POSTINGS_CHECKS = (
    (
        "note",
        "note_id",
        "SELECT lexeme, guild_id, note_type, note_id, tf, length FROM note_postings",
        "SELECT f.lexeme, n.guild_id, n.note_type, n.id, f.tf, f.length"
        " FROM interaction_notes AS n, vivy_lexeme_frequencies(n.notes_fts) AS f",
    ),
    (
        "evidence window",
        "window_id",
        "SELECT lexeme, guild_id, window_id, note_id, tf, length FROM window_postings",
        "SELECT f.lexeme, w.guild_id, w.id, w.note_id, f.tf, f.length"
        " FROM evidence_windows AS w, vivy_lexeme_frequencies(w.evidence_fts) AS f",
    ),
)


def postings_problems(conn: PgConnection, *, limit: int = 20) -> list[str]:
    """The notes and windows (at most ``limit`` of each) whose keyword postings differ from
    their text: missing, left behind after the row went, or stale after an edit."""
    problems: list[str] = []
    for kind, column, stored, derived in _POSTINGS_CHECKS:
        rows = conn.execute(
            (
                f"SELECT DISTINCT {column} FROM (({stored} EXCEPT ALL {derived})"
                f" UNION ALL ({derived} EXCEPT ALL {stored})) AS differing"
                f" ORDER BY {column} LIMIT %s"
            ).encode(),
            (limit,),
        ).fetchall()
        problems += [f"keyword postings of {kind} {int(r[0])} differ from its text" for r in rows]
    return problems
