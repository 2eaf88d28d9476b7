"""Storage behind the ``/memory`` commands: what members see, state, forget and opt out of.

Every function takes the connection first and runs inside the caller's one transaction
(``db.read`` / ``db.write``). Everything is scoped to one guild: a member's data in another
guild is never read or changed. :func:`forget_member` is the right to be forgotten: after it
no table holds the member's id or the text of their messages in that guild (one exception: a
member who opted out keeps a bare opt-out row, without a name, so the opt-out is honoured).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from vivy.memory.facts import Fact, NewFact, RetiredFact
from vivy.memory.guards import content_tokens
from vivy.memory.members import (
    BufferedRef,
    ForgetReport,
    GuildStatus,
    MemberProfile,
    RememberOutcome,
)
from vivy.memory.notes import NoteType
from vivy.state.profile import PROFILE_CAP, SECTION_CAP, ProfilePlan
from vivy.storage.db import Connection
from vivy.storage.evidence import edit_evidence_message, forget_lines, optimize_evidence_index
from vivy.storage.notes import add_member_name
from vivy.storage.profiles import active_facts, apply_plan, profile_version
from vivy.storage.vector_index import vectors_replaced

__all__ = [
    "FORGOTTEN_SOURCE",
    "MATCH_THRESHOLD",
    "add_lore",
    "delete_buffered_messages",
    "fact_matches",
    "forget_facts",
    "forget_member",
    "guild_status",
    "is_opted_out",
    "member_profile",
    "opted_out_members",
    "remember_fact",
    "remember_plan",
    "set_opted_out",
    "upsert_member",
]

#: Share of a ``/memory forget`` query's words a fact must contain to match.
MATCH_THRESHOLD = 0.5

#: Source label given to other members' facts whose note was removed by a forget-me.
FORGOTTEN_SOURCE = "a forgotten conversation"

#: Shortest name searched for in other data during a forget-me (shorter ones match anything).
_MIN_NAME_CHARS = 2


def upsert_member(
    conn: Connection, guild_id: int, user_id: int, display_name: str, now: float
) -> None:
    """Record the member's current name (``users``, ``guild_members`` and the names they are
    known by), keeping opt-outs."""
    conn.execute(
        "INSERT INTO users (id, discord_id, username) VALUES (?, ?, ?)"
        " ON CONFLICT (discord_id) DO UPDATE SET username = excluded.username",
        (user_id, str(user_id), display_name),
    )
    conn.execute(
        "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
        " display_name = excluded.display_name, updated_at = excluded.updated_at",
        (guild_id, user_id, display_name, now),
    )
    add_member_name(conn, guild_id, user_id, display_name)


def is_opted_out(conn: Connection, guild_id: int, user_id: int) -> bool:
    """Whether the member opted out of being remembered in this guild."""
    row = conn.execute(
        "SELECT opted_out FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    ).fetchone()
    return bool(row and row[0])


def opted_out_members(conn: Connection) -> set[tuple[int, int]]:
    """The (guild id, user id) of every member who opted out."""
    rows = conn.execute("SELECT guild_id, user_id FROM guild_members WHERE opted_out = 1")
    return {(int(g), int(u)) for g, u in rows.fetchall()}


def member_profile(conn: Connection, guild_id: int, user_id: int) -> MemberProfile:
    """The member's name, opt-out, active facts (with sources) and number of notes."""
    row = conn.execute(
        "SELECT display_name, opted_out FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    ).fetchone()
    notes = conn.execute(
        "SELECT COUNT(*) FROM note_participants p JOIN interaction_notes n ON n.id = p.note_id"
        " WHERE n.guild_id = ? AND p.user_id = ?",
        (guild_id, user_id),
    ).fetchone()[0]
    return MemberProfile(
        user_id=user_id,
        display_name=str(row[0]) if row and row[0] else None,
        opted_out=bool(row and row[1]),
        facts=tuple(active_facts(conn, guild_id, user_id)),
        note_count=int(notes),
    )


def _same_fact(a: str, b: str) -> bool:
    tokens = content_tokens(a)
    return bool(tokens) and tokens == content_tokens(b)


def remember_fact(
    conn: Connection,
    guild_id: int,
    user_id: int,
    display_name: str,
    section: str,
    text: str,
    label: str,
    now: float,
) -> RememberOutcome:
    """Store a fact the member stated about themselves (source kind ``stated``).

    The text must already have passed the guards. A fact with the same content words as an
    active one is not stored twice. When the section or the profile is full, the oldest fact
    learnt from conversation (else the oldest stated one) is retired to make room.
    """
    upsert_member(conn, guild_id, user_id, display_name, now)
    plan = remember_plan(active_facts(conn, guild_id, user_id), section, text, label)
    if plan is None:
        return RememberOutcome.DUPLICATE
    applied = apply_plan(
        conn, guild_id, user_id, profile_version(conn, guild_id, user_id), plan, now
    )
    assert applied, "the version was read in this transaction"
    return RememberOutcome.STORED


def remember_plan(facts: Sequence[Fact], section: str, text: str, label: str) -> ProfilePlan | None:
    """The plan that stores a stated fact over the member's active ``facts``, or None when
    one of them says the same (the same content words).

    When the section or the profile is full, the oldest fact learnt from conversation (else
    the oldest stated one) is retired to make room.
    """
    if any(_same_fact(f.text, text) for f in facts):
        return None
    retire: list[RetiredFact] = []
    oldest_first = sorted(facts, key=lambda f: (f.source_kind == "stated", f.created_at, f.id))
    in_section = [f for f in oldest_first if f.section == section]
    if len(in_section) >= SECTION_CAP:
        retire.append(RetiredFact(in_section[0].id, "folded: section full"))
    elif len(facts) >= PROFILE_CAP:
        retire.append(RetiredFact(oldest_first[0].id, "folded: profile full"))
    return ProfilePlan(added=[NewFact(section, text, "stated", None, label)], retired=retire)


def fact_matches(fact: str, query: str, *, threshold: float = MATCH_THRESHOLD) -> bool:
    """Whether a fact is what a ``/memory forget`` query names.

    Either text contains the other (ignoring case, spacing and punctuation), or the fact
    holds at least ``threshold`` of the query's content words.
    """
    compact_fact = _compact(fact)
    compact_query = _compact(query)
    if not compact_query:
        return False
    if compact_query in compact_fact or (compact_fact and compact_fact in compact_query):
        return True
    words = content_tokens(query)
    if not words:
        return False
    return len(words & content_tokens(fact)) / len(words) >= threshold


def _compact(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def forget_facts(
    conn: Connection, guild_id: int, user_id: int, query: str, now: float
) -> list[str]:
    """Invalidate the member's active facts matching ``query``; returns their texts.

    The facts stay in the history with the reason ``forgotten at the member's request``.
    """
    matching = [f for f in active_facts(conn, guild_id, user_id) if fact_matches(f.text, query)]
    if not matching:
        return []
    plan = ProfilePlan(
        retired=[RetiredFact(f.id, "forgotten at the member's request") for f in matching]
    )
    apply_plan(conn, guild_id, user_id, profile_version(conn, guild_id, user_id), plan, now)
    return [f.text for f in matching]


def _open_refs(conn: Connection, guild_id: int, user_id: int) -> list[BufferedRef]:
    rows = conn.execute(
        "SELECT b.channel_id, m.message_id FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.guild_id = ? AND b.status = 'open' AND m.author_id = ? ORDER BY m.message_id",
        (guild_id, user_id),
    ).fetchall()
    return [BufferedRef(int(r[0]), int(r[1])) for r in rows]


def delete_buffered_messages(
    conn: Connection, guild_id: int, user_id: int, *, drop_closed_buffers: bool = False
) -> tuple[int, list[BufferedRef]]:
    """Delete the member's buffered messages in the guild.

    Returns how many were deleted and those that were in open buffers (their channel actors
    must be told, through the router). With ``drop_closed_buffers`` a closed buffer holding
    any of them is deleted whole, so a note being written from it is never committed.
    """
    refs = _open_refs(conn, guild_id, user_id)
    count = 0
    if drop_closed_buffers:
        count += conn.execute(
            "SELECT COUNT(*) FROM buffer_messages m JOIN channel_buffers b ON b.id = m.buffer_id"
            " WHERE b.guild_id = ? AND b.status = 'closed' AND m.author_id = ?",
            (guild_id, user_id),
        ).fetchone()[0]
        conn.execute(
            "DELETE FROM channel_buffers WHERE guild_id = ? AND status = 'closed' AND id IN"
            " (SELECT buffer_id FROM buffer_messages WHERE author_id = ?)",
            (guild_id, user_id),
        )
    cursor = conn.execute(
        "DELETE FROM buffer_messages WHERE author_id = ? AND buffer_id IN"
        " (SELECT id FROM channel_buffers WHERE guild_id = ?)",
        (user_id, guild_id),
    )
    return count + cursor.rowcount, refs


def set_opted_out(
    conn: Connection,
    guild_id: int,
    user_id: int,
    display_name: str,
    opted_out: bool,
    now: float,
) -> list[BufferedRef]:
    """Persist the member's opt-out (or opt-in); opting out deletes their buffered messages
    and the lines of theirs that notes keep as evidence.

    Returns the deleted messages that were in open buffers.
    """
    upsert_member(conn, guild_id, user_id, display_name, now)
    conn.execute(
        "UPDATE guild_members SET opted_out = ? WHERE guild_id = ? AND user_id = ?",
        (int(opted_out), guild_id, user_id),
    )
    if not opted_out:
        return []
    _, refs = delete_buffered_messages(conn, guild_id, user_id)
    forget_lines(conn, guild_id, user_id)
    optimize_evidence_index(conn)
    return refs


def add_lore(conn: Connection, guild_id: int, author_id: int, text: str, now: float) -> int:
    """Store a fact about the server; returns its id."""
    cursor = conn.execute(
        "INSERT INTO server_lore (guild_id, text, author_id, created_at) VALUES (?, ?, ?, ?)",
        (guild_id, text, author_id, now),
    )
    return int(cursor.lastrowid or 0)


def guild_status(conn: Connection, guild_id: int) -> GuildStatus:
    """Counts of the guild's notes, facts, buffers, pending updates and lore."""

    def count(sql: str, *args: object) -> int:
        return int(conn.execute(sql, (guild_id, *args)).fetchone()[0])

    last = conn.execute(
        "SELECT MAX(completed_at) FROM memory_job_log WHERE guild_id = ?", (guild_id,)
    ).fetchone()[0]
    return GuildStatus(
        conversation_notes=count(
            "SELECT COUNT(*) FROM interaction_notes WHERE guild_id = ? AND note_type = ?",
            NoteType.CONVERSATION,
        ),
        topic_clusters=count(
            "SELECT COUNT(*) FROM interaction_notes WHERE guild_id = ? AND note_type = ?",
            NoteType.TOPIC_CLUSTER,
        ),
        active_facts=count(
            "SELECT COUNT(*) FROM profile_facts WHERE guild_id = ? AND invalidated_at IS NULL"
        ),
        members_with_facts=count(
            "SELECT COUNT(DISTINCT user_id) FROM profile_facts"
            " WHERE guild_id = ? AND invalidated_at IS NULL"
        ),
        open_buffers=count(
            "SELECT COUNT(*) FROM channel_buffers WHERE guild_id = ? AND status = ?", "open"
        ),
        closed_buffers=count(
            "SELECT COUNT(*) FROM channel_buffers WHERE guild_id = ? AND status = ?", "closed"
        ),
        pending_updates=count(
            "SELECT COUNT(*) FROM profile_updates WHERE guild_id = ? AND status = ?", "pending"
        ),
        lore=count(
            "SELECT COUNT(*) FROM server_lore WHERE guild_id = ? AND invalidated_at IS NULL"
        ),
        last_nightly_job=float(last) if last is not None else None,
    )


# Forget-me -----------------------------------------------------------------------------------


def _names(conn: Connection, guild_id: int, user_id: int) -> set[str]:
    """Every name the member is known by in the guild (and their global username)."""
    queries = (
        ("SELECT display_name FROM guild_members WHERE guild_id = ? AND user_id = ?", True),
        (
            "SELECT p.display_name FROM note_participants p"
            " JOIN interaction_notes n ON n.id = p.note_id WHERE n.guild_id = ? AND p.user_id = ?",
            True,
        ),
        (
            "SELECT m.author_name FROM buffer_messages m JOIN channel_buffers b"
            " ON b.id = m.buffer_id WHERE b.guild_id = ? AND m.author_id = ?",
            True,
        ),
        (
            "SELECT author_name FROM note_lines l JOIN interaction_notes n ON n.id = l.note_id"
            " WHERE n.guild_id = ? AND l.author_id = ?",
            True,
        ),
        ("SELECT username FROM users WHERE id = ?", False),
    )
    names: set[str] = set()
    for sql, scoped in queries:
        args = (guild_id, user_id) if scoped else (user_id,)
        names.update(str(r[0]).strip() for r in conn.execute(sql, args).fetchall() if r[0])
    return {name for name in names if len(name) >= _MIN_NAME_CHARS}


def _mention_pattern(user_id: int, names: Iterable[str]) -> re.Pattern[str]:
    """Matches the member's id anywhere, or one of their names as a whole word."""
    parts = [re.escape(str(user_id))]
    parts += [rf"(?<!\w){re.escape(name)}(?!\w)" for name in sorted(names, key=len, reverse=True)]
    return re.compile("|".join(parts), re.IGNORECASE)


def _scrub_mentions(text: str, user_id: int) -> str:
    """``text`` with Discord mentions of the member replaced by a neutral word."""
    return re.sub(rf"<@!?{user_id}>", "@someone", text)


def _notes_to_delete(
    conn: Connection, guild_id: int, user_id: int, pattern: re.Pattern[str]
) -> list[int]:
    """Notes of the guild the member took part in, wrote lines of, or that mention them."""
    doomed = {
        int(r[0])
        for r in conn.execute(
            "SELECT p.note_id FROM note_participants p JOIN interaction_notes n ON n.id = p.note_id"
            " WHERE n.guild_id = ? AND p.user_id = ?"
            " UNION SELECT l.note_id FROM note_lines l JOIN interaction_notes n ON n.id = l.note_id"
            " WHERE n.guild_id = ? AND l.author_id = ?",
            (guild_id, user_id, guild_id, user_id),
        ).fetchall()
    }
    for row in conn.execute(
        "SELECT id, participants, title, summary, topics, decisions, open_questions, entities"
        " FROM interaction_notes WHERE guild_id = ?",
        (guild_id,),
    ).fetchall():
        note_id = int(row[0])
        if note_id in doomed:
            continue
        if any(pattern.search(str(value or "")) for value in tuple(row)[1:]):
            doomed.add(note_id)
    return sorted(doomed)


def _delete_notes(conn: Connection, note_ids: Sequence[int], user_id: int) -> None:
    """Delete notes with their index rows; other members' facts from them lose the title."""
    if not note_ids:
        return
    marks = ",".join("?" * len(note_ids))
    conn.execute(
        f"UPDATE profile_facts SET source_label = ? WHERE source_note_id IN ({marks})"
        " AND user_id != ?",
        (FORGOTTEN_SOURCE, *note_ids, user_id),
    )
    vectors_replaced(conn, note_ids)
    conn.execute(f"DELETE FROM vec_notes WHERE note_id IN ({marks})", list(note_ids))
    # note_participants, note_lines and profile_updates cascade; the FTS triggers fire.
    conn.execute(f"DELETE FROM interaction_notes WHERE id IN ({marks})", list(note_ids))
    # Merge the keyword index so deleted notes' terms leave its segments too.
    conn.execute("INSERT INTO notes_fts (notes_fts) VALUES ('optimize')")


def _delete_facts(conn: Connection, fact_ids: Sequence[int]) -> None:
    if not fact_ids:
        return
    marks = ",".join("?" * len(fact_ids))
    conn.execute(
        f"UPDATE profile_facts SET superseded_by = NULL WHERE superseded_by IN ({marks})",
        list(fact_ids),
    )
    conn.execute(f"DELETE FROM profile_facts WHERE id IN ({marks})", list(fact_ids))


def _scrub_rows(conn: Connection, table: str, guild_id: int, user_id: int) -> None:
    """Remove the member's id from other messages' text (and mentions) in the guild."""
    like = f"%{user_id}%"
    if table == "buffer_messages":
        rows = conn.execute(
            "SELECT m.message_id, m.text, m.mentions FROM buffer_messages m"
            " JOIN channel_buffers b ON b.id = m.buffer_id"
            " WHERE b.guild_id = ? AND (m.text LIKE ? OR m.mentions LIKE ?)",
            (guild_id, like, like),
        ).fetchall()
        for message_id, text, mentions in rows:
            kept = [m for m in json.loads(str(mentions)) if int(m) != user_id]
            conn.execute(
                "UPDATE buffer_messages SET text = ?, mentions = ? WHERE message_id = ?",
                (_scrub_mentions(str(text), user_id), json.dumps(kept), message_id),
            )
    else:
        rows = conn.execute(
            "SELECT l.message_id, l.text FROM note_lines l JOIN interaction_notes n"
            " ON n.id = l.note_id WHERE n.guild_id = ? AND l.text LIKE ?",
            (guild_id, like),
        ).fetchall()
        for message_id, text in rows:
            edit_evidence_message(conn, int(message_id), _scrub_mentions(str(text), user_id))


def forget_member(conn: Connection, guild_id: int, user_id: int) -> ForgetReport:
    """Erase the member from the guild's memory; see the module docstring.

    Deleted: their profile facts (with the invalidated history), profile row and profile
    updates; their buffered messages (a closed buffer holding any is dropped whole); every
    note they took part in or that mentions their name or id, with its vector, keyword and
    source rows; other members' facts and the server lore that mention them; their member and
    user rows. Other messages lose their mentions of the member.
    """
    names = _names(conn, guild_id, user_id)
    pattern = _mention_pattern(user_id, names)
    facts = int(
        conn.execute(
            "SELECT COUNT(*) FROM profile_facts WHERE guild_id = ? AND user_id = ?",
            (guild_id, user_id),
        ).fetchone()[0]
    )
    pending = int(
        conn.execute(
            "SELECT COUNT(*) FROM profile_updates WHERE guild_id = ? AND user_id = ?"
            " AND status = 'pending'",
            (guild_id, user_id),
        ).fetchone()[0]
    )
    messages, refs = delete_buffered_messages(conn, guild_id, user_id, drop_closed_buffers=True)
    _scrub_rows(conn, "buffer_messages", guild_id, user_id)

    doomed = _notes_to_delete(conn, guild_id, user_id, pattern)
    _delete_notes(conn, doomed, user_id)
    forget_lines(conn, guild_id, user_id)
    _scrub_rows(conn, "note_lines", guild_id, user_id)
    optimize_evidence_index(conn)

    own = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM profile_facts WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
        ).fetchall()
    ]
    others = [
        int(r[0])
        for r in conn.execute(
            "SELECT id, text, source_label FROM profile_facts WHERE guild_id = ? AND user_id != ?",
            (guild_id, user_id),
        ).fetchall()
        if pattern.search(str(r[1])) or pattern.search(str(r[2]))
    ]
    _delete_facts(conn, own + others)
    conn.execute(
        "DELETE FROM user_profiles WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
    )
    conn.execute(
        "DELETE FROM profile_updates WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
    )
    lore = [
        int(r[0])
        for r in conn.execute(
            "SELECT id, text, author_id FROM server_lore WHERE guild_id = ?", (guild_id,)
        ).fetchall()
        if int(r[2]) == user_id or pattern.search(str(r[1]))
    ]
    if lore:
        marks = ",".join("?" * len(lore))
        conn.execute(f"DELETE FROM server_lore WHERE id IN ({marks})", lore)

    conn.execute("DELETE FROM member_names WHERE guild_id = ? AND user_id = ?", (guild_id, user_id))
    if is_opted_out(conn, guild_id, user_id):
        conn.execute(
            "UPDATE guild_members SET display_name = '' WHERE guild_id = ? AND user_id = ?",
            (guild_id, user_id),
        )
    else:
        conn.execute(
            "DELETE FROM guild_members WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
        )
    elsewhere = conn.execute(
        "SELECT 1 FROM guild_members WHERE user_id = ? AND guild_id != ? LIMIT 1",
        (user_id, guild_id),
    ).fetchone()
    if elsewhere is None:
        conn.execute("DELETE FROM users WHERE id = ?", (user_id,))
    return ForgetReport(
        facts=facts,
        messages=messages,
        notes=len(doomed),
        other_facts=len(others),
        pending_updates=pending,
        open_messages=tuple(refs),
    )
