"""Storage of a note's evidence: the messages it was written from, kept searchable.

A summary drops the details people later ask about, so a note keeps its human messages
(``note_lines``) as *evidence*, grouped into short overlapping windows of consecutive lines
(``evidence_windows``). Each window is keyword-indexed (``evidence_fts``, porter-stemmed
BM25) and embedded (a float32 blob on its row). Windows outnumber notes several times, so
they get no nearest-neighbour index of their own: the windows of the notes a search found are
compared with the question exactly (:func:`compared_windows`), which costs a fraction of
another KNN scan.

Rules of this module:

* Windows are written in the note's own transaction (:func:`insert_windows`, called by
  :func:`vivy.storage.notes.commit_conversation_note`), so a note never exists half-indexed.
  On PostgreSQL the keyword index is a generated ``tsvector`` column with its postings kept by
  triggers, so it follows every rewrite as FTS5's triggers do on SQLite.
* A note with windows keeps its lines; a note without (evidence switched off) loses them once
  its profile updates are applied, as before evidence existed.
* A Discord edit or delete after the note was written changes or removes the line, rewrites
  the windows that held it and drops their embeddings (the old text must not stay findable);
  :func:`forget_lines` removes a member's lines; :func:`prune_evidence` applies retention.
* Every search names the guild inside the index or before the ``LIMIT``.

Written once for both engines (:mod:`vivy.storage.dialect`); the searches themselves are each
engine's own (:func:`vivy.storage.sqlite.fts.window_keyword_search` and
:func:`vivy.storage.sqlite.search.compared_windows` on SQLite, :mod:`vivy.storage.postgres.search`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from vivy.memory.evidence import EvidenceLine, EvidenceWindow, WindowText, window_text
from vivy.memory.notes import NoteType
from vivy.memory.scales import SampledNote, ScaleSample
from vivy.storage.dialect import Tx
from vivy.storage.vectors import VEC_KINDS

__all__ = [
    "delete_evidence_message",
    "edit_evidence_message",
    "evidence_problems",
    "forget_lines",
    "insert_windows",
    "lines_of_notes",
    "participant_names",
    "prune_evidence",
    "purge_evidence_index",
    "scale_sample",
    "set_window_embeddings",
    "window_lines",
    "window_texts",
    "windows_to_embed",
]


def insert_windows(
    tx: Tx,
    note_id: int,
    guild_id: int,
    windows: Sequence[EvidenceWindow],
    vectors: Sequence[Sequence[float]],
) -> None:
    """Store a note's windows and, where given, their vectors (same order)."""
    encode = tx.dialect.encode_vector
    tx.executemany(
        "INSERT INTO evidence_windows (note_id, guild_id, first_message_id, last_message_id,"
        f" text, embedding) VALUES (?, ?, ?, ?, ?, {tx.dialect.vector})",
        [
            (
                note_id,
                guild_id,
                window.first_message_id,
                window.last_message_id,
                window.text,
                encode(vectors[index]) if index < len(vectors) else None,
            )
            for index, window in enumerate(windows)
        ],
    )


def _rewrite_windows(tx: Tx, note_id: int, message_id: int) -> None:
    """Rewrite the text of the note's windows that cover ``message_id`` from its current lines.

    The keyword index follows their text; their embeddings are dropped (they described the
    old text); a window left without any line is deleted.
    """
    covering = tx.all(
        "SELECT id, first_message_id, last_message_id FROM evidence_windows"
        " WHERE note_id = ? AND first_message_id <= ? AND last_message_id >= ?",
        (note_id, message_id, message_id),
    )
    for window_id, first, last in covering:
        rows = tx.all(
            "SELECT author_name, text FROM note_lines WHERE note_id = ?"
            " AND message_id BETWEEN ? AND ? ORDER BY message_id",
            (note_id, first, last),
        )
        text = window_text([(str(a), str(t)) for a, t in rows])
        if text:
            tx.execute(
                "UPDATE evidence_windows SET text = ?, embedding = NULL WHERE id = ?",
                (text, window_id),
            )
        else:
            tx.execute("DELETE FROM evidence_windows WHERE id = ?", (window_id,))


def edit_evidence_message(tx: Tx, message_id: int, text: str) -> bool:
    """Replace a kept line's text (a Discord edit after its note); False if not kept."""
    row = tx.one(
        "UPDATE note_lines SET text = ? WHERE message_id = ? RETURNING note_id",
        (text, message_id),
    )
    if row is None:
        return False
    _rewrite_windows(tx, int(row[0]), message_id)
    return True


