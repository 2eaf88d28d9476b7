"""Storage of a note's evidence: the messages it was written from, kept searchable.

A summary drops the details people later ask about, so a note keeps its human messages
(``note_lines``) as *evidence*, grouped into short overlapping windows of consecutive lines
(``evidence_windows``). Each window is keyword-indexed (``evidence_fts``, porter-stemmed
BM25) and embedded (a float32 blob on its row). Windows outnumber notes several times, so
they get no nearest-neighbour index of their own: the windows of the notes a search found are
compared with the question exactly (:func:`compared_windows`), which at 100k notes costs a
fraction of another KNN scan.

Rules of this module:

* Windows are written in the note's own transaction (:func:`insert_windows`, called by
  :func:`vivy.storage.notes.commit_conversation_note`), so a note never exists half-indexed.
* A note with windows keeps its lines; a note without (evidence switched off) loses them once
  its profile updates are applied, as before evidence existed.
* A Discord edit or delete after the note was written changes or removes the line, rewrites
  the windows that held it and drops their embeddings (the old text must not stay findable);
  :func:`forget_lines` removes a member's lines; :func:`prune_evidence` applies retention.
* Every search names the guild inside the index or before the ``LIMIT``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vivy.memory.evidence import EvidenceLine, EvidenceWindow, WindowText, window_text
from vivy.storage.db import Connection
from vivy.storage.fts import best_of_guild
from vivy.storage.schema import serialize_vector

__all__ = [
    "WindowMatch",
    "compared_windows",
    "delete_evidence_message",
    "edit_evidence_message",
    "evidence_problems",
    "forget_lines",
    "insert_windows",
    "lines_of_notes",
    "optimize_evidence_index",
    "prune_evidence",
    "set_window_embeddings",
    "window_keyword_search",
    "window_lines",
    "window_texts",
    "windows_to_embed",
]


@dataclass(frozen=True, slots=True)
class WindowMatch:
    """A window found by search: its note, and BM25 strength or cosine similarity."""

    window_id: int
    note_id: int
    score: float


def insert_windows(
    conn: Connection,
    note_id: int,
    guild_id: int,
    windows: Sequence[EvidenceWindow],
    vectors: Sequence[bytes],
) -> None:
    """Store a note's windows and, where given, their float32 vectors (same order)."""
    conn.executemany(
        "INSERT INTO evidence_windows (note_id, guild_id, first_message_id, last_message_id,"
        " text, embedding) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                note_id,
                guild_id,
                window.first_message_id,
                window.last_message_id,
                window.text,
                vectors[index] if index < len(vectors) else None,
            )
            for index, window in enumerate(windows)
        ],
    )


def _rewrite_windows(conn: Connection, note_id: int, message_id: int) -> None:
    """Rewrite the text of the note's windows that cover ``message_id`` from its current lines.

    The trigger re-indexes their text; their embeddings are dropped (they described the old
    text); a window left without any line is deleted.
    """
    names = conn.execute(
        "SELECT id, first_message_id, last_message_id FROM evidence_windows"
        " WHERE note_id = ? AND first_message_id <= ? AND last_message_id >= ?",
        (note_id, message_id, message_id),
    ).fetchall()
    for window_id, first, last in names:
        rows = conn.execute(
            "SELECT author_name, text FROM note_lines WHERE note_id = ?"
            " AND message_id BETWEEN ? AND ? ORDER BY message_id",
            (note_id, first, last),
        ).fetchall()
        text = window_text([(str(a), str(t)) for a, t in rows])
        if text:
            conn.execute(
                "UPDATE evidence_windows SET text = ?, embedding = NULL WHERE id = ?",
                (text, window_id),
            )
        else:
            conn.execute("DELETE FROM evidence_windows WHERE id = ?", (window_id,))


def edit_evidence_message(conn: Connection, message_id: int, text: str) -> bool:
    """Replace a kept line's text (a Discord edit after its note); False if not kept."""
    row = conn.execute(
        "SELECT note_id FROM note_lines WHERE message_id = ?", (message_id,)
    ).fetchone()
    if row is None:
        return False
    conn.execute("UPDATE note_lines SET text = ? WHERE message_id = ?", (text, message_id))
    _rewrite_windows(conn, int(row[0]), message_id)
    return True


