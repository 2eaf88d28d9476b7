"""PostgreSQL storage behind the ``/memory`` commands: profile view, remember and forget,
opt-out, forget-me, server lore and status.

The same behaviour as :mod:`vivy.storage.members`, whose records and pure rules (what a
``/memory forget`` query matches, how a member's names and mentions are recognised) it uses;
only the SQL is PostgreSQL's. Every function runs inside the caller's one transaction and is
scoped to one guild. A forget-me leaves no live row with the member's id or words; their
dead row versions go at PostgreSQL's next vacuum of the tables (autovacuum), where SQLite's
engine merges its FTS segments at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from vivy.errors import StorageError
from vivy.memory.facts import RetiredFact
from vivy.memory.members import (
    BufferedRef,
    ForgetReport,
    GuildStatus,
    MemberProfile,
    RememberOutcome,
)
from vivy.state.profile import ProfilePlan
from vivy.storage.members import (
    FORGOTTEN_SOURCE,
    _mention_pattern,
    _scrub_mentions,
    fact_matches,
    remember_plan,
)
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.evidence import edit_evidence_message, forget_lines
from vivy.storage.postgres.notes import add_member_name
from vivy.storage.postgres.profiles import active_facts, apply_plan, profile_version

__all__ = [
    "add_lore",
    "forget_facts",
    "forget_member",
    "guild_status",
    "is_opted_out",
    "member_profile",
    "opted_out_members",
    "remember_fact",
    "set_opted_out",
]

#: Shortest name searched for in other data during a forget-me (shorter ones match anything).
_MIN_NAME_CHARS = 2


def _count(conn: PgConnection, sql: str, *args: object) -> int:
    """The single number ``sql`` selects."""
    row = conn.execute(sql.encode(), args).fetchone()
    assert row is not None
    return int(row[0])


def _upsert_member(
    conn: PgConnection, guild_id: int, user_id: int, display_name: str, now: float
) -> None:
    """Record the member's current name, keeping opt-outs."""
    conn.execute(
        "INSERT INTO users (id, discord_id, username) VALUES (%s, %s, %s)"
        " ON CONFLICT (discord_id) DO UPDATE SET username = excluded.username",
        (user_id, str(user_id), display_name),
    )
    conn.execute(
        "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
        " display_name = excluded.display_name, updated_at = excluded.updated_at",
        (guild_id, user_id, display_name, now),
    )
    add_member_name(conn, guild_id, user_id, display_name)


def is_opted_out(conn: PgConnection, guild_id: int, user_id: int) -> bool:
    """Whether the member opted out of being remembered in this guild."""
    row = conn.execute(
        "SELECT opted_out FROM guild_members WHERE guild_id = %s AND user_id = %s",
        (guild_id, user_id),
    ).fetchone()
    return bool(row and row[0])


def opted_out_members(conn: PgConnection) -> set[tuple[int, int]]:
    """The (guild id, user id) of every member who opted out."""
    rows = conn.execute("SELECT guild_id, user_id FROM guild_members WHERE opted_out = 1")
    return {(int(g), int(u)) for g, u in rows.fetchall()}


def member_profile(conn: PgConnection, guild_id: int, user_id: int) -> MemberProfile:
    """The member's name, opt-out, active facts (with sources) and number of notes."""
    row = conn.execute(
        "SELECT display_name, opted_out FROM guild_members WHERE guild_id = %s AND user_id = %s",
        (guild_id, user_id),
    ).fetchone()
    notes = _count(
        conn,
        "SELECT COUNT(*) FROM note_participants p JOIN interaction_notes n ON n.id = p.note_id"
        " WHERE n.guild_id = %s AND p.user_id = %s",
        guild_id,
        user_id,
    )
    return MemberProfile(
        user_id=user_id,
        display_name=str(row[0]) if row and row[0] else None,
        opted_out=bool(row and row[1]),
        facts=tuple(active_facts(conn, guild_id, user_id)),
        note_count=notes,
    )


def remember_fact(
    conn: PgConnection,
    guild_id: int,
    user_id: int,
    display_name: str,
    section: str,
    text: str,
    label: str,
    now: float,
) -> RememberOutcome:
    """Store a fact the member stated about themselves; see
    :func:`vivy.storage.members.remember_fact`. A concurrent change of the profile fails the
    call (:class:`StorageError`) rather than folding the wrong fact."""
    _upsert_member(conn, guild_id, user_id, display_name, now)
    plan = remember_plan(active_facts(conn, guild_id, user_id), section, text, label)
    if plan is None:
        return RememberOutcome.DUPLICATE
    version = profile_version(conn, guild_id, user_id)
    if not apply_plan(conn, guild_id, user_id, version, plan, now):
        raise StorageError(f"the profile of {user_id} changed meanwhile; try again")
    return RememberOutcome.STORED


