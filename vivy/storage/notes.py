"""Storage of interaction notes: conversation notes, topic clusters, and their index rows.

A conversation note is committed in one transaction with everything that depends on it: its
embedding (``vec_notes``), its keyword index row (by trigger, or a generated column on
PostgreSQL), its participants, its source lines (kept until its profile updates are applied),
the deletion of its buffer, and one pending profile-update row per human participant,
carrying the operations the note call already returned for that participant, if any. The
buffer row is read for update first and the buffer id is unique among notes, so committing
the same buffer twice, from one process or two, yields one note.

Written once for both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vivy.memory.dates import note_date
from vivy.memory.evidence import EvidenceLine
from vivy.memory.notes import NewNote, Note, Participant, PlannedUpdate
from vivy.storage.dialect import Tx
from vivy.storage.evidence import insert_windows, lines_of_notes
from vivy.storage.vector_index import vectors_adding

__all__ = [
    "add_member_name",
    "add_member_names",
    "commit_cluster_notes",
    "commit_conversation_note",
    "discard_buffer",
    "get_notes",
    "members_named",
    "note_hits",
    "notes_between",
    "notes_in_range",
]


def _insert_note(tx: Tx, note: NewNote, buffer_id: int | None) -> int:
    """Insert the note, its participants, vector and member rows; returns its id."""
    vectors_adding(tx, note.guild_id)
    note_id = int(
        tx.scalar(
            "INSERT INTO interaction_notes (guild_id, channel_id, channel_name, note_type,"
            " participants, title, summary, topics, decisions, open_questions, entities,"
            " source_note_ids, buffer_id, note_date, quality, model, created_at, started_at,"
            " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " RETURNING id",
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
        )
    )
    tx.dialect.insert_note_vector(tx, note_id, note.guild_id, note.note_type, note.embedding)
    people = note.participants
    tx.executemany(
        "INSERT INTO note_participants (note_id, user_id, display_name, message_count)"
        " VALUES (?, ?, ?, ?)",
        [(note_id, p.user_id, p.display_name, p.message_count) for p in people],
    )
    tx.executemany(
        "INSERT INTO users (id, discord_id, username) VALUES (?, ?, ?)"
        " ON CONFLICT (discord_id) DO UPDATE SET username = excluded.username",
        [(p.user_id, str(p.user_id), p.display_name) for p in people],
    )
    tx.executemany(
        "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
        " display_name = excluded.display_name, updated_at = excluded.updated_at",
        [(note.guild_id, p.user_id, p.display_name, note.created_at) for p in people],
    )
    for p in people:
        add_member_name(tx, note.guild_id, p.user_id, p.display_name)
    return note_id


def add_member_name(tx: Tx, guild_id: int, user_id: int, name: str) -> None:
    """Remember that the member goes by ``name`` in the guild (a nickname, alias or handle)."""
    folded = " ".join(name.lower().split())
    if folded:
        tx.execute(
            "INSERT INTO member_names (guild_id, user_id, name) VALUES (?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            (guild_id, user_id, folded),
        )


def add_member_names(tx: Tx, guild_id: int, names: Sequence[tuple[int, str]]) -> None:
    """Remember that each (user id, name) goes by that name in the guild (an alias)."""
    for user_id, name in names:
        add_member_name(tx, guild_id, user_id, name)


def members_named(tx: Tx, guild_id: int, names: Sequence[str]) -> frozenset[int]:
    """The members of the guild known by any of ``names`` (lower-case word runs)."""
    if not names:
        return frozenset()
    named, params = tx.dialect.any("name", names)
    rows = tx.all(
        f"SELECT DISTINCT user_id FROM member_names WHERE guild_id = ? AND {named}",
        [guild_id, *params],
    )
    return frozenset(int(r[0]) for r in rows)


def notes_in_range(
    tx: Tx, guild_id: int, start: float, end: float, *, note_type: str, limit: int
) -> list[int]:
    """Ids of the guild's notes of one type that overlap ``[start, end)``, newest first."""
    rows = tx.all(
        "SELECT id FROM interaction_notes WHERE guild_id = ? AND note_type = ?"
        " AND note_date BETWEEN ? AND ?"
        " AND COALESCE(started_at, created_at) < ? AND COALESCE(ended_at, created_at) >= ?"
        " ORDER BY COALESCE(ended_at, created_at) DESC, id DESC LIMIT ?",
        (guild_id, note_type, note_date(start - 86400.0), note_date(end), end, start, limit),
    )
    return [int(r[0]) for r in rows]