def delete_evidence_message(conn: Connection, message_id: int) -> bool:
    """Remove a kept line (a Discord delete after its note); False if not kept."""
    row = conn.execute(
        "SELECT note_id FROM note_lines WHERE message_id = ?", (message_id,)
    ).fetchone()
    if row is None:
        return False
    conn.execute("DELETE FROM note_lines WHERE message_id = ?", (message_id,))
    _rewrite_windows(conn, int(row[0]), message_id)
    return True


def forget_lines(conn: Connection, guild_id: int, user_id: int) -> int:
    """Remove every kept line a member wrote in the guild; returns how many.

    Callers merge the keyword index afterwards (:func:`optimize_evidence_index`), so none
    of the member's words stays in its segments.
    """
    rows = conn.execute(
        "SELECT l.message_id FROM note_lines l JOIN interaction_notes n ON n.id = l.note_id"
        " WHERE l.author_id = ? AND n.guild_id = ?",
        (user_id, guild_id),
    ).fetchall()
    for (message_id,) in rows:
        delete_evidence_message(conn, int(message_id))
    return len(rows)


def optimize_evidence_index(conn: Connection) -> None:
    """Merge the keyword index, so deleted windows' terms leave its segments too."""
    conn.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('optimize')")


def prune_evidence(conn: Connection, before: float) -> int:
    """Drop the evidence of notes that ended before ``before``; returns windows removed.

    Lines go too, except those a pending profile update still needs for its guard.
    """
    doomed = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT w.note_id FROM evidence_windows w"
            " JOIN interaction_notes n ON n.id = w.note_id"
            " WHERE COALESCE(n.ended_at, n.created_at) < ?",
            (before,),
        ).fetchall()
    ]
    removed = 0
    for note_id in doomed:
        cursor = conn.execute("DELETE FROM evidence_windows WHERE note_id = ?", (note_id,))
        removed += cursor.rowcount
        conn.execute(
            "DELETE FROM note_lines WHERE note_id = ? AND NOT EXISTS (SELECT 1 FROM"
            " profile_updates WHERE note_id = ? AND status = 'pending')",
            (note_id, note_id),
        )
    return removed


def lines_of_notes(conn: Connection, note_ids: Sequence[int]) -> dict[int, list[EvidenceLine]]:
    """The kept lines of notes with evidence windows, oldest first, by note id."""
    found: dict[int, list[EvidenceLine]] = {}
    if not note_ids:
        return found
    marks = ",".join("?" * len(note_ids))
    for message_id, note_id, author_id, name, text, at in conn.execute(
        f"SELECT message_id, note_id, author_id, author_name, text, created_at FROM note_lines"
        f" WHERE note_id IN ({marks}) AND note_id IN (SELECT note_id FROM evidence_windows)"
        f" ORDER BY note_id, message_id",
        list(note_ids),
    ).fetchall():
        found.setdefault(int(note_id), []).append(
            EvidenceLine(
                int(message_id), int(note_id), int(author_id), str(name), str(text), float(at)
            )
        )
    return found


def window_texts(conn: Connection, window_ids: Sequence[int]) -> dict[int, str]:
    """The indexed text of windows by id."""
    if not window_ids:
        return {}
    marks = ",".join("?" * len(window_ids))
    return {
        int(r[0]): str(r[1])
        for r in conn.execute(
            f"SELECT id, text FROM evidence_windows WHERE id IN ({marks})", list(window_ids)
        ).fetchall()
    }


def window_lines(conn: Connection, window_ids: Sequence[int]) -> dict[int, list[EvidenceLine]]:
    """The kept lines each window spans, oldest first, by window id (one query)."""
    ids = list(dict.fromkeys(window_ids))
    found: dict[int, list[EvidenceLine]] = {window_id: [] for window_id in ids}
    if not ids:
        return found
    rows = conn.execute(
        "SELECT w.id, l.message_id, l.note_id, l.author_id, l.author_name, l.text,"
        " l.created_at FROM evidence_windows AS w JOIN note_lines AS l ON l.note_id = w.note_id"
        " AND l.message_id BETWEEN w.first_message_id AND w.last_message_id"
        f" WHERE w.id IN ({','.join('?' * len(ids))}) ORDER BY w.id, l.message_id",
        ids,
    ).fetchall()
    for r in rows:
        found[int(r[0])].append(
            EvidenceLine(int(r[1]), int(r[2]), int(r[3]), str(r[4]), str(r[5]), float(r[6]))
        )
    return found