def forget_facts(
    conn: PgConnection, guild_id: int, user_id: int, query: str, now: float
) -> list[str]:
    """Invalidate the member's active facts matching ``query``; returns their texts."""
    matching = [f for f in active_facts(conn, guild_id, user_id) if fact_matches(f.text, query)]
    if not matching:
        return []
    plan = ProfilePlan(
        retired=[RetiredFact(f.id, "forgotten at the member's request") for f in matching]
    )
    version = profile_version(conn, guild_id, user_id)
    if not apply_plan(conn, guild_id, user_id, version, plan, now):
        raise StorageError(f"the profile of {user_id} changed meanwhile; try again")
    return [f.text for f in matching]


def _open_refs(conn: PgConnection, guild_id: int, user_id: int) -> list[BufferedRef]:
    rows = conn.execute(
        "SELECT b.channel_id, m.message_id FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id WHERE b.guild_id = %s"
        " AND b.status = 'open' AND m.author_id = %s ORDER BY m.message_id",
        (guild_id, user_id),
    ).fetchall()
    return [BufferedRef(int(r[0]), int(r[1])) for r in rows]


def _delete_buffered_messages(
    conn: PgConnection, guild_id: int, user_id: int, *, drop_closed_buffers: bool = False
) -> tuple[int, list[BufferedRef]]:
    """Delete the member's buffered messages in the guild; with ``drop_closed_buffers`` a
    closed buffer holding any of them goes whole. Returns how many, and those that were in
    open buffers."""
    refs = _open_refs(conn, guild_id, user_id)
    count = 0
    if drop_closed_buffers:
        count += _count(
            conn,
            "SELECT COUNT(*) FROM buffer_messages m JOIN channel_buffers b ON b.id = m.buffer_id"
            " WHERE b.guild_id = %s AND b.status = 'closed' AND m.author_id = %s",
            guild_id,
            user_id,
        )
        conn.execute(
            "DELETE FROM channel_buffers WHERE guild_id = %s AND status = 'closed' AND id IN"
            " (SELECT buffer_id FROM buffer_messages WHERE author_id = %s)",
            (guild_id, user_id),
        )
    cursor = conn.execute(
        "DELETE FROM buffer_messages WHERE author_id = %s AND buffer_id IN"
        " (SELECT id FROM channel_buffers WHERE guild_id = %s)",
        (user_id, guild_id),
    )
    return count + cursor.rowcount, refs


def set_opted_out(
    conn: PgConnection,
    guild_id: int,
    user_id: int,
    display_name: str,
    opted_out: bool,
    now: float,
) -> list[BufferedRef]:
    """Persist the member's opt-out (or opt-in); opting out deletes their buffered messages
    and their lines kept as evidence. Returns the deleted messages of open buffers."""
    _upsert_member(conn, guild_id, user_id, display_name, now)
    conn.execute(
        "UPDATE guild_members SET opted_out = %s WHERE guild_id = %s AND user_id = %s",
        (int(opted_out), guild_id, user_id),
    )
    if not opted_out:
        return []
    _, refs = _delete_buffered_messages(conn, guild_id, user_id)
    forget_lines(conn, guild_id, user_id)
    return refs


def add_lore(conn: PgConnection, guild_id: int, author_id: int, text: str, now: float) -> int:
    """Store a fact about the server; returns its id."""
    row = conn.execute(
        "INSERT INTO server_lore (guild_id, text, author_id, created_at)"
        " VALUES (%s, %s, %s, %s) RETURNING id",
        (guild_id, text, author_id, now),
    ).fetchone()
    assert row is not None
    return int(row[0])


