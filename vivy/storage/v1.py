"""``vivy migrate-v1``: profile facts of the v1 bot brought into Vivy's profiles."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from vivy.clock import parse_utc
from vivy.errors import StorageError
from vivy.memory.guards import content_tokens
from vivy.state.profile import PROFILE_CAP, SECTION_CAP, check_fact_text
from vivy.storage.dialect import Tx
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.sqlite import checks
from vivy.storage.sqlite.db import Database

__all__ = [
    "V1Fact",
    "V1Migration",
    "migrate_v1_database",
    "migrate_v1_facts",
    "migrated_label",
    "read_v1_facts",
]


@dataclass(slots=True)
class V1Migration:
    """What ``vivy migrate-v1`` did: facts migrated, and facts skipped by reason."""

    migrated: int = 0
    members: int = 0
    active_v1: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


#: One active v1 fact: its id, its member's Discord id and name, its text and its time.
V1Fact = tuple[int, str, str, str, str]


def read_v1_facts(source: Path) -> list[V1Fact]:
    """The active facts of the v1 bot's SQLite database at ``source``, newest first;
    the file is only read."""
    conn = checks.open_readonly(source)
    try:
        found = {
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('facts', 'users')"
            )
        }
        if found != {"facts", "users"}:
            raise StorageError(
                f"no seed-000 `facts` and `users` tables found in the v1 database {source}"
            )
        return [
            (int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]))
            for r in conn.execute(
                "SELECT f.id, u.discord_id, u.username, f.fact_text, f.created_at"
                " FROM facts f JOIN users u ON u.id = f.user_id"
                " WHERE f.is_active = 1 ORDER BY f.created_at DESC, f.id DESC"
            ).fetchall()
        ]
    finally:
        conn.close()


_REFUSED = {"instruction": "instruction-like", "too_long": "too long"}


def migrated_label(fact_id: int) -> str:
    """How a migrated fact cites its origin."""
    return f"migrated from v1 fact #{fact_id}"


def migrate_v1_facts(
    tx: Tx,
    guild_id: int,
    now: float,
    rows: list[V1Fact],
    *,
    blacklisted_users: frozenset[int] = frozenset(),
) -> V1Migration:
    """Copy the v1 bot's active facts ``rows`` (:func:`read_v1_facts`) into ``guild_id``'s
    profiles, section ``other``.

    Runs in the caller's transaction. A fact is skipped (and counted by reason) when it was
    migrated before (its ``source_label`` names its v1 id), fails the fact guards, repeats an
    active fact, belongs to a member who opted out or is blacklisted, or would overflow the
    section or profile cap (newest v1 facts are kept first).
    """
    report = V1Migration()
    report.active_v1 = len(rows)
    opted_out = {
        int(r[0])
        for r in tx.execute(
            "SELECT user_id FROM guild_members WHERE guild_id = ? AND opted_out = 1", (guild_id,)
        )
    }
    done = {
        str(r[0])
        for r in tx.execute(
            "SELECT source_label FROM profile_facts"
            " WHERE guild_id = ? AND source_kind = 'migrated'",
            (guild_id,),
        )
    }
    by_user: dict[int, list[tuple[int, str, str, float]]] = {}
    for fact_id, discord_id, username, text, created in rows:
        label = migrated_label(int(fact_id))
        if label in done:
            report.skipped["already migrated"] += 1
            continue
        try:
            user_id = int(str(discord_id).strip())
        except ValueError:
            report.skipped["bad discord id"] += 1
            continue
        if user_id in opted_out or user_id in blacklisted_users:
            report.skipped["opted out or blacklisted"] += 1
            continue
        fact_text = " ".join(str(text).split())
        refused = check_fact_text(fact_text) if fact_text else None
        if not fact_text:
            report.skipped["empty"] += 1
            continue
        if refused is not None:
            report.skipped[_REFUSED.get(refused.value, refused.value)] += 1
            continue
        by_user.setdefault(user_id, []).append(
            (int(fact_id), str(username), fact_text, _v1_time(created, now))
        )
    for user_id, facts in by_user.items():
        added = _migrate_member(tx, guild_id, user_id, facts, now, report)
        if added:
            report.members += 1
            report.migrated += added
    return report


def _v1_time(value: object, fallback: float) -> float:
    """The v1 bot's ``CURRENT_TIMESTAMP`` text (UTC) as epoch seconds."""
    try:
        return parse_utc(str(value).strip().replace(" ", "T", 1))
    except ValueError:
        return fallback


def _migrate_member(
    tx: Tx,
    guild_id: int,
    user_id: int,
    facts: list[tuple[int, str, str, float]],
    now: float,
    report: V1Migration,
) -> int:
    """Insert one member's facts (newest first) within the caps; returns how many."""
    active = tx.execute(
        "SELECT section, text FROM profile_facts"
        " WHERE guild_id = ? AND user_id = ? AND invalidated_at IS NULL",
        (guild_id, user_id),
    ).fetchall()
    seen = {frozenset(content_tokens(str(r[1]))) for r in active}
    in_other = sum(1 for r in active if r[0] == "other")
    total = len(active)
    added = 0
    for fact_id, _, text, created in facts:
        key = frozenset(content_tokens(text))
        if key in seen:
            report.skipped["duplicate"] += 1
            continue
        if in_other >= SECTION_CAP or total >= PROFILE_CAP:
            report.skipped["over the profile caps"] += 1
            continue
        tx.execute(
            "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
            " source_note_id, source_label, created_at) VALUES (?, ?, 'other', ?, 'migrated',"
            " NULL, ?, ?)",
            (guild_id, user_id, text, migrated_label(fact_id), created),
        )
        seen.add(key)
        in_other += 1
        total += 1
        added += 1
    if added:
        tx.execute(
            "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO NOTHING",
            (guild_id, user_id, facts[0][1], now),
        )
        tx.execute(
            "INSERT INTO user_profiles AS p (guild_id, user_id, version, updated_at)"
            " VALUES (?, ?, 1, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
            " version = p.version + 1, updated_at = excluded.updated_at",
            (guild_id, user_id, now),
        )
    return added


def migrate_v1_database(
    database: Path | str,
    guild_id: int,
    now: float,
    *,
    source: Path | None = None,
    blacklisted_users: frozenset[int] = frozenset(),
) -> V1Migration:
    """Run :func:`migrate_v1_facts` on the Vivy ``database`` (a SQLite file or a PostgreSQL
    URL) in one transaction, created or migrated to this Vivy's schema first, as at startup.

    The v1 tables are read from ``source``, the v1 bot's SQLite file, or, when None, from the
    Vivy database itself (a SQLite file holding both).
    """
    if source is None:
        if isinstance(database, str):
            raise StorageError("the v1 tables are in the v1 bot's SQLite file: pass --from V1_DB")
        source = database
    rows = read_v1_facts(source)
    owner: Database | PgDatabase = (
        PgDatabase.open(database, inline=True)
        if isinstance(database, str)
        else Database.open(database, inline=True)
    )
    try:
        return owner.write_sync(
            partial(migrate_v1_facts, blacklisted_users=blacklisted_users),
            guild_id,
            now,
            rows,
        )
    finally:
        owner.close()