def delete_evidence_message(tx: Tx, message_id: int) -> bool:
    """Remove a kept line (a Discord delete after its note); False if not kept."""
    row = tx.one("DELETE FROM note_lines WHERE message_id = ? RETURNING note_id", (message_id,))
    if row is None:
        return False
    _rewrite_windows(tx, int(row[0]), message_id)
    return True


def forget_lines(tx: Tx, guild_id: int, user_id: int) -> int:
    """Remove every kept line a member wrote in the guild, rewriting the windows that held
    them; returns how many. Callers purge the keyword index afterwards
    (:func:`purge_evidence_index`), so none of the member's words stays in it."""
    rows = tx.all(
        "SELECT l.message_id FROM note_lines l JOIN interaction_notes n ON n.id = l.note_id"
        " WHERE l.author_id = ? AND n.guild_id = ?",
        (user_id, guild_id),
    )
    for (message_id,) in rows:
        delete_evidence_message(tx, int(message_id))
    return len(rows)


def purge_evidence_index(tx: Tx) -> None:
    """Purge deleted and rewritten windows' words from the keyword index at once."""
    for statement in tx.dialect.purge_evidence_index:
        tx.execute(statement)


def prune_evidence(tx: Tx, before: float) -> int:
    """Drop the evidence of notes that ended before ``before``; returns windows removed.

    Lines go too, except those a pending profile update still needs for its guard.
    """
    doomed = [
        int(r[0])
        for r in tx.all(
            "SELECT DISTINCT w.note_id FROM evidence_windows w"
            " JOIN interaction_notes n ON n.id = w.note_id"
            " WHERE COALESCE(n.ended_at, n.created_at) < ?",
            (before,),
        )
    ]
    if not doomed:
        return 0
    windows, params = tx.dialect.any("note_id", doomed)
    removed = tx.execute(f"DELETE FROM evidence_windows WHERE {windows}", params).rowcount
    lines, params = tx.dialect.any("l.note_id", doomed)
    tx.execute(
        f"DELETE FROM note_lines AS l WHERE {lines} AND NOT EXISTS (SELECT 1 FROM"
        " profile_updates u WHERE u.note_id = l.note_id AND u.status = 'pending')",
        params,
    )
    return removed


def lines_of_notes(tx: Tx, note_ids: Sequence[int]) -> dict[int, list[EvidenceLine]]:
    """The kept lines of notes with evidence windows, oldest first, by note id."""
    found: dict[int, list[EvidenceLine]] = {}
    if not note_ids:
        return found
    notes, params = tx.dialect.any("note_id", note_ids)
    for message_id, note_id, author_id, name, text, at in tx.all(
        f"SELECT message_id, note_id, author_id, author_name, text, created_at FROM note_lines"
        f" AS l WHERE {notes} AND EXISTS (SELECT 1 FROM evidence_windows AS w"
        f" WHERE w.note_id = l.note_id) ORDER BY note_id, message_id",
        params,
    ):
        found.setdefault(int(note_id), []).append(
            EvidenceLine(
                int(message_id), int(note_id), int(author_id), str(name), str(text), float(at)
            )
        )
    return found


def window_texts(tx: Tx, window_ids: Sequence[int]) -> dict[int, str]:
    """The indexed text of windows by id."""
    if not window_ids:
        return {}
    windows, params = tx.dialect.any("id", window_ids)
    return {
        int(r[0]): str(r[1])
        for r in tx.all(f"SELECT id, text FROM evidence_windows WHERE {windows}", params)
    }


def window_lines(tx: Tx, window_ids: Sequence[int]) -> dict[int, list[EvidenceLine]]:
    """The kept lines each window spans, oldest first, by window id (one query)."""
    ids = list(dict.fromkeys(window_ids))
    found: dict[int, list[EvidenceLine]] = {window_id: [] for window_id in ids}
    if not ids:
        return found
    windows, params = tx.dialect.any("w.id", ids)
    rows = tx.all(
        "SELECT w.id, l.message_id, l.note_id, l.author_id, l.author_name, l.text,"
        " l.created_at FROM evidence_windows AS w JOIN note_lines AS l ON l.note_id = w.note_id"
        " AND l.message_id BETWEEN w.first_message_id AND w.last_message_id"
        f" WHERE {windows} ORDER BY w.id, l.message_id",
        params,
    )
    for r in rows:
        found[int(r[0])].append(
            EvidenceLine(int(r[1]), int(r[2]), int(r[3]), str(r[4]), str(r[5]), float(r[6]))
        )
    return found