def guild_status(conn: PgConnection, guild_id: int) -> GuildStatus:
    """Counts of the guild's notes, facts, buffers, pending updates and lore, in one query."""
    row = conn.execute(
        "SELECT"
        " (SELECT COUNT(*) FROM interaction_notes WHERE guild_id = %(g)s"
        "  AND note_type = 'conversation'),"
        " (SELECT COUNT(*) FROM interaction_notes WHERE guild_id = %(g)s"
        "  AND note_type = 'topic_cluster'),"
        " (SELECT COUNT(*) FROM profile_facts WHERE guild_id = %(g)s AND invalidated_at IS NULL),"
        " (SELECT COUNT(DISTINCT user_id) FROM profile_facts WHERE guild_id = %(g)s"
        "  AND invalidated_at IS NULL),"
        " (SELECT COUNT(*) FROM channel_buffers WHERE guild_id = %(g)s AND status = 'open'),"
        " (SELECT COUNT(*) FROM channel_buffers WHERE guild_id = %(g)s AND status = 'closed'),"
        " (SELECT COUNT(*) FROM profile_updates WHERE guild_id = %(g)s AND status = 'pending'),"
        " (SELECT COUNT(*) FROM server_lore WHERE guild_id = %(g)s AND invalidated_at IS NULL),"
        " (SELECT MAX(completed_at) FROM memory_job_log WHERE guild_id = %(g)s)",
        {"g": guild_id},
    ).fetchone()
    assert row is not None
    counts = [int(value) for value in row[:8]]
    return GuildStatus(
        conversation_notes=counts[0],
        topic_clusters=counts[1],
        active_facts=counts[2],
        members_with_facts=counts[3],
        open_buffers=counts[4],
        closed_buffers=counts[5],
        pending_updates=counts[6],
        lore=counts[7],
        last_nightly_job=None if row[8] is None else float(row[8]),
    )


# Forget-me -----------------------------------------------------------------------------------


def _names(conn: PgConnection, guild_id: int, user_id: int) -> set[str]:
    """Every name the member is known by in the guild (and their global username)."""
    rows = conn.execute(
        "SELECT display_name FROM guild_members WHERE guild_id = %(g)s AND user_id = %(u)s"
        " UNION SELECT p.display_name FROM note_participants p"
        " JOIN interaction_notes n ON n.id = p.note_id"
        " WHERE n.guild_id = %(g)s AND p.user_id = %(u)s"
        " UNION SELECT m.author_name FROM buffer_messages m JOIN channel_buffers b"
        " ON b.id = m.buffer_id WHERE b.guild_id = %(g)s AND m.author_id = %(u)s"
        " UNION SELECT l.author_name FROM note_lines l JOIN interaction_notes n"
        " ON n.id = l.note_id WHERE n.guild_id = %(g)s AND l.author_id = %(u)s"
        " UNION SELECT username FROM users WHERE id = %(u)s",
        {"g": guild_id, "u": user_id},
    ).fetchall()
    names = {str(r[0]).strip() for r in rows if r[0]}
    return {name for name in names if len(name) >= _MIN_NAME_CHARS}


def _notes_to_delete(
    conn: PgConnection, guild_id: int, user_id: int, pattern: re.Pattern[str]
) -> list[int]:
    """Notes of the guild the member took part in, wrote lines of, or that mention them."""
    doomed = {
        int(r[0])
        for r in conn.execute(
            "SELECT p.note_id FROM note_participants p JOIN interaction_notes n"
            " ON n.id = p.note_id WHERE n.guild_id = %(g)s AND p.user_id = %(u)s"
            " UNION SELECT l.note_id FROM note_lines l JOIN interaction_notes n"
            " ON n.id = l.note_id WHERE n.guild_id = %(g)s AND l.author_id = %(u)s",
            {"g": guild_id, "u": user_id},
        ).fetchall()
    }
    for row in conn.execute(
        "SELECT id, participants, title, summary, topics, decisions, open_questions, entities"
        " FROM interaction_notes WHERE guild_id = %s",
        (guild_id,),
    ).fetchall():
        note_id = int(row[0])
        if note_id not in doomed and any(pattern.search(str(value or "")) for value in row[1:]):
            doomed.add(note_id)
    return sorted(doomed)


def _delete_notes(conn: PgConnection, note_ids: Sequence[int], user_id: int) -> None:
    """Delete notes with their vectors; other members' facts from them lose the title."""
    if not note_ids:
        return
    ids = list(note_ids)
    conn.execute(
        "UPDATE profile_facts SET source_label = %s WHERE source_note_id = ANY(%s)"
        " AND user_id != %s",
        (FORGOTTEN_SOURCE, ids, user_id),
    )
    conn.execute("DELETE FROM vec_notes WHERE note_id = ANY(%s)", (ids,))
    # note_participants, note_lines, evidence_windows and profile_updates cascade.
    conn.execute("DELETE FROM interaction_notes WHERE id = ANY(%s)", (ids,))


