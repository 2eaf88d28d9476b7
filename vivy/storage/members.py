"""Storage behind the ``/memory`` commands: what members see, state, forget and opt out of.

Every function runs inside the caller's one transaction. Everything is scoped to one guild: a
member's data in another guild is never read or changed. :func:`forget_member` is the right
to be forgotten: after it no table holds the member's id or the text of their messages in
that guild (one exception: a member who opted out keeps a bare opt-out row, without a name,
so the opt-out is honoured). The keyword indexes are purged of the deleted words at once
(FTS5 merges its segments); on PostgreSQL the dead row versions go at the next vacuum.

Written once for both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from vivy.errors import StorageError
from vivy.memory.facts import Fact, NewFact, RetiredFact
from vivy.memory.guards import content_tokens
from vivy.memory.members import (
    BufferedRef,
    ForgetReport,
    GuildStatus,
    MemberProfile,
    RememberOutcome,
)
from vivy.state.profile import PROFILE_CAP, SECTION_CAP, ProfilePlan
from vivy.storage.dialect import Tx
from vivy.storage.evidence import edit_evidence_message, forget_lines, purge_evidence_index
from vivy.storage.notes import add_member_name
from vivy.storage.profiles import active_facts, apply_plan, profile_version
from vivy.storage.vector_index import vectors_replaced

__all__ = [
    "FORGOTTEN_SOURCE",
    "MATCH_THRESHOLD",
    "add_lore",
    "delete_buffered_messages",
    "delete_facts",
    "delete_notes",
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


def _count(tx: Tx, sql: str, *args: object) -> int:
    """The single number ``sql`` selects."""
    return int(tx.scalar(sql, args))


def upsert_member(tx: Tx, guild_id: int, user_id: int, display_name: str, now: float) -> None:
    """Record the member's current name (``users``, ``guild_members`` and the names they are
    known by), keeping opt-outs."""
    tx.execute(
        "INSERT INTO users (id, discord_id, username) VALUES (?, ?, ?)"
        " ON CONFLICT (discord_id) DO UPDATE SET username = excluded.username",
        (user_id, str(user_id), display_name),
    )
    tx.execute(
        "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
        " display_name = excluded.display_name, updated_at = excluded.updated_at",
        (guild_id, user_id, display_name, now),
    )
    add_member_name(tx, guild_id, user_id, display_name)


def is_opted_out(tx: Tx, guild_id: int, user_id: int) -> bool:
    """Whether the member opted out of being remembered in this guild."""
    row = tx.one(
        "SELECT opted_out FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    )
    return bool(row and row[0])


def opted_out_members(tx: Tx) -> set[tuple[int, int]]:
    """The (guild id, user id) of every member who opted out."""
    rows = tx.all("SELECT guild_id, user_id FROM guild_members WHERE opted_out = 1")
    return {(int(g), int(u)) for g, u in rows}


def member_profile(tx: Tx, guild_id: int, user_id: int) -> MemberProfile:
    """The member's name, opt-out, active facts (with sources) and number of notes."""
    row = tx.one(
        "SELECT display_name, opted_out FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    )
    notes = _count(
        tx,
        "SELECT COUNT(*) FROM note_participants p JOIN interaction_notes n ON n.id = p.note_id"
        " WHERE n.guild_id = ? AND p.user_id = ?",
        guild_id,
        user_id,
    )
    return MemberProfile(
        user_id=user_id,
        display_name=str(row[0]) if row and row[0] else None,
        opted_out=bool(row and row[1]),
        facts=tuple(active_facts(tx, guild_id, user_id)),
        note_count=notes,
    )


def _same_fact(a: str, b: str) -> bool:
    tokens = content_tokens(a)
    return bool(tokens) and tokens == content_tokens(b)


def remember_fact(
    tx: Tx,
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
    learnt from conversation (else the oldest stated one) is retired to make room. A
    concurrent change of the profile fails the call rather than folding the wrong fact.
    """
    upsert_member(tx, guild_id, user_id, display_name, now)
    plan = remember_plan(active_facts(tx, guild_id, user_id), section, text, label)
    if plan is None:
        return RememberOutcome.DUPLICATE
    _apply_now(tx, guild_id, user_id, plan, now)
    return RememberOutcome.STORED


def _apply_now(tx: Tx, guild_id: int, user_id: int, plan: ProfilePlan, now: float) -> None:
    """Apply ``plan`` over the profile as it stands in this transaction."""
    if not apply_plan(tx, guild_id, user_id, profile_version(tx, guild_id, user_id), plan, now):
        raise StorageError(f"the profile of {user_id} changed meanwhile; try again")


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


def forget_facts(tx: Tx, guild_id: int, user_id: int, query: str, now: float) -> list[str]:
    """Invalidate the member's active facts matching ``query``; returns their texts.

    The facts stay in the history with the reason ``forgotten at the member's request``.
    """
    matching = [f for f in active_facts(tx, guild_id, user_id) if fact_matches(f.text, query)]
    if not matching:
        return []
    plan = ProfilePlan(
        retired=[RetiredFact(f.id, "forgotten at the member's request") for f in matching]
    )
    _apply_now(tx, guild_id, user_id, plan, now)
    return [f.text for f in matching]


def _open_refs(tx: Tx, guild_id: int, user_id: int) -> list[BufferedRef]:
    rows = tx.all(
        "SELECT b.channel_id, m.message_id FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.guild_id = ? AND b.status = 'open' AND m.author_id = ? ORDER BY m.message_id",
        (guild_id, user_id),
    )
    return [BufferedRef(int(r[0]), int(r[1])) for r in rows]


def delete_buffered_messages(
    tx: Tx, guild_id: int, user_id: int, *, drop_closed_buffers: bool = False
) -> tuple[int, list[BufferedRef]]:
    """Delete the member's buffered messages in the guild.

    Returns how many were deleted and those that were in open buffers (their channel actors
    must be told, through the router). With ``drop_closed_buffers`` a closed buffer holding
    any of them is deleted whole, so a note being written from it is never committed.
    """
    refs = _open_refs(tx, guild_id, user_id)
    count = 0
    if drop_closed_buffers:
        count += _count(
            tx,
            "SELECT COUNT(*) FROM buffer_messages m JOIN channel_buffers b ON b.id = m.buffer_id"
            " WHERE b.guild_id = ? AND b.status = 'closed' AND m.author_id = ?",
            guild_id,
            user_id,
        )
        tx.execute(
            "DELETE FROM channel_buffers WHERE guild_id = ? AND status = 'closed' AND id IN"
            " (SELECT buffer_id FROM buffer_messages WHERE author_id = ?)",
            (guild_id, user_id),
        )
    cursor = tx.execute(
        "DELETE FROM buffer_messages WHERE author_id = ? AND buffer_id IN"
        " (SELECT id FROM channel_buffers WHERE guild_id = ?)",
        (user_id, guild_id),
    )
    return count + cursor.rowcount, refs


def set_opted_out(
    tx: Tx,
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
    upsert_member(tx, guild_id, user_id, display_name, now)
    tx.execute(
        "UPDATE guild_members SET opted_out = ? WHERE guild_id = ? AND user_id = ?",
        (int(opted_out), guild_id, user_id),
    )
    if not opted_out:
        return []
    _, refs = delete_buffered_messages(tx, guild_id, user_id)
    forget_lines(tx, guild_id, user_id)
    purge_evidence_index(tx)
    return refs


def add_lore(tx: Tx, guild_id: int, author_id: int, text: str, now: float) -> int:
    """Store a fact about the server; returns its id."""
    return int(
        tx.scalar(
            "INSERT INTO server_lore (guild_id, text, author_id, created_at)"
            " VALUES (?, ?, ?, ?) RETURNING id",
            (guild_id, text, author_id, now),
        )
    )


def guild_status(tx: Tx, guild_id: int) -> GuildStatus:
    """Counts of the guild's notes, facts, buffers, pending updates and lore, in one query."""
    row = tx.one(
        "SELECT"
        " (SELECT COUNT(*) FROM interaction_notes WHERE guild_id = :g"
        "  AND note_type = 'conversation'),"
        " (SELECT COUNT(*) FROM interaction_notes WHERE guild_id = :g"
        "  AND note_type = 'topic_cluster'),"
        " (SELECT COUNT(*) FROM profile_facts WHERE guild_id = :g AND invalidated_at IS NULL),"
        " (SELECT COUNT(DISTINCT user_id) FROM profile_facts WHERE guild_id = :g"
        "  AND invalidated_at IS NULL),"
        " (SELECT COUNT(*) FROM channel_buffers WHERE guild_id = :g AND status = 'open'),"
        " (SELECT COUNT(*) FROM channel_buffers WHERE guild_id = :g AND status = 'closed'),"
        " (SELECT COUNT(*) FROM profile_updates WHERE guild_id = :g AND status = 'pending'),"
        " (SELECT COUNT(*) FROM server_lore WHERE guild_id = :g AND invalidated_at IS NULL),"
        " (SELECT MAX(completed_at) FROM memory_job_log WHERE guild_id = :g)",
        {"g": guild_id},
    )
    counts = [int(value) for value in tuple(row)[:8]]
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


def _names(tx: Tx, guild_id: int, user_id: int) -> set[str]:
    """Every name the member is known by in the guild (and their global username)."""
    rows = tx.all(
        "SELECT display_name FROM guild_members WHERE guild_id = :g AND user_id = :u"
        " UNION SELECT p.display_name FROM note_participants p"
        " JOIN interaction_notes n ON n.id = p.note_id"
        " WHERE n.guild_id = :g AND p.user_id = :u"
        " UNION SELECT m.author_name FROM buffer_messages m JOIN channel_buffers b"
        " ON b.id = m.buffer_id WHERE b.guild_id = :g AND m.author_id = :u"
        " UNION SELECT l.author_name FROM note_lines l JOIN interaction_notes n"
        " ON n.id = l.note_id WHERE n.guild_id = :g AND l.author_id = :u"
        " UNION SELECT username FROM users WHERE id = :u",
        {"g": guild_id, "u": user_id},
    )
    names = {str(r[0]).strip() for r in rows if r[0]}
    return {name for name in names if len(name) >= _MIN_NAME_CHARS}


def _mention_pattern(user_id: int, names: Iterable[str]) -> re.Pattern[str]:
    """Matches the member's id anywhere, or one of their names as a whole word."""
    parts = [re.escape(str(user_id))]
    parts += [rf"(?<!\w){re.escape(name)}(?!\w)" for name in sorted(names, key=len, reverse=True)]
    return re.compile("|".join(parts), re.IGNORECASE)


def _scrub_mentions(text: str, user_id: int) -> str:
    """``text`` with Discord mentions of the member replaced by a neutral word."""
    return re.sub(rf"<@!?{user_id}>", "@someone", text)


#: What the corrections log says of a removed fact of a member who was later forgotten.
FORGOTTEN_TARGET = "a fact of a member since forgotten"


def _scrub_corrections(tx: Tx, guild_id: int, user_id: int, pattern: re.Pattern[str]) -> None:
    """Clear the member from the guild's corrections log: a correction concerning them keeps
    only that it happened, and a quote that names them goes."""
    for row_id, concerned, target, quote in tx.all(
        "SELECT id, user_id, target, quote FROM memory_corrections WHERE guild_id = ?",
        (guild_id,),
    ):
        if concerned is not None and int(concerned) == user_id:
            tx.execute(
                "UPDATE memory_corrections SET target = ?, quote = NULL, user_id = NULL"
                " WHERE id = ?",
                (FORGOTTEN_TARGET, row_id),
            )
        elif pattern.search(str(target)) or (quote is not None and pattern.search(str(quote))):
            tx.execute(
                "UPDATE memory_corrections SET target = ?, quote = NULL WHERE id = ?",
                (pattern.sub("a forgotten member", str(target)), row_id),
            )


def _notes_to_delete(tx: Tx, guild_id: int, user_id: int, pattern: re.Pattern[str]) -> list[int]:
    """Notes of the guild the member took part in, wrote lines of, or that mention them."""
    doomed = {
        int(r[0])
        for r in tx.all(
            "SELECT p.note_id FROM note_participants p JOIN interaction_notes n"
            " ON n.id = p.note_id WHERE n.guild_id = :g AND p.user_id = :u"
            " UNION SELECT l.note_id FROM note_lines l JOIN interaction_notes n"
            " ON n.id = l.note_id WHERE n.guild_id = :g AND l.author_id = :u",
            {"g": guild_id, "u": user_id},
        )
    }
    for row in tx.all(
        "SELECT id, participants, title, summary, topics, decisions, open_questions, entities"
        " FROM interaction_notes WHERE guild_id = ?",
        (guild_id,),
    ):
        note_id = int(row[0])
        if note_id not in doomed and any(
            pattern.search(str(value or "")) for value in tuple(row)[1:]
        ):
            doomed.add(note_id)
    return sorted(doomed)


def delete_notes(tx: Tx, note_ids: Sequence[int], user_id: int) -> None:
    """Delete notes with their vectors and index rows; facts from them of members other than
    ``user_id`` lose the title."""
    if not note_ids:
        return
    ids, params = tx.dialect.any("source_note_id", note_ids)
    tx.execute(
        f"UPDATE profile_facts SET source_label = ? WHERE {ids} AND user_id != ?",
        [FORGOTTEN_SOURCE, *params, user_id],
    )
    vectors_replaced(tx, note_ids)
    ids, params = tx.dialect.any("note_id", note_ids)
    tx.execute(f"DELETE FROM vec_notes WHERE {ids}", params)
    # note_participants, note_lines, evidence_windows and profile_updates cascade.
    ids, params = tx.dialect.any("id", note_ids)
    tx.execute(f"DELETE FROM interaction_notes WHERE {ids}", params)
    for statement in tx.dialect.purge_note_index:
        tx.execute(statement)


def delete_facts(tx: Tx, fact_ids: Sequence[int]) -> None:
    """Delete facts, and the links of the facts they superseded to them."""
    if not fact_ids:
        return
    ids, params = tx.dialect.any("superseded_by", fact_ids)
    tx.execute(f"UPDATE profile_facts SET superseded_by = NULL WHERE {ids}", params)
    ids, params = tx.dialect.any("id", fact_ids)
    tx.execute(f"DELETE FROM profile_facts WHERE {ids}", params)


def _scrub_buffered(tx: Tx, guild_id: int, user_id: int) -> None:
    """Remove the member's id from other buffered messages' text and mentions in the guild."""
    like = f"%{user_id}%"
    rows = tx.all(
        "SELECT m.message_id, m.text, m.mentions FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.guild_id = ? AND (m.text LIKE ? OR m.mentions LIKE ?)",
        (guild_id, like, like),
    )
    for message_id, text, mentions in rows:
        kept = [m for m in json.loads(str(mentions)) if int(m) != user_id]
        tx.execute(
            "UPDATE buffer_messages SET text = ?, mentions = ? WHERE message_id = ?",
            (_scrub_mentions(str(text), user_id), json.dumps(kept), message_id),
        )


def _scrub_lines(tx: Tx, guild_id: int, user_id: int) -> None:
    """Remove the member's id from other kept lines' text in the guild."""
    rows = tx.all(
        "SELECT l.message_id, l.text FROM note_lines l JOIN interaction_notes n"
        " ON n.id = l.note_id WHERE n.guild_id = ? AND l.text LIKE ?",
        (guild_id, f"%{user_id}%"),
    )
    for message_id, text in rows:
        edit_evidence_message(tx, int(message_id), _scrub_mentions(str(text), user_id))


def forget_member(tx: Tx, guild_id: int, user_id: int) -> ForgetReport:
    """Erase the member from the guild's memory; see the module docstring.

    Deleted: their profile facts (with the invalidated history), profile row and profile
    updates; their buffered messages (a closed buffer holding any is dropped whole); every
    note they took part in or that mentions their name or id, with its vector, keyword and
    source rows; other members' facts and the server lore that mention them; their member and
    user rows. Other messages lose their mentions of the member.
    """
    pattern = _mention_pattern(user_id, _names(tx, guild_id, user_id))
    facts = _count(
        tx,
        "SELECT COUNT(*) FROM profile_facts WHERE guild_id = ? AND user_id = ?",
        guild_id,
        user_id,
    )
    pending = _count(
        tx,
        "SELECT COUNT(*) FROM profile_updates WHERE guild_id = ? AND user_id = ?"
        " AND status = 'pending'",
        guild_id,
        user_id,
    )
    messages, refs = delete_buffered_messages(tx, guild_id, user_id, drop_closed_buffers=True)
    _scrub_buffered(tx, guild_id, user_id)
    doomed = _notes_to_delete(tx, guild_id, user_id, pattern)
    delete_notes(tx, doomed, user_id)
    forget_lines(tx, guild_id, user_id)
    _scrub_lines(tx, guild_id, user_id)
    purge_evidence_index(tx)

    own = [
        int(r[0])
        for r in tx.all(
            "SELECT id FROM profile_facts WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
        )
    ]
    others = [
        int(r[0])
        for r in tx.all(
            "SELECT id, text, source_label FROM profile_facts WHERE guild_id = ? AND user_id != ?",
            (guild_id, user_id),
        )
        if pattern.search(str(r[1])) or pattern.search(str(r[2]))
    ]
    delete_facts(tx, own + others)
    for table in ("user_profiles", "profile_updates", "member_names"):
        tx.execute(f"DELETE FROM {table} WHERE guild_id = ? AND user_id = ?", (guild_id, user_id))
    lore = [
        int(r[0])
        for r in tx.all(
            "SELECT id, text, author_id FROM server_lore WHERE guild_id = ?", (guild_id,)
        )
        if int(r[2]) == user_id or pattern.search(str(r[1]))
    ]
    if lore:
        ids, params = tx.dialect.any("id", lore)
        tx.execute(f"DELETE FROM server_lore WHERE {ids}", params)
    _scrub_corrections(tx, guild_id, user_id, pattern)
    if is_opted_out(tx, guild_id, user_id):
        tx.execute(
            "UPDATE guild_members SET display_name = '' WHERE guild_id = ? AND user_id = ?",
            (guild_id, user_id),
        )
    else:
        tx.execute(
            "DELETE FROM guild_members WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
        )
    tx.execute(
        "DELETE FROM users WHERE id = ? AND NOT EXISTS"
        " (SELECT 1 FROM guild_members WHERE user_id = ? AND guild_id != ?)",
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