def participant_names(tx: Tx, note_ids: Sequence[int]) -> dict[int, list[str]]:
    """The display names of each note's participants, in the order the note writer listed
    them (one query)."""
    names: dict[int, list[str]] = {note_id: [] for note_id in note_ids}
    if names:
        notes, params = tx.dialect.any("note_id", list(names))
        for note_id, name in tx.all(
            f"SELECT note_id, display_name FROM note_participants WHERE {notes}"
            f" ORDER BY note_id, {tx.dialect.listed_order}",
            params,
        ):
            names[int(note_id)].append(str(name))
    return names


def windows_to_embed(tx: Tx, limit: int) -> list[WindowText]:
    """Up to ``limit`` evidence windows without an embedding (after a model change or an
    edit), oldest first."""
    floats = tx.dialect.vector_json.format
    rows = tx.all(
        f"SELECT w.id, w.text, {floats('v.embedding')} FROM evidence_windows w"
        " LEFT JOIN vec_notes v ON v.note_id = w.note_id"
        " WHERE w.embedding IS NULL ORDER BY w.id LIMIT ?",
        (limit,),
    )
    return [
        WindowText(int(r[0]), str(r[1]), None if r[2] is None else tuple(json.loads(r[2])))
        for r in rows
    ]


def set_window_embeddings(tx: Tx, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Store windows' new embeddings by window id."""
    encode = tx.dialect.encode_vector
    tx.executemany(
        f"UPDATE evidence_windows SET embedding = {tx.dialect.vector} WHERE id = ?",
        [(encode(vector), window_id) for window_id, vector in vectors],
    )


def evidence_problems(tx: Tx) -> list[str]:
    """Evidence rows that belong to no note, or to a note of another guild (``db check``)."""
    problems = [
        f"evidence window {int(r[0])} belongs to no note"
        for r in tx.all(
            "SELECT w.id FROM evidence_windows w LEFT JOIN interaction_notes n"
            " ON n.id = w.note_id WHERE n.id IS NULL ORDER BY w.id"
        )
    ]
    problems += [
        f"evidence window {int(r[0])} is filed under guild {int(r[1])}"
        f" but its note belongs to guild {int(r[2])}"
        for r in tx.all(
            "SELECT w.id, w.guild_id, n.guild_id FROM evidence_windows w"
            " JOIN interaction_notes n ON n.id = w.note_id WHERE w.guild_id != n.guild_id"
            " ORDER BY w.id"
        )
    ]
    problems += [
        f"evidence line {int(r[0])} belongs to no note"
        for r in tx.all(
            "SELECT l.message_id FROM note_lines l LEFT JOIN interaction_notes n"
            " ON n.id = l.note_id WHERE n.id IS NULL ORDER BY l.message_id"
        )
    ]
    return problems


def scale_sample(tx: Tx, guild_id: int, dimension: int, *, notes: int, windows: int) -> ScaleSample:
    """Those of the guild's newest ``notes`` conversation notes with vectors of ``dimension``
    floats that have windows embedded so, each with up to ``windows`` of those spread evenly
    over the conversation (of ``c`` windows, each whose ``i * windows mod c`` is below it)."""
    dims, floats = tx.dialect.vector_dims.format, tx.dialect.vector_json.format
    rows = tx.all(
        f"SELECT s.note_id, {floats('v.embedding')}, {floats('s.embedding')} FROM ("
        " SELECT note_id, embedding, COUNT(*) OVER (PARTITION BY note_id) AS c,"
        "  ROW_NUMBER() OVER (PARTITION BY note_id ORDER BY first_message_id, id) - 1 AS i"
        f" FROM evidence_windows WHERE embedding IS NOT NULL AND {dims('embedding')} = ?"
        "  AND note_id IN (SELECT note_id FROM vec_notes WHERE guild_id = ? AND note_kind = ?"
        f"  AND {dims('embedding')} = ? ORDER BY note_id DESC LIMIT ?)"
        ") s JOIN vec_notes v ON v.note_id = s.note_id WHERE s.c <= ? OR s.i * ? % s.c < ?"
        " ORDER BY s.note_id DESC, s.i",
        (dimension, guild_id, VEC_KINDS[NoteType.CONVERSATION], dimension, notes) + (windows,) * 3,
    )
    found: dict[int, SampledNote] = {}
    for note_id, vector, window in rows:
        held = found.get(int(note_id)) or SampledNote(int(note_id), tuple(json.loads(vector)), ())
        found[int(note_id)] = replace(held, windows=(*held.windows, tuple(json.loads(window))))
    return ScaleSample(guild_id, tuple(found.values()))