def commit_conversation_note(
    tx: Tx,
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
    row = tx.one(
        f"SELECT status FROM channel_buffers WHERE id = ?{tx.dialect.for_update}", (buffer_id,)
    )
    if row is None or row[0] != "closed":
        return None
    note_id = _insert_note(tx, note, buffer_id)
    tx.execute(
        "INSERT INTO note_lines (message_id, note_id, author_id, author_name, text, created_at)"
        " SELECT message_id, ?, author_id, author_name, text, created_at FROM buffer_messages"
        " WHERE buffer_id = ?",
        (note_id, buffer_id),
    )
    insert_windows(tx, note_id, note.guild_id, note.windows, note.window_embeddings)
    tx.execute(
        "UPDATE interaction_notes SET (first_message_id, last_message_id, message_count) ="
        " (SELECT MIN(message_id), MAX(message_id), COUNT(*) FROM note_lines WHERE note_id = ?)"
        " WHERE id = ?",
        (note_id, note_id),
    )
    tx.execute("DELETE FROM channel_buffers WHERE id = ?", (buffer_id,))
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
    tx.executemany(
        "INSERT INTO profile_updates (guild_id, user_id, note_id, created_at, next_attempt_at,"
        " operations, basis_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return note_id


def discard_buffer(tx: Tx, buffer_id: int) -> bool:
    """Delete a closed buffer too small to become a note; False if it was already gone."""
    cursor = tx.execute(
        "DELETE FROM channel_buffers WHERE id = ? AND status = 'closed'", (buffer_id,)
    )
    return cursor.rowcount > 0


def commit_cluster_notes(
    tx: Tx, guild_id: int, day: str, clusters: Sequence[NewNote], completed_at: float
) -> list[int]:
    """Store a day's topic clusters and mark the clustering pass done, at most once.

    The pass's log row is claimed first (``ON CONFLICT DO NOTHING``), so of two processes
    running the same (guild, day), or a resumed job, one writes the clusters and the other
    gets an empty list.
    """
    claimed = tx.one(
        "INSERT INTO memory_job_log (guild_id, job_date, pass, completed_at)"
        " VALUES (?, ?, 'clusters', ?) ON CONFLICT DO NOTHING RETURNING 1",
        (guild_id, day, completed_at),
    )
    if claimed is None:
        return []
    return [_insert_note(tx, cluster, None) for cluster in clusters]


_NOTE_COLUMNS = (
    "id, guild_id, channel_id, channel_name, note_type, title, summary, topics, decisions,"
    " open_questions, entities, source_note_ids, note_date, started_at, ended_at, quality,"
    " created_at"
)


def _participants(tx: Tx, note_ids: Sequence[int]) -> dict[int, list[Participant]]:
    found: dict[int, list[Participant]] = {note_id: [] for note_id in note_ids}
    if not note_ids:
        return found
    notes, params = tx.dialect.any("note_id", note_ids)
    for note_id, user_id, name, count in tx.all(
        "SELECT note_id, user_id, display_name, message_count FROM note_participants"
        f" WHERE {notes} ORDER BY message_count DESC, user_id",
        params,
    ):
        found[int(note_id)].append(Participant(int(user_id), str(name), int(count)))
    return found


def _notes(tx: Tx, rows: Sequence[Any]) -> list[Note]:
    people = _participants(tx, [int(r[0]) for r in rows])
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


def get_notes(tx: Tx, note_ids: Sequence[int]) -> list[Note]:
    """Notes by id, in the order given (missing ids are skipped)."""
    if not note_ids:
        return []
    ids, params = tx.dialect.any("id", note_ids)
    rows = tx.all(f"SELECT {_NOTE_COLUMNS} FROM interaction_notes WHERE {ids}", params)
    by_id = {note.id: note for note in _notes(tx, rows)}
    return [by_id[i] for i in note_ids if i in by_id]


def notes_between(tx: Tx, guild_id: int, start: float, end: float, note_type: str) -> list[Note]:
    """A guild's notes of one type that started in [start, end), oldest first."""
    rows = tx.all(
        f"SELECT {_NOTE_COLUMNS} FROM interaction_notes WHERE guild_id = ? AND note_type = ?"
        " AND COALESCE(started_at, created_at) >= ? AND COALESCE(started_at, created_at) < ?"
        " ORDER BY id",
        (guild_id, note_type, start, end),
    )
    return _notes(tx, rows)


def note_hits(
    tx: Tx, guild_id: int, note_ids: Sequence[int], evidence_of: Sequence[int]
) -> tuple[list[Note], dict[int, tuple[EvidenceLine, ...]]]:
    """The guild's notes ``note_ids`` in the order given (another guild's are left out), and
    the evidence lines of those of them in ``evidence_of``, oldest first, by note id."""
    found = [note for note in get_notes(tx, note_ids) if note.guild_id == guild_id]
    ours = {note.id for note in found}
    lines = lines_of_notes(tx, [note_id for note_id in evidence_of if note_id in ours])
    return found, {note_id: tuple(found_lines) for note_id, found_lines in lines.items()}
