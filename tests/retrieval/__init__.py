"""Tests of :mod:`vivy.retrieval`, and the builders they share to store notes, facts and lore."""

from __future__ import annotations

from collections.abc import Sequence

from vivy.actors.note_writer import contextual_text
from vivy.llm.offline import provider
from vivy.memory.dates import note_date
from vivy.memory.notes import NewNote, Participant
from vivy.storage.notes import _insert_note
from vivy.storage.sqlite.db import Connection

#: 2026-03-02T00:00:00Z, the wall time at virtual time zero of every test.
WALL0 = 1772409600.0
DAY = 86400.0


def new_note(
    guild_id: int,
    title: str,
    summary: str,
    *,
    channel_id: int = 10,
    note_type: str = "conversation",
    participants: Sequence[tuple[int, str]] = ((1, "Alex"),),
    topics: Sequence[str] = (),
    entities: Sequence[str] = (),
    at: float = WALL0 - DAY,
) -> NewNote:
    """A note embedded the way the note writer embeds it (the offline provider's embedder)."""
    day = note_date(at)
    names = [name for _, name in participants]
    text = contextual_text("general", day, names, list(topics), title, summary)
    return NewNote(
        guild_id=guild_id,
        channel_id=channel_id,
        channel_name="general",
        note_type=note_type,
        title=title,
        summary=summary,
        topics=tuple(topics),
        decisions=(),
        open_questions=(),
        entities=tuple(entities),
        participants=tuple(Participant(user, name, 1) for user, name in participants),
        note_date=day,
        quality="offline",
        model="test",
        embedding=provider.shared_embedder().embed([text])[0],
        created_at=at,
        started_at=at - 3600.0,
        ended_at=at,
    )


def add_note(conn: Connection, note: NewNote) -> int:
    """Store a note with its vector, FTS row and participants; returns its id."""
    return _insert_note(conn, note, None)


def add_fact(
    conn: Connection,
    guild_id: int,
    user_id: int,
    section: str,
    text: str,
    label: str,
    *,
    kind: str = "note",
    at: float = WALL0 - DAY,
) -> int:
    """Store an active profile fact; returns its id."""
    cursor = conn.execute(
        "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
        " source_label, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (guild_id, user_id, section, text, kind, label, at),
    )
    return int(cursor.lastrowid or 0)


def add_lore(conn: Connection, guild_id: int, text: str, *, at: float = WALL0 - DAY) -> int:
    """Store an active line of server lore; returns its id."""
    cursor = conn.execute(
        "INSERT INTO server_lore (guild_id, text, author_id, created_at) VALUES (?, ?, 1, ?)",
        (guild_id, text, at),
    )
    return int(cursor.lastrowid or 0)


def add_member(
    conn: Connection, guild_id: int, user_id: int, name: str, *, opted_out: bool = False
) -> None:
    """Record a guild member's display name (and opt-out)."""
    conn.execute(
        "INSERT INTO guild_members (guild_id, user_id, display_name, opted_out, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
        " display_name = excluded.display_name, opted_out = excluded.opted_out",
        (guild_id, user_id, name, int(opted_out), WALL0),
    )
