"""The reads a reply's memory context is built from, besides the notes: who opted out,
members' names, facts and recent activity, the server's lore, and the fingerprint that tells
the retriever's cache when any of them changed. Every read names the guild.

Written once for both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vivy.memory.facts import Fact
from vivy.memory.members import LoreItem, MemberCard, PeopleReads
from vivy.storage.dialect import Tx
from vivy.storage.profiles import active_facts

__all__ = [
    "active_lore",
    "member_card",
    "member_names",
    "memory_version",
    "opted_out",
    "people_reads",
    "profile_facts",
    "recent_activity",
]


def memory_version(tx: Tx, guild_id: int) -> tuple[int | float | None, ...]:
    """A cheap fingerprint of what a guild's context is built from, read in one query.

    It changes when a note is added anywhere (the newest note id) or added to or deleted
    from the guild (its note count, read from the guild's index), and when the guild's facts,
    lore or members change (counts, newest ids, newest invalidation and update times), so a
    "forget me" takes effect at once.
    """
    row = tx.one(
        "SELECT (SELECT MAX(id) FROM interaction_notes),"
        " (SELECT COUNT(*) FROM interaction_notes WHERE guild_id = :g),"
        " (SELECT COUNT(*) FROM profile_facts WHERE guild_id = :g),"
        " (SELECT MAX(id) FROM profile_facts WHERE guild_id = :g),"
        " (SELECT MAX(invalidated_at) FROM profile_facts WHERE guild_id = :g),"
        " (SELECT COUNT(*) FROM server_lore WHERE guild_id = :g AND invalidated_at IS NULL),"
        " (SELECT MAX(id) FROM server_lore WHERE guild_id = :g),"
        " (SELECT COUNT(*) FROM guild_members WHERE guild_id = :g),"
        " (SELECT MAX(updated_at) FROM guild_members WHERE guild_id = :g)",
        {"g": guild_id},
    )
    return tuple(row)


def member_names(tx: Tx, guild_id: int, user_ids: Iterable[int]) -> dict[int, str]:
    """Display names of members in this guild: the guild's nickname, else the name they had
    in this guild's newest note with them.

    ``users.username`` is not read: it is global and holds whichever guild's nickname was
    written last, so it could carry one guild's name into another's prompt.
    """
    ids = list(dict.fromkeys(user_ids))
    if not ids:
        return {}
    names: dict[int, str] = {}
    for user_id in ids:
        # Newest first along note_participants_by_user, stopping at this guild's first note.
        row = tx.one(
            f"SELECT p.display_name FROM note_participants AS p {tx.dialect.ordered_join}"
            " interaction_notes AS n ON n.id = p.note_id"
            " WHERE p.user_id = ? AND n.guild_id = ? ORDER BY p.note_id DESC LIMIT 1",
            (user_id, guild_id),
        )
        if row is not None:
            names[user_id] = str(row[0])
    users, params = tx.dialect.any("user_id", ids)
    for user_id, name in tx.all(
        f"SELECT user_id, display_name FROM guild_members WHERE guild_id = ? AND {users}",
        [guild_id, *params],
    ):
        names[int(user_id)] = str(name)
    return names


def opted_out(tx: Tx, guild_id: int, user_ids: Iterable[int]) -> set[int]:
    """The members among ``user_ids`` who opted out of memory in this guild."""
    ids = list(dict.fromkeys(user_ids))
    if not ids:
        return set()
    users, params = tx.dialect.any("user_id", ids)
    rows = tx.all(
        f"SELECT user_id FROM guild_members WHERE guild_id = ? AND opted_out = 1 AND {users}",
        [guild_id, *params],
    )
    return {int(r[0]) for r in rows}


def profile_facts(tx: Tx, guild_id: int, user_ids: Iterable[int]) -> dict[int, list[Fact]]:
    """Each member's active facts in this guild (section order, oldest first)."""
    return {user_id: active_facts(tx, guild_id, user_id) for user_id in dict.fromkeys(user_ids)}


def recent_activity(
    tx: Tx,
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
        rows = tx.all(
            f"SELECT n.note_date, n.title FROM note_participants AS p {tx.dialect.ordered_join}"
            " interaction_notes AS n ON n.id = p.note_id"
            " WHERE p.user_id = ? AND n.guild_id = ? AND n.note_type = 'conversation'"
            " AND COALESCE(n.ended_at, n.created_at) >= ?"
            " ORDER BY COALESCE(n.ended_at, n.created_at) DESC, n.id DESC LIMIT ?",
            (user_id, guild_id, since, limit),
        )
        if rows:
            found[user_id] = [(str(r[0]), str(r[1])) for r in rows]
    return found


def active_lore(tx: Tx, guild_id: int, *, limit: int) -> list[LoreItem]:
    """The guild's active lore, oldest first, at most ``limit`` items (the newest ones)."""
    rows = tx.all(
        "SELECT id, text, created_at FROM server_lore WHERE guild_id = ?"
        " AND invalidated_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
        (guild_id, limit),
    )
    return [LoreItem(int(r[0]), str(r[1]), float(r[2])) for r in reversed(rows)]


def member_card(tx: Tx, guild_id: int, user_id: int, notes: int) -> MemberCard | None:
    """The member's card with up to ``notes`` recent notes; None when the guild knows neither
    their membership nor any fact of theirs."""
    facts = active_facts(tx, guild_id, user_id)
    member = tx.one(
        "SELECT opted_out FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    )
    if not facts and member is None:
        return None
    recent = tx.all(
        "SELECT n.id, n.note_date, n.title FROM note_participants AS p"
        " JOIN interaction_notes AS n ON n.id = p.note_id"
        " WHERE p.user_id = ? AND n.guild_id = ?"
        " ORDER BY COALESCE(n.ended_at, n.created_at) DESC, n.id DESC LIMIT ?",
        (user_id, guild_id, notes),
    )
    return MemberCard(
        name=member_names(tx, guild_id, [user_id]).get(user_id, ""),
        opted_out=bool(member[0]) if member is not None else False,
        facts=tuple(facts),
        recent_notes=tuple((int(r[0]), str(r[1]), str(r[2])) for r in recent),
    )


def people_reads(
    tx: Tx,
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
        names=member_names(tx, guild_id, users),
        facts=profile_facts(tx, guild_id, users),
        activity=recent_activity(tx, guild_id, active, since=since, limit=activity_limit),
        lore=active_lore(tx, guild_id, limit=lore_limit),
    )
