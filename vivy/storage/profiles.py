"""Storage of member profiles: facts with their sources, and the profile-update outbox.

Facts are rows (one per fact, with its section, its source note and a printable source
label). Invalidated and merged facts stay, with ``invalidated_at``, a reason and the fact that
superseded them. ``user_profiles.version`` is bumped on every change, so a plan computed
against an older version is refused instead of applied twice or over a newer profile. A
pending update may carry the operations its note call returned, with the profile version
they were computed against.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.memory.facts import PROFILE_SECTIONS, Fact, PendingUpdate, UpdateContext
from vivy.state.profile import ProfilePlan
from vivy.storage.db import Connection
from vivy.storage.notes import get_notes

__all__ = [
    "active_facts",
    "apply_plan",
    "apply_updates",
    "changed_between",
    "mark_updates_applied",
    "member_profiles",
    "members_due_by",
    "note_sources",
    "pending_updates",
    "profile_version",
    "record_update_failure",
    "update_context",
]


def active_facts(conn: Connection, guild_id: int, user_id: int) -> list[Fact]:
    """The member's active facts in section order, oldest first within a section."""
    rows = conn.execute(
        "SELECT id, section, text, source_kind, source_note_id, source_label, created_at"
        " FROM profile_facts WHERE guild_id = ? AND user_id = ? AND invalidated_at IS NULL"
        " ORDER BY created_at, id",
        (guild_id, user_id),
    ).fetchall()
    facts = [Fact(*tuple(r)) for r in rows]
    order: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}
    return sorted(facts, key=lambda f: order.get(f.section, len(order)))


def profile_version(conn: Connection, guild_id: int, user_id: int) -> int:
    """The member's profile version (0 before the first change)."""
    row = conn.execute(
        "SELECT version FROM user_profiles WHERE guild_id = ? AND user_id = ?", (guild_id, user_id)
    ).fetchone()
    return int(row[0]) if row else 0


def apply_plan(
    conn: Connection,
    guild_id: int,
    user_id: int,
    expected_version: int,
    plan: ProfilePlan,
    now: float,
) -> bool:
    """Write ``plan`` if the profile is still at ``expected_version``; False otherwise."""
    if profile_version(conn, guild_id, user_id) != expected_version:
        return False
    retire_reason = {r.fact_id: r.reason for r in plan.retired}
    superseded: dict[int, int] = {}
    for new in plan.added:
        cursor = conn.execute(
            "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
            " source_note_id, source_label, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
        )
        for old in new.supersedes:
            superseded[old] = int(cursor.lastrowid or 0)
    for fact_id, reason in retire_reason.items():
        conn.execute(
            "UPDATE profile_facts SET invalidated_at = ?, invalidation_reason = ?,"
            " superseded_by = ? WHERE id = ? AND guild_id = ? AND user_id = ?"
            " AND invalidated_at IS NULL",
            (now, reason, superseded.get(fact_id), fact_id, guild_id, user_id),
        )
    conn.execute(
        "INSERT INTO user_profiles (guild_id, user_id, version, updated_at) VALUES (?, ?, 1, ?)"
        " ON CONFLICT (guild_id, user_id) DO UPDATE SET version = version + 1,"
        " updated_at = excluded.updated_at",
        (guild_id, user_id, now),
    )
    return True


def changed_between(conn: Connection, guild_id: int, start: float, end: float) -> list[int]:
    """Members of the guild who gained a fact in [start, end)."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT user_id FROM profile_facts WHERE guild_id = ?"
            " AND created_at >= ? AND created_at < ?",
            (guild_id, start, end),
        )
    ]


def pending_updates(conn: Connection, user_id: int | None = None) -> list[PendingUpdate]:
    """Pending profile updates (of one member, or all), oldest first."""
    query = (
        "SELECT id, guild_id, user_id, note_id, attempts, COALESCE(next_attempt_at, 0),"
        " operations, basis_version FROM profile_updates WHERE status = 'pending'"
    )
    if user_id is None:
        rows = conn.execute(query + " ORDER BY id").fetchall()
    else:
        rows = conn.execute(query + " AND user_id = ? ORDER BY id", (user_id,)).fetchall()
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
    conn: Connection, guild_id: int, user_ids: Sequence[int]
) -> dict[int, tuple[int, list[Fact]]]:
    """Each member's profile version and active facts, read in one go."""
    return {
        user_id: (profile_version(conn, guild_id, user_id), active_facts(conn, guild_id, user_id))
        for user_id in user_ids
    }