def _delete_facts(conn: PgConnection, fact_ids: Sequence[int]) -> None:
    if not fact_ids:
        return
    ids = list(fact_ids)
    conn.execute(
        "UPDATE profile_facts SET superseded_by = NULL WHERE superseded_by = ANY(%s)", (ids,)
    )
    conn.execute("DELETE FROM profile_facts WHERE id = ANY(%s)", (ids,))


def _scrub_buffered(conn: PgConnection, guild_id: int, user_id: int) -> None:
    """Remove the member's id from other buffered messages' text and mentions in the guild."""
    like = f"%{user_id}%"
    rows = conn.execute(
        "SELECT m.message_id, m.text, m.mentions FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.guild_id = %s AND (m.text LIKE %s OR m.mentions LIKE %s)",
        (guild_id, like, like),
    ).fetchall()
    for message_id, text, mentions in rows:
        kept = [m for m in json.loads(str(mentions)) if int(m) != user_id]
        conn.execute(
            "UPDATE buffer_messages SET text = %s, mentions = %s WHERE message_id = %s",
            (_scrub_mentions(str(text), user_id), json.dumps(kept), message_id),
        )


def _scrub_lines(conn: PgConnection, guild_id: int, user_id: int) -> None:
    """Remove the member's id from other kept lines' text in the guild."""
    rows = conn.execute(
        "SELECT l.message_id, l.text FROM note_lines l JOIN interaction_notes n"
        " ON n.id = l.note_id WHERE n.guild_id = %s AND l.text LIKE %s",
        (guild_id, f"%{user_id}%"),
    ).fetchall()
    for message_id, text in rows:
        edit_evidence_message(conn, int(message_id), _scrub_mentions(str(text), user_id))


def forget_member(conn: PgConnection, guild_id: int, user_id: int) -> ForgetReport:
    """Erase the member from the guild's memory; see
    :func:`vivy.storage.members.forget_member` for what goes."""
    pattern = _mention_pattern(user_id, _names(conn, guild_id, user_id))
    facts = _count(
        conn,
        "SELECT COUNT(*) FROM profile_facts WHERE guild_id = %s AND user_id = %s",
        guild_id,
        user_id,
    )
    pending = _count(
        conn,
        "SELECT COUNT(*) FROM profile_updates WHERE guild_id = %s AND user_id = %s"
        " AND status = 'pending'",
        guild_id,
        user_id,
    )
    messages, refs = _delete_buffered_messages(conn, guild_id, user_id, drop_closed_buffers=True)
    _scrub_buffered(conn, guild_id, user_id)
    doomed = _notes_to_delete(conn, guild_id, user_id, pattern)
    _delete_notes(conn, doomed, user_id)
    forget_lines(conn, guild_id, user_id)
    _scrub_lines(conn, guild_id, user_id)

    own = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM profile_facts WHERE guild_id = %s AND user_id = %s",
            (guild_id, user_id),
        ).fetchall()
    ]
    others = [
        int(r[0])
        for r in conn.execute(
            "SELECT id, text, source_label FROM profile_facts"
            " WHERE guild_id = %s AND user_id != %s",
            (guild_id, user_id),
        ).fetchall()
        if pattern.search(str(r[1])) or pattern.search(str(r[2]))
    ]
    _delete_facts(conn, own + others)
    for table in ("user_profiles", "profile_updates", "member_names"):
        conn.execute(
            f"DELETE FROM {table} WHERE guild_id = %s AND user_id = %s".encode(),
            (guild_id, user_id),
        )
    lore = [
        int(r[0])
        for r in conn.execute(
            "SELECT id, text, author_id FROM server_lore WHERE guild_id = %s", (guild_id,)
        ).fetchall()
        if int(r[2]) == user_id or pattern.search(str(r[1]))
    ]
    if lore:
        conn.execute("DELETE FROM server_lore WHERE id = ANY(%s)", (lore,))
    if is_opted_out(conn, guild_id, user_id):
        conn.execute(
            "UPDATE guild_members SET display_name = '' WHERE guild_id = %s AND user_id = %s",
            (guild_id, user_id),
        )
    else:
        conn.execute(
            "DELETE FROM guild_members WHERE guild_id = %s AND user_id = %s", (guild_id, user_id)
        )
    conn.execute(
        "DELETE FROM users WHERE id = %s AND NOT EXISTS"
        " (SELECT 1 FROM guild_members WHERE user_id = %s AND guild_id != %s)",
        (user_id, user_id, guild_id),
    )
    return ForgetReport(
        facts=facts,
        messages=messages,
        notes=len(doomed),
        other_facts=len(others),
        pending_updates=pending,
        open_messages=tuple(refs),
    )
