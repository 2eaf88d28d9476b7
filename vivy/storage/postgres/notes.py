"""PostgreSQL storage of interaction notes: conversation notes, topic clusters, their rows.

The same behaviour as :mod:`vivy.storage.notes` (whose records it takes and returns): a
conversation note is committed in one transaction with its vector (``vec_notes``), its
participants, its source lines and evidence windows, the deletion of its buffer and one
pending profile update per participant. Its keyword index is a generated column. The buffer
row is locked first (``FOR UPDATE``) and the buffer id is unique among notes, so two
processes committing the same buffer yield one note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vivy.memory.notes import NewNote, Note, Participant, PlannedUpdate
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.evidence import insert_windows, vector_text
from vivy.storage.schema import VEC_KINDS

__all__ = [
    "add_member_name",
    "commit_cluster_notes",
    "commit_conversation_note",
    "discard_buffer",
    "get_notes",
    "notes_between",
]


def _insert_note(conn: PgConnection, note: NewNote, buffer_id: int | None) -> int:
    """Insert the note, its participants, vector and member rows; returns its id."""
    row = conn.execute(
        "INSERT INTO interaction_notes (guild_id, channel_id, channel_name, note_type,"
        " participants, title, summary, topics, decisions, open_questions, entities,"
        " source_note_ids, buffer_id, note_date, quality, model, created_at, started_at,"
        " ended_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s) RETURNING id",
        (
            note.guild_id,
            note.channel_id,
            note.channel_name,
            note.note_type,
            json.dumps([str(p.user_id) for p in note.participants]),
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
    ).fetchone()
    assert row is not None
    note_id = int(row[0])
    conn.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding)"
        " VALUES (%s, %s, %s, %s::vector)",
        (note_id, note.guild_id, VEC_KINDS[note.note_type], vector_text(note.embedding)),
    )
    if not note.participants:
        return note_id
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO note_participants (note_id, user_id, display_name, message_count)"
            " VALUES (%s, %s, %s, %s)",
            [(note_id, p.user_id, p.display_name, p.message_count) for p in note.participants],
        )
        cursor.executemany(
            "INSERT INTO users (id, discord_id, username) VALUES (%s, %s, %s)"
            " ON CONFLICT (discord_id) DO UPDATE SET username = excluded.username",
            [(p.user_id, str(p.user_id), p.display_name) for p in note.participants],
        )
        cursor.executemany(
            "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
            " display_name = excluded.display_name, updated_at = excluded.updated_at",
            [
                (note.guild_id, p.user_id, p.display_name, note.created_at)
                for p in note.participants
            ],
        )
    for p in note.participants:
        add_member_name(conn, note.guild_id, p.user_id, p.display_name)
    return note_id


def add_member_name(conn: PgConnection, guild_id: int, user_id: int, name: str) -> None:
    """Remember that the member goes by ``name`` in the guild (a nickname, alias or handle)."""
    folded = " ".join(name.lower().split())
    if folded:
        conn.execute(
            "INSERT INTO member_names (guild_id, user_id, name) VALUES (%s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            (guild_id, user_id, folded),
        )


def commit_conversation_note(
    conn: PgConnection,
    buffer_id: int,
    note: NewNote,
    *,
    updates_due_at: float | None = None,
    planned: Mapping[int, PlannedUpdate] | None = None,
) -> int | None:
    """Store the note of a closed buffer with everything that depends on it.

    Returns the note id, or None when the buffer is gone or no longer closed (its note was
    already committed): committing twice yields one note.
    """
    row = conn.execute(
        "SELECT status FROM channel_buffers WHERE id = %s FOR UPDATE", (buffer_id,)
    ).fetchone()
    if row is None or row[0] != "closed":
        return None
    note_id = _insert_note(conn, note, buffer_id)
    conn.execute(
        "INSERT INTO note_lines (message_id, note_id, author_id, author_name, text, created_at)"
        " SELECT message_id, %s, author_id, author_name, text, created_at FROM buffer_messages"
        " WHERE buffer_id = %s",
        (note_id, buffer_id),
    )
    insert_windows(conn, note_id, note.guild_id, note.windows, note.window_embeddings)
    conn.execute(
        "UPDATE interaction_notes SET (first_message_id, last_message_id, message_count) ="
        " (SELECT MIN(message_id), MAX(message_id), COUNT(*) FROM note_lines WHERE note_id = %s)"
        " WHERE id = %s",
        (note_id, note_id),
    )
    conn.execute("DELETE FROM channel_buffers WHERE id = %s", (buffer_id,))
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
    if rows:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO profile_updates (guild_id, user_id, note_id, created_at,"
                " next_attempt_at, operations, basis_version)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
    return note_id


def discard_buffer(conn: PgConnection, buffer_id: int) -> bool:
    """Delete a closed buffer too small to become a note; False if it was already gone."""
    cursor = conn.execute(
        "DELETE FROM channel_buffers WHERE id = %s AND status = 'closed'", (buffer_id,)
    )
    return cursor.rowcount > 0


def commit_cluster_notes(
    conn: PgConnection,
    guild_id: int,
    day: str,
    clusters: Sequence[NewNote],
    completed_at: float,
) -> list[int]:
    """Store a day's topic clusters and mark the clustering pass done, at most once.

    The pass's log row is claimed first (``ON CONFLICT DO NOTHING``), so of two processes
    running the same (guild, day) one writes the clusters and the other gets an empty list.
    """
    claimed = conn.execute(
        "INSERT INTO memory_job_log (guild_id, job_date, pass, completed_at)"
        " VALUES (%s, %s, 'clusters', %s) ON CONFLICT DO NOTHING RETURNING 1",
        (guild_id, day, completed_at),
    ).fetchone()
    if claimed is None:
        return []
    return [_insert_note(conn, cluster, None) for cluster in clusters]


_NOTE_COLUMNS = (
    "id, guild_id, channel_id, channel_name, note_type, title, summary, topics, decisions,"
    " open_questions, entities, source_note_ids, note_date, started_at, ended_at, quality,"
    " created_at"
)


def _participants(conn: PgConnection, note_ids: Sequence[int]) -> dict[int, list[Participant]]:
    found: dict[int, list[Participant]] = {note_id: [] for note_id in note_ids}
    if not note_ids:
        return found
    for note_id, user_id, name, count in conn.execute(
        "SELECT note_id, user_id, display_name, message_count FROM note_participants"
        " WHERE note_id = ANY(%s) ORDER BY message_count DESC, user_id",
        (list(note_ids),),
    ).fetchall():
        found[int(note_id)].append(Participant(int(user_id), str(name), int(count)))
    return found


def _notes(conn: PgConnection, rows: Sequence[tuple[Any, ...]]) -> list[Note]:
    people = _participants(conn, [int(r[0]) for r in rows])
    return [
        Note(
            id=int(r[0]),
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
            participants=tuple(people[int(r[0])]),
            source_note_ids=tuple(json.loads(str(r[11]))) if r[11] else (),
            note_date=str(r[12]),
            started_at=r[13],
            ended_at=r[14],
            quality=str(r[15]),
            created_at=float(r[16]),
        )
        for r in rows
    ]


def get_notes(conn: PgConnection, note_ids: Sequence[int]) -> list[Note]:
    """Notes by id, in the order given (missing ids are skipped)."""
    if not note_ids:
        return []
    rows = conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM interaction_notes WHERE id = ANY(%s)", (list(note_ids),)
    ).fetchall()
    by_id = {note.id: note for note in _notes(conn, rows)}
    return [by_id[i] for i in note_ids if i in by_id]


def notes_between(
    conn: PgConnection, guild_id: int, start: float, end: float, note_type: str
) -> list[Note]:
    """A guild's notes of one type that started in [start, end), oldest first."""
    rows = conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM interaction_notes WHERE guild_id = %s AND note_type = %s"
        " AND COALESCE(started_at, created_at) >= %s AND COALESCE(started_at, created_at) < %s"
        " ORDER BY id",
        (guild_id, note_type, start, end),
    ).fetchall()
    return _notes(conn, rows)
