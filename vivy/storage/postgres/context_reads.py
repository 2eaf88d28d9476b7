"""PostgreSQL reads a reply's memory context is built from, besides the notes: who opted
out, members' names, facts and recent activity, the server's lore, and the fingerprint that
tells the retriever's cache when any of them changed. The same reads, values and rules as
:mod:`vivy.storage.context_reads` on SQLite; every read names the guild."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vivy.memory.members import LoreItem, MemberCard, PeopleReads
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.profiles import active_facts

__all__ = [
    "active_lore",
    "member_card",
    "member_names",
    "memory_version",
    "opted_out",
    "people_reads",
    "recent_activity",
]


def memory_version(conn: PgConnection, guild_id: int) -> tuple[int | float | None, ...]:
    """A cheap fingerprint of what a guild's context is built from, read in one query.

    It changes when a note is added anywhere (the newest note id) or added to or deleted
    from the guild (its note count), and when the guild's facts, lore or members change
    (counts, newest ids, newest invalidation and update times).
    """
    row = conn.execute(
        "SELECT (SELECT MAX(id) FROM interaction_notes),"
        " (SELECT COUNT(*) FROM interaction_notes WHERE guild_id = %(g)s),"
        " (SELECT COUNT(*) FROM profile_facts WHERE guild_id = %(g)s),"
        " (SELECT MAX(id) FROM profile_facts WHERE guild_id = %(g)s),"
        " (SELECT MAX(invalidated_at) FROM profile_facts WHERE guild_id = %(g)s),"
        " (SELECT COUNT(*) FROM server_lore WHERE guild_id = %(g)s"
        " AND invalidated_at IS NULL),"
        " (SELECT MAX(id) FROM server_lore WHERE guild_id = %(g)s),"
        " (SELECT COUNT(*) FROM guild_members WHERE guild_id = %(g)s),"
        " (SELECT MAX(updated_at) FROM guild_members WHERE guild_id = %(g)s)",
        {"g": guild_id},
    ).fetchone()
    return tuple(row) if row else ()


def member_names(conn: PgConnection, guild_id: int, user_ids: Iterable[int]) -> dict[int, str]:
    """Display names of members in this guild: the guild's nickname, else the name they had
    in this guild's newest note with them (never ``users.username``, which is global)."""
    ids = list(dict.fromkeys(user_ids))
    if not ids:
        return {}
    names: dict[int, str] = {
        int(r[0]): str(r[1])
        for r in conn.execute(
            "SELECT DISTINCT ON (p.user_id) p.user_id, p.display_name"
            " FROM note_participants AS p JOIN interaction_notes AS n ON n.id = p.note_id"
            " WHERE p.user_id = ANY(%s) AND n.guild_id = %s"
            " ORDER BY p.user_id, p.note_id DESC",
            (ids, guild_id),
        ).fetchall()
    }
    for user_id, name in conn.execute(
        "SELECT user_id, display_name FROM guild_members WHERE guild_id = %s AND user_id = ANY(%s)",
        (guild_id, ids),
    ).fetchall():
        names[int(user_id)] = str(name)
    return names


def opted_out(conn: PgConnection, guild_id: int, user_ids: Iterable[int]) -> set[int]:
    """The members among ``user_ids`` who opted out of memory in this guild."""
    ids = list(dict.fromkeys(user_ids))
    if not ids:
        return set()
    rows = conn.execute(
        "SELECT user_id FROM guild_members WHERE guild_id = %s AND opted_out = 1"
        " AND user_id = ANY(%s)",
        (guild_id, ids),
    ).fetchall()
    return {int(r[0]) for r in rows}


def recent_activity(
    conn: PgConnection,
    guild_id: int,
    user_ids: Iterable[int],
    *,
    since: float,
    limit: int,
) -> dict[int, list[tuple[str, str]]]:
    """Per member, the (date, title) of up to ``limit`` conversation notes of this guild they
    took part in since ``since``, newest first."""
    found: dict[int, list[tuple[str, str]]] = {}
    for user_id in dict.fromkeys(user_ids):
        rows = conn.execute(
            "SELECT n.note_date, n.title FROM note_participants AS p"
            " JOIN interaction_notes AS n ON n.id = p.note_id"
            " WHERE p.user_id = %s AND n.guild_id = %s AND n.note_type = 'conversation'"
            " AND COALESCE(n.ended_at, n.created_at) >= %s"
            " ORDER BY COALESCE(n.ended_at, n.created_at) DESC, n.id DESC LIMIT %s",
            (user_id, guild_id, since, limit),
        ).fetchall()
        if rows:
            found[user_id] = [(str(r[0]), str(r[1])) for r in rows]
    return found


def active_lore(conn: PgConnection, guild_id: int, *, limit: int) -> list[LoreItem]:
    """The guild's active lore, oldest first, at most ``limit`` items (the newest ones)."""
    rows = conn.execute(
        "SELECT id, text, created_at FROM server_lore WHERE guild_id = %s"
        " AND invalidated_at IS NULL ORDER BY created_at DESC, id DESC LIMIT %s",
        (guild_id, limit),
    ).fetchall()
    return [LoreItem(int(r[0]), str(r[1]), float(r[2])) for r in reversed(rows)]


def member_card(conn: PgConnection, guild_id: int, user_id: int, notes: int) -> MemberCard | None:
    """The member's card with up to ``notes`` recent notes; None when the guild knows neither
    their membership nor any fact of theirs."""
    facts = active_facts(conn, guild_id, user_id)
    member = conn.execute(
        "SELECT opted_out FROM guild_members WHERE guild_id = %s AND user_id = %s",
        (guild_id, user_id),
    ).fetchone()
    if not facts and member is None:
        return None
    recent = conn.execute(
        "SELECT n.id, n.note_date, n.title FROM note_participants AS p"
        " JOIN interaction_notes AS n ON n.id = p.note_id"
        " WHERE p.user_id = %s AND n.guild_id = %s"
        " ORDER BY COALESCE(n.ended_at, n.created_at) DESC, n.id DESC LIMIT %s",
        (user_id, guild_id, notes),
    ).fetchall()
    return MemberCard(
        name=member_names(conn, guild_id, [user_id]).get(user_id, ""),
        opted_out=bool(member[0]) if member is not None else False,
        facts=tuple(facts),
        recent_notes=tuple((int(r[0]), str(r[1]), str(r[2])) for r in recent),
    )


def people_reads(
    conn: PgConnection,
    guild_id: int,
    users: Sequence[int],
    active: Sequence[int],
    *,
    since: float,
    activity_limit: int,
    lore_limit: int,
) -> PeopleReads:
    """Names and facts of ``users``, the recent notes of ``active`` members since ``since``,
    and the guild's lore, in one call."""
    return PeopleReads(
        names=member_names(conn, guild_id, users),
        facts={user_id: active_facts(conn, guild_id, user_id) for user_id in dict.fromkeys(users)},
        activity=recent_activity(conn, guild_id, active, since=since, limit=activity_limit),
        lore=active_lore(conn, guild_id, limit=lore_limit),
    )
