"""PostgreSQL storage of member profiles: facts with their sources, and the update outbox.

The same behaviour as :mod:`vivy.storage.profiles` (whose records and JSON codec it uses).
The version check of a plan is the version bump itself (an update or insert guarded by the
expected version), so of two processes applying plans to the same profile at once exactly
one wins and the other is told so, under PostgreSQL's default isolation.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.memory.facts import PROFILE_SECTIONS, Fact, PendingUpdate, UpdateContext
from vivy.shards import ALL_SHARDS, Shards
from vivy.state.profile import ProfilePlan
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.leases import in_scope
from vivy.storage.postgres.notes import get_notes

__all__ = [
    "active_facts",
    "apply_plan",
    "apply_updates",
    "changed_between",
    "mark_updates_applied",
    "member_profiles",
    "members_due_by",
    "pending_updates",
    "profile_version",
    "record_update_failure",
    "update_context",
]

_SECTION_ORDER: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}


def active_facts(conn: PgConnection, guild_id: int, user_id: int) -> list[Fact]:
    """The member's active facts in section order, oldest first within a section."""
    rows = conn.execute(
        "SELECT id, section, text, source_kind, source_note_id, source_label, created_at"
        " FROM profile_facts WHERE guild_id = %s AND user_id = %s AND invalidated_at IS NULL"
        " ORDER BY created_at, id",
        (guild_id, user_id),
    ).fetchall()
    facts = [Fact(*r) for r in rows]
    return sorted(facts, key=lambda f: _SECTION_ORDER.get(f.section, len(_SECTION_ORDER)))


def profile_version(conn: PgConnection, guild_id: int, user_id: int) -> int:
    """The member's profile version (0 before the first change)."""
    row = conn.execute(
        "SELECT version FROM user_profiles WHERE guild_id = %s AND user_id = %s",
        (guild_id, user_id),
    ).fetchone()
    return int(row[0]) if row else 0


def _bump_version(
    conn: PgConnection, guild_id: int, user_id: int, expected_version: int, now: float
) -> bool:
    """Move the profile from ``expected_version`` to the next one; False if it is not there.

    A concurrent bump holds the row until it commits; this one then sees its version and
    refuses.
    """
    if expected_version == 0:
        row = conn.execute(
            "INSERT INTO user_profiles AS p (guild_id, user_id, version, updated_at)"
            " VALUES (%s, %s, 1, %s) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
            " version = p.version + 1, updated_at = excluded.updated_at WHERE p.version = 0"
            " RETURNING version",
            (guild_id, user_id, now),
        ).fetchone()
    else:
        row = conn.execute(
            "UPDATE user_profiles SET version = version + 1, updated_at = %s"
            " WHERE guild_id = %s AND user_id = %s AND version = %s RETURNING version",
            (now, guild_id, user_id, expected_version),
        ).fetchone()
    return row is not None


def apply_plan(
    conn: PgConnection,
    guild_id: int,
    user_id: int,
    expected_version: int,
    plan: ProfilePlan,
    now: float,
) -> bool:
    """Write ``plan`` if the profile is still at ``expected_version``; False otherwise."""
    if not _bump_version(conn, guild_id, user_id, expected_version, now):
        return False
    superseded: dict[int, int] = {}
    for new in plan.added:
        row = conn.execute(
            "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
            " source_note_id, source_label, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (
                guild_id,
                user_id,
                new.section,
                new.text,
                new.source_kind,
                new.source_note_id,
                new.source_label,
                now,
            ),
        ).fetchone()
        assert row is not None
        for old in new.supersedes:
            superseded[old] = int(row[0])
    for fact_id, reason in {r.fact_id: r.reason for r in plan.retired}.items():
        conn.execute(
            "UPDATE profile_facts SET invalidated_at = %s, invalidation_reason = %s,"
            " superseded_by = %s WHERE id = %s AND guild_id = %s AND user_id = %s"
            " AND invalidated_at IS NULL",
            (now, reason, superseded.get(fact_id), fact_id, guild_id, user_id),
        )
    return True


def changed_between(conn: PgConnection, guild_id: int, start: float, end: float) -> list[int]:
    """Members of the guild who gained a fact in [start, end)."""
    rows = conn.execute(
        "SELECT DISTINCT user_id FROM profile_facts WHERE guild_id = %s"
        " AND created_at >= %s AND created_at < %s ORDER BY user_id",
        (guild_id, start, end),
    ).fetchall()
    return [int(r[0]) for r in rows]


def pending_updates(
    conn: PgConnection, user_id: int | None = None, scope: Shards = ALL_SHARDS
) -> list[PendingUpdate]:
    """Pending profile updates (of one member, or all), oldest first."""
    condition, params = in_scope(scope)
    rows = conn.execute(
        "SELECT id, guild_id, user_id, note_id, attempts, COALESCE(next_attempt_at, 0),"
        " operations, basis_version FROM profile_updates WHERE status = 'pending'"
        f" AND (%s::bigint IS NULL OR user_id = %s){condition} ORDER BY id",
        (user_id, user_id, *params),
    ).fetchall()
    return [
        PendingUpdate(
            id=int(r[0]),
            guild_id=int(r[1]),
            user_id=int(r[2]),
            note_id=int(r[3]),
            attempts=int(r[4]),
            next_attempt_at=float(r[5]),
            operations=r[6],
            basis_version=None if r[7] is None else int(r[7]),
        )
        for r in rows
    ]