def window_keyword_search(
    conn: Connection, guild_id: int, match: str, *, limit: int
) -> list[WindowMatch]:
    """The ``limit`` best BM25 windows of the guild for an FTS5 ``match`` expression.

    ``match`` must come from :func:`vivy.retrieval.search.match_expression` (quoted terms).
    The guild filter is in the query, before the ``LIMIT``.
    """
    found = best_of_guild(
        conn,
        "SELECT rowid, bm25(evidence_fts) AS score FROM evidence_fts"
        " WHERE evidence_fts MATCH ? ORDER BY score, rowid LIMIT ?",
        (match,),
        "SELECT id, note_id FROM evidence_windows WHERE id IN ({marks}) AND +guild_id = ?",
        (guild_id,),
        limit,
    )
    return [
        WindowMatch(window_id, note_id, max(0.0, -score)) for window_id, note_id, score in found
    ]


def windows_to_embed(conn: Connection, limit: int) -> list[WindowText]:
    """Up to ``limit`` evidence windows without an embedding (after a model change or an
    edit), oldest first."""
    rows = conn.execute(
        "SELECT w.id, w.text, n.channel_name, n.note_date, n.title, n.id FROM evidence_windows w"
        " JOIN interaction_notes n ON n.id = w.note_id WHERE w.embedding IS NULL"
        " ORDER BY w.id LIMIT ?",
        (limit,),
    ).fetchall()
    names: dict[int, list[str]] = {}
    for row in rows:
        note_id = int(row[5])
        if note_id not in names:
            names[note_id] = [
                str(r[0])
                for r in conn.execute(
                    "SELECT display_name FROM note_participants WHERE note_id = ? ORDER BY rowid",
                    (note_id,),
                ).fetchall()
            ]
    return [
        WindowText(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), tuple(names[int(r[5])]))
        for r in rows
    ]


def set_window_embeddings(conn: Connection, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Store windows' new embeddings by window id."""
    conn.executemany(
        "UPDATE evidence_windows SET embedding = ? WHERE id = ?",
        [(serialize_vector(vector), window_id) for window_id, vector in vectors],
    )


def compared_windows(
    conn: Connection, guild_id: int, note_ids: Sequence[int], vector: bytes
) -> tuple[list[WindowMatch], dict[int, str]]:
    """The cosine similarity of ``vector`` to every embedded window of the guild's notes
    ``note_ids``, best first, and those windows' texts by id (a window's text sits on the
    page its embedding is read from). Windows embedded at another dimension are skipped."""
    if not note_ids:
        return [], {}
    marks = ",".join("?" * len(note_ids))
    rows = conn.execute(
        f"SELECT id, note_id, vec_distance_cosine(embedding, ?), text FROM evidence_windows"
        f" WHERE note_id IN ({marks}) AND guild_id = ? AND length(embedding) = ?",
        (vector, *note_ids, guild_id, len(vector)),
    ).fetchall()
    found = [WindowMatch(int(r[0]), int(r[1]), 1.0 - float(r[2])) for r in rows]
    found.sort(key=lambda match: (-match.score, match.window_id))
    return found, {int(r[0]): str(r[3]) for r in rows}


def evidence_problems(conn: Connection) -> list[str]:
    """Evidence rows that belong to no note, or to a note of another guild (``db check``)."""
    problems = [
        f"evidence window {int(r[0])} belongs to no note"
        for r in conn.execute(
            "SELECT w.id FROM evidence_windows w LEFT JOIN interaction_notes n"
            " ON n.id = w.note_id WHERE n.id IS NULL"
        ).fetchall()
    ]
    problems += [
        f"evidence window {int(r[0])} is filed under guild {int(r[1])}"
        f" but its note belongs to guild {int(r[2])}"
        for r in conn.execute(
            "SELECT w.id, w.guild_id, n.guild_id FROM evidence_windows w"
            " JOIN interaction_notes n ON n.id = w.note_id WHERE w.guild_id != n.guild_id"
        ).fetchall()
    ]
    problems += [
        f"evidence line {int(r[0])} belongs to no note"
        for r in conn.execute(
            "SELECT l.message_id FROM note_lines l LEFT JOIN interaction_notes n"
            " ON n.id = l.note_id WHERE n.id IS NULL"
        ).fetchall()
    ]
    return problems
