"""Storage of interaction notes: conversation notes, topic clusters, and their index rows.

A conversation note is committed in one transaction with everything that depends on it: its
embedding (``vec_notes``), its keyword index row (``notes_fts``, by trigger), its participants,
its source lines (kept until its profile updates are applied), the deletion of its buffer,
and one pending profile-update row per human participant, carrying the operations the note
call already returned for that participant, if any. The buffer id is unique among notes, so
committing the same buffer twice yields one note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vivy.memory.dates import note_date
from vivy.memory.notes import NewNote, Note, Participant, PlannedUpdate
from vivy.storage.db import Connection
from vivy.storage.evidence import insert_windows
from vivy.storage.schema import VEC_KINDS, binary_dimensions, serialize_vector

__all__ = [
    "add_member_name",
    "commit_cluster_notes",
    "commit_conversation_note",
    "discard_buffer",
    "get_notes",
    "members_named",
    "notes_between",
    "notes_in_range",
]


def _insert_note(conn: Connection, note: NewNote, buffer_id: int | None) -> int:
    ids = json.dumps([str(p.user_id) for p in note.participants])
    cursor = conn.execute(
        "INSERT INTO interaction_notes (guild_id, channel_id, channel_name, note_type,"
        " participants, title, summary, topics, decisions, open_questions, entities,"
        " source_note_ids, buffer_id, note_date, quality, model, created_at, started_at,"
        " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            note.guild_id,
            note.channel_id,
            note.channel_name,
            note.note_type,
            ids,
            note.title,
            note.summary,
            json.dumps(list(note.topics)),
            json.dumps(list(note.decisions)),
            json.dumps(list(note.open_questions)),
            json.dumps(list(note.entities)),
            None if note.source_note_ids is None else json.dumps(list(note.source_note_ids)),
            buffer_id,
            note.note_date,
            note.quality,
            note.model,
            note.created_at,
            note.started_at,
            note.ended_at,
        ),
    )
    note_id = int(cursor.lastrowid or 0)
    conn.executemany(
        "INSERT INTO note_participants (note_id, user_id, display_name, message_count)"
        " VALUES (?, ?, ?, ?)",
        [(note_id, p.user_id, p.display_name, p.message_count) for p in note.participants],
    )
    vector = serialize_vector(note.embedding)
    conn.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " VALUES (?, ?, ?, ?, vec_quantize_binary(vec_slice(?, 0, ?)))",
        (
            note_id,
            note.guild_id,
            VEC_KINDS[note.note_type],
            vector,
            vector,
            binary_dimensions(len(note.embedding)),
        ),
    )
    for p in note.participants:
        conn.execute(
            "INSERT INTO users (id, discord_id, username) VALUES (?, ?, ?)"
            " ON CONFLICT (discord_id) DO UPDATE SET username = excluded.username",
            (p.user_id, str(p.user_id), p.display_name),
        )
        add_member_name(conn, note.guild_id, p.user_id, p.display_name)
        conn.execute(
            "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
            " display_name = excluded.display_name, updated_at = excluded.updated_at",
            (note.guild_id, p.user_id, p.display_name, note.created_at),
        )
    return note_id


def add_member_name(conn: Connection, guild_id: int, user_id: int, name: str) -> None:
    """Remember that the member goes by ``name`` in the guild (a nickname, alias or handle)."""
    folded = " ".join(name.lower().split())
    if folded:
        conn.execute(
            "INSERT OR IGNORE INTO member_names (guild_id, user_id, name) VALUES (?, ?, ?)",
            (guild_id, user_id, folded),
        )


def members_named(conn: Connection, guild_id: int, names: Sequence[str]) -> frozenset[int]:
    """The members of the guild known by any of ``names`` (lower-case word runs)."""
    if not names:
        return frozenset()
    marks = ",".join("?" * len(names))
    rows = conn.execute(
        f"SELECT DISTINCT user_id FROM member_names WHERE guild_id = ? AND name IN ({marks})",
        (guild_id, *names),
    ).fetchall()
    return frozenset(int(r[0]) for r in rows)


def notes_in_range(
    conn: Connection, guild_id: int, start: float, end: float, *, note_type: str, limit: int
) -> list[int]:
    """Ids of the guild's notes of one type that overlap ``[start, end)``, newest first."""
    rows = conn.execute(
        "SELECT id FROM interaction_notes WHERE guild_id = ? AND note_type = ?"
        " AND note_date BETWEEN ? AND ?"
        " AND COALESCE(started_at, created_at) < ? AND COALESCE(ended_at, created_at) >= ?"
        " ORDER BY COALESCE(ended_at, created_at) DESC, id DESC LIMIT ?",
        (guild_id, note_type, note_date(start - 86400.0), note_date(end), end, start, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def commit_conversation_note(
    conn: Connection,
    buffer_id: int,
    note: NewNote,
    *,
    updates_due_at: float | None = None,
    planned: Mapping[int, PlannedUpdate] | None = None,
) -> int | None:
    """Store the note of a closed buffer with everything that depends on it.

    Returns the note id, or None when the buffer is gone or no longer closed (its note was
    already committed): committing twice yields one note. The participants' profile updates
    are due at ``updates_due_at`` (default: at once), which lets a member's updates of
    several notes coalesce into one call. ``planned`` maps a participant to the operations
    the note call returned for them; the others' updates need a call of their own.
    """
    row = conn.execute("SELECT status FROM channel_buffers WHERE id = ?", (buffer_id,)).fetchone()
    if row is None or row[0] != "closed":
        return None
    note_id = _insert_note(conn, note, buffer_id)
    conn.execute(
        "INSERT INTO note_lines (message_id, note_id, author_id, author_name, text, created_at)"
        " SELECT message_id, ?, author_id, author_name, text, created_at FROM buffer_messages"
        " WHERE buffer_id = ?",
        (note_id, buffer_id),
    )
    insert_windows(
        conn,
        note_id,
        note.guild_id,
        note.windows,
        [serialize_vector(vector) for vector in note.window_embeddings],
    )
    conn.execute(
        "UPDATE interaction_notes SET (first_message_id, last_message_id, message_count) ="
        " (SELECT MIN(message_id), MAX(message_id), COUNT(*) FROM note_lines WHERE note_id = ?)"
        " WHERE id = ?",
        (note_id, note_id),
    )
    conn.execute("DELETE FROM channel_buffers WHERE id = ?", (buffer_id,))
    due = note.created_at if updates_due_at is None else updates_due_at
    plans = planned or {}
    rows = []
    for p in note.participants:
        plan = plans.get(p.user_id)
        rows.append(
            (
                note.guild_id,
                p.user_id,
                note_id,
                note.created_at,
                due,
                None if plan is None else plan.operations,
                None if plan is None else plan.basis_version,
            )
        )
    conn.executemany(
        "INSERT INTO profile_updates (guild_id, user_id, note_id, created_at, next_attempt_at,"
        " operations, basis_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return note_id


def discard_buffer(conn: Connection, buffer_id: int) -> bool:
    """Delete a closed buffer too small to become a note; False if it was already gone."""
    cursor = conn.execute(
        "DELETE FROM channel_buffers WHERE id = ? AND status = 'closed'", (buffer_id,)
    )
    return cursor.rowcount > 0


def commit_cluster_notes(
    conn: Connection, guild_id: int, day: str, clusters: Sequence[NewNote], completed_at: float
) -> list[int]:
    """Store a day's topic clusters and mark the clustering pass done, at most once.

    Returns the new note ids, or an empty list when the pass was already recorded for
    (guild, day), so a resumed job never duplicates clusters.
    """
    done = conn.execute(
        "SELECT 1 FROM memory_job_log WHERE guild_id = ? AND job_date = ? AND pass = 'clusters'",
        (guild_id, day),
    ).fetchone()
    if done:
        return []
    ids = [_insert_note(conn, cluster, None) for cluster in clusters]
    conn.execute(
        "INSERT INTO memory_job_log (guild_id, job_date, pass, completed_at)"
        " VALUES (?, ?, 'clusters', ?)",
        (guild_id, day, completed_at),
    )
    return ids


_NOTE_COLUMNS = (
    "id, guild_id, channel_id, channel_name, note_type, title, summary, topics, decisions,"
    " open_questions, entities, source_note_ids, note_date, started_at, ended_at, quality,"
    " created_at"
)


def _participants(conn: Connection, note_ids: Sequence[int]) -> dict[int, list[Participant]]:
    found: dict[int, list[Participant]] = {note_id: [] for note_id in note_ids}
    if not note_ids:
        return found
    marks = ",".join("?" * len(note_ids))
    for note_id, user_id, name, count in conn.execute(
        f"SELECT note_id, user_id, display_name, message_count FROM note_participants"
        f" WHERE note_id IN ({marks}) ORDER BY message_count DESC, user_id",
        list(note_ids),
    ).fetchall():
        found[int(note_id)].append(Participant(int(user_id), str(name), int(count)))
    return found


def _notes(conn: Connection, rows: Sequence[Any]) -> list[Note]:
    people = _participants(conn, [int(r[0]) for r in rows])
    notes = []
    for r in rows:
        note_id = int(r[0])
        notes.append(
            Note(
                id=note_id,
                guild_id=int(r[1]),
                channel_id=int(r[2]),
                channel_name=str(r[3]),
                note_type=str(r[4]),
                title=str(r[5]),
                summary=str(r[6]),
                topics=tuple(json.loads(str(r[7]))),
                decisions=tuple(json.loads(str(r[8]))),
                open_questions=tuple(json.loads(str(r[9]))),
                entities=tuple(json.loads(str(r[10]))),
                participants=tuple(people[note_id]),
                source_note_ids=tuple(json.loads(str(r[11]))) if r[11] else (),
                note_date=str(r[12]),
                started_at=r[13],
                ended_at=r[14],
                quality=str(r[15]),
                created_at=float(r[16]),
            )
        )
    return notes


def get_notes(conn: Connection, note_ids: Sequence[int]) -> list[Note]:
    """Notes by id, in the order given (missing ids are skipped)."""
    if not note_ids:
        return []
    marks = ",".join("?" * len(note_ids))
    rows = conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM interaction_notes WHERE id IN ({marks})", list(note_ids)
    ).fetchall()
    by_id = {note.id: note for note in _notes(conn, rows)}
    return [by_id[i] for i in note_ids if i in by_id]


def notes_between(
    conn: Connection, guild_id: int, start: float, end: float, note_type: str
) -> list[Note]:
    """A guild's notes of one type that started in [start, end), oldest first."""
    rows = conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM interaction_notes WHERE guild_id = ? AND note_type = ?"
        " AND COALESCE(started_at, created_at) >= ? AND COALESCE(started_at, created_at) < ?"
        " ORDER BY id",
        (guild_id, note_type, start, end),
    ).fetchall()
    return _notes(conn, rows)