def member_profiles(
    conn: PgConnection, guild_id: int, user_ids: Sequence[int]
) -> dict[int, tuple[int, list[Fact]]]:
    """Each member's profile version and active facts, read in one snapshot."""
    return {
        user_id: (profile_version(conn, guild_id, user_id), active_facts(conn, guild_id, user_id))
        for user_id in user_ids
    }


def members_due_by(
    conn: PgConnection, guild_id: int, user_ids: Sequence[int], through: float
) -> set[int]:
    """The members among ``user_ids`` with a pending update, never tried, due before
    ``through`` (an update due at ``through`` itself waits for notes closed then instead)."""
    if not user_ids:
        return set()
    rows = conn.execute(
        "SELECT DISTINCT user_id FROM profile_updates WHERE status = 'pending' AND attempts = 0"
        " AND guild_id = %s AND next_attempt_at < %s AND user_id = ANY(%s)",
        (guild_id, through, list(user_ids)),
    ).fetchall()
    return {int(r[0]) for r in rows}


def mark_updates_applied(conn: PgConnection, update_ids: Sequence[int], now: float) -> None:
    """Mark updates applied, and drop their operations and the source lines of notes with
    none left pending (unless the note keeps them as evidence)."""
    conn.execute(
        "UPDATE profile_updates SET status = 'applied', applied_at = %s, operations = NULL"
        " WHERE id = ANY(%s) AND status = 'pending'",
        (now, list(update_ids)),
    )
    # Only these updates' notes can have lost their last pending update: looking at them
    # alone keeps the cost flat as the history grows.
    conn.execute(
        "DELETE FROM note_lines WHERE note_id IN (SELECT DISTINCT u.note_id"
        " FROM profile_updates AS u WHERE u.id = ANY(%s)"
        " AND NOT EXISTS (SELECT 1 FROM profile_updates AS p"
        " WHERE p.note_id = u.note_id AND p.status = 'pending')"
        " AND NOT EXISTS (SELECT 1 FROM evidence_windows AS w WHERE w.note_id = u.note_id))",
        (list(update_ids),),
    )


def record_update_failure(
    conn: PgConnection, update_ids: Sequence[int], error: str, next_attempt_at: float
) -> None:
    """Count a failed attempt; the updates stay pending until ``next_attempt_at``."""
    conn.execute(
        "UPDATE profile_updates SET attempts = attempts + 1, last_error = %s,"
        " next_attempt_at = %s WHERE id = ANY(%s)",
        (error[:500], next_attempt_at, list(update_ids)),
    )


def _note_sources(
    conn: PgConnection, note_ids: Sequence[int]
) -> dict[int, list[tuple[int, str, str, float]]]:
    """The kept source lines of notes: note id -> [(author id, author name, text, at)]."""
    found: dict[int, list[tuple[int, str, str, float]]] = {n: [] for n in note_ids}
    if not note_ids:
        return found
    for note_id, author_id, name, text, at in conn.execute(
        "SELECT note_id, author_id, author_name, text, created_at FROM note_lines"
        " WHERE note_id = ANY(%s) ORDER BY message_id",
        (list(note_ids),),
    ).fetchall():
        found[int(note_id)].append((int(author_id), str(name), str(text), float(at)))
    return found


def update_context(
    conn: PgConnection, guild_id: int, user_id: int, note_ids: Sequence[int]
) -> UpdateContext:
    """The member's profile version and facts, and the source notes with their lines."""
    return UpdateContext(
        version=profile_version(conn, guild_id, user_id),
        facts=active_facts(conn, guild_id, user_id),
        notes=get_notes(conn, note_ids),
        lines=_note_sources(conn, note_ids),
    )


def apply_updates(
    conn: PgConnection,
    guild_id: int,
    user_id: int,
    version: int,
    plan: ProfilePlan,
    update_ids: Sequence[int],
    now: float,
) -> bool:
    """Apply the plan and mark the updates applied, or change nothing on a conflict.

    A conflict is a profile changed meanwhile, or updates no longer pending (the member used
    ``/memory forget-me`` while the call was out): the plan is then dropped. The updates are
    locked first, so a concurrent forget-me waits for this transaction or wins before it.
    """
    still = conn.execute(
        "SELECT id FROM profile_updates WHERE status = 'pending' AND id = ANY(%s) FOR UPDATE",
        (list(update_ids),),
    ).fetchall()
    if len(still) != len(update_ids):
        return False
    if plan.changes and not apply_plan(conn, guild_id, user_id, version, plan, now):
        return False
    mark_updates_applied(conn, update_ids, now)
    return True