def members_due_by(
    conn: Connection, guild_id: int, user_ids: Sequence[int], through: float
) -> set[int]:
    """The members among ``user_ids`` with a pending update, never tried, due before
    ``through`` (an update due at ``through`` itself waits for notes closed then instead)."""
    if not user_ids:
        return set()
    marks = ",".join("?" * len(user_ids))
    rows = conn.execute(
        f"SELECT DISTINCT user_id FROM profile_updates WHERE status = 'pending' AND attempts = 0"
        f" AND guild_id = ? AND next_attempt_at < ? AND user_id IN ({marks})",
        (guild_id, through, *user_ids),
    ).fetchall()
    return {int(r[0]) for r in rows}


def mark_updates_applied(conn: Connection, update_ids: Sequence[int], now: float) -> None:
    """Mark updates applied, and drop their operations and the source lines of notes with
    none left pending (unless the note keeps them as evidence)."""
    marks = ",".join("?" * len(update_ids))
    conn.execute(
        f"UPDATE profile_updates SET status = 'applied', applied_at = ?, operations = NULL"
        f" WHERE id IN ({marks}) AND status = 'pending'",
        (now, *update_ids),
    )
    # Only these updates' notes can have lost their last pending update: looking at them
    # alone keeps the cost flat as the history grows (the whole table was read before).
    conn.execute(
        f"DELETE FROM note_lines WHERE note_id IN (SELECT DISTINCT u.note_id"
        f" FROM profile_updates AS u WHERE u.id IN ({marks})"
        f" AND NOT EXISTS (SELECT 1 FROM profile_updates AS p"
        f" WHERE p.note_id = u.note_id AND p.status = 'pending')"
        f" AND NOT EXISTS (SELECT 1 FROM evidence_windows AS w WHERE w.note_id = u.note_id))",
        update_ids,
    )


def record_update_failure(
    conn: Connection, update_ids: Sequence[int], error: str, next_attempt_at: float
) -> None:
    """Count a failed attempt; the updates stay pending until ``next_attempt_at``."""
    marks = ",".join("?" * len(update_ids))
    conn.execute(
        f"UPDATE profile_updates SET attempts = attempts + 1, last_error = ?,"
        f" next_attempt_at = ? WHERE id IN ({marks})",
        (error[:500], next_attempt_at, *update_ids),
    )


def note_sources(
    conn: Connection, note_ids: Sequence[int]
) -> dict[int, list[tuple[int, str, str, float]]]:
    """The kept source lines of notes: note id -> [(author id, author name, text, at)]."""
    found: dict[int, list[tuple[int, str, str, float]]] = {n: [] for n in note_ids}
    if not note_ids:
        return found
    marks = ",".join("?" * len(note_ids))
    for note_id, author_id, name, text, at in conn.execute(
        f"SELECT note_id, author_id, author_name, text, created_at FROM note_lines"
        f" WHERE note_id IN ({marks}) ORDER BY message_id",
        list(note_ids),
    ).fetchall():
        found[int(note_id)].append((int(author_id), str(name), str(text), float(at)))
    return found


def update_context(
    conn: Connection, guild_id: int, user_id: int, note_ids: Sequence[int]
) -> UpdateContext:
    """The member's profile version and facts, and the source notes with their lines."""
    return UpdateContext(
        version=profile_version(conn, guild_id, user_id),
        facts=active_facts(conn, guild_id, user_id),
        notes=get_notes(conn, note_ids),
        lines=note_sources(conn, note_ids),
    )


def apply_updates(
    conn: Connection,
    guild_id: int,
    user_id: int,
    version: int,
    plan: ProfilePlan,
    update_ids: Sequence[int],
    now: float,
) -> bool:
    """Apply the plan and mark the updates applied, or change nothing on a conflict.

    A conflict is a profile changed meanwhile, or updates no longer pending (the member used
    ``/memory forget-me`` while the call was out): the plan is then dropped.
    """
    marks = ",".join("?" * len(update_ids))
    still = conn.execute(
        f"SELECT COUNT(*) FROM profile_updates WHERE status = 'pending' AND id IN ({marks})",
        list(update_ids),
    ).fetchone()[0]
    if still != len(update_ids):
        return False
    if plan.changes and not apply_plan(conn, guild_id, user_id, version, plan, now):
        return False
    mark_updates_applied(conn, update_ids, now)
    return True
