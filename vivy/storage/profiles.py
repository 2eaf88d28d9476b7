"""Storage of member profiles: facts with their sources, and the profile-update outbox.

Facts are rows (one per fact, with its section, its source note and a printable source
label). Invalidated and merged facts stay, with ``invalidated_at``, a reason and the fact that
superseded them. ``user_profiles.version`` is bumped on every change, and the bump guarded by
the expected version is the check itself: a plan computed against an older version is refused
instead of applied twice or over a newer profile, and of two processes applying plans to the
same profile at once exactly one wins. A pending update may carry the operations its note
call returned, with the profile version they were computed against.

Written once for both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.memory.facts import PROFILE_SECTIONS, Fact, PendingUpdate, UpdateContext
from vivy.state.profile import ProfilePlan
from vivy.storage.dialect import Tx, in_scope
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

_SECTION_ORDER: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}


def active_facts(tx: Tx, guild_id: int, user_id: int) -> list[Fact]:
    """The member's active facts in section order, oldest first within a section."""
    rows = tx.all(
        "SELECT id, section, text, source_kind, source_note_id, source_label, created_at"
        " FROM profile_facts WHERE guild_id = ? AND user_id = ? AND invalidated_at IS NULL"
        " ORDER BY created_at, id",
        (guild_id, user_id),
    )
    facts = [Fact(*tuple(r)) for r in rows]
    return sorted(facts, key=lambda f: _SECTION_ORDER.get(f.section, len(_SECTION_ORDER)))


def profile_version(tx: Tx, guild_id: int, user_id: int) -> int:
    """The member's profile version (0 before the first change)."""
    row = tx.one(
        "SELECT version FROM user_profiles WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    )
    return int(row[0]) if row else 0


def _bump_version(tx: Tx, guild_id: int, user_id: int, expected_version: int, now: float) -> bool:
    """Move the profile from ``expected_version`` to the next one; False if it is not there.

    A concurrent bump holds the row until it commits; this one then sees its version and
    refuses.
    """
    if expected_version == 0:
        row = tx.one(
            "INSERT INTO user_profiles AS p (guild_id, user_id, version, updated_at)"
            " VALUES (?, ?, 1, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
            " version = p.version + 1, updated_at = excluded.updated_at WHERE p.version = 0"
            " RETURNING version",
            (guild_id, user_id, now),
        )
    else:
        row = tx.one(
            "UPDATE user_profiles SET version = version + 1, updated_at = ?"
            " WHERE guild_id = ? AND user_id = ? AND version = ? RETURNING version",
            (now, guild_id, user_id, expected_version),
        )
    return row is not None


def apply_plan(
    tx: Tx,
    guild_id: int,
    user_id: int,
    expected_version: int,
    plan: ProfilePlan,
    now: float,
) -> bool:
    """Write ``plan`` if the profile is still at ``expected_version``; False otherwise."""
    if not _bump_version(tx, guild_id, user_id, expected_version, now):
        return False
    superseded: dict[int, int] = {}
    for new in plan.added:
        fact_id = int(
            tx.scalar(
                "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
                " source_note_id, source_label, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
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
        )
        for old in new.supersedes:
            superseded[old] = fact_id
    for fact_id, reason in {r.fact_id: r.reason for r in plan.retired}.items():
        tx.execute(
            "UPDATE profile_facts SET invalidated_at = ?, invalidation_reason = ?,"
            " superseded_by = ? WHERE id = ? AND guild_id = ? AND user_id = ?"
            " AND invalidated_at IS NULL",
            (now, reason, superseded.get(fact_id), fact_id, guild_id, user_id),
        )
    return True


def changed_between(tx: Tx, guild_id: int, start: float, end: float) -> list[int]:
    """Members of the guild who gained a fact in [start, end)."""
    rows = tx.all(
        "SELECT DISTINCT user_id FROM profile_facts WHERE guild_id = ?"
        " AND created_at >= ? AND created_at < ? ORDER BY user_id",
        (guild_id, start, end),
    )
    return [int(r[0]) for r in rows]


def pending_updates(tx: Tx, user_id: int | None = None) -> list[PendingUpdate]:
    """Pending profile updates (of one member, or all of the store's guilds), oldest first."""
    condition, params = in_scope(tx)
    if user_id is not None:
        condition += " AND user_id = ?"
        params.append(user_id)
    rows = tx.all(
        "SELECT id, guild_id, user_id, note_id, attempts, COALESCE(next_attempt_at, 0),"
        " operations, basis_version FROM profile_updates WHERE status = 'pending'"
        f"{condition} ORDER BY id",
        params,
    )
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
    tx: Tx, guild_id: int, user_ids: Sequence[int]
) -> dict[int, tuple[int, list[Fact]]]:
    """Each member's profile version and active facts, read in one go."""
    return {
        user_id: (profile_version(tx, guild_id, user_id), active_facts(tx, guild_id, user_id))
        for user_id in user_ids
    }


def members_due_by(tx: Tx, guild_id: int, user_ids: Sequence[int], through: float) -> set[int]:
    """The members among ``user_ids`` with a pending update, never tried, due before
    ``through`` (an update due at ``through`` itself waits for notes closed then instead)."""
    if not user_ids:
        return set()
    users, params = tx.dialect.any("user_id", user_ids)
    rows = tx.all(
        "SELECT DISTINCT user_id FROM profile_updates WHERE status = 'pending' AND attempts = 0"
        f" AND guild_id = ? AND next_attempt_at < ? AND {users}",
        [guild_id, through, *params],
    )
    return {int(r[0]) for r in rows}


def mark_updates_applied(tx: Tx, update_ids: Sequence[int], now: float) -> None:
    """Mark updates applied, and drop their operations and the source lines of notes with
    none left pending (unless the note keeps them as evidence)."""
    ids, params = tx.dialect.any("id", update_ids)
    tx.execute(
        "UPDATE profile_updates SET status = 'applied', applied_at = ?, operations = NULL"
        f" WHERE {ids} AND status = 'pending'",
        [now, *params],
    )
    # Only these updates' notes can have lost their last pending update: looking at them
    # alone keeps the cost flat as the history grows.
    ids, params = tx.dialect.any("u.id", update_ids)
    tx.execute(
        "DELETE FROM note_lines WHERE note_id IN (SELECT DISTINCT u.note_id"
        f" FROM profile_updates AS u WHERE {ids}"
        " AND NOT EXISTS (SELECT 1 FROM profile_updates AS p"
        " WHERE p.note_id = u.note_id AND p.status = 'pending')"
        " AND NOT EXISTS (SELECT 1 FROM evidence_windows AS w WHERE w.note_id = u.note_id))",
        params,
    )


def record_update_failure(tx: Tx, update_ids: Sequence[int], error: str, retry_at: float) -> None:
    """Count a failed attempt; the updates stay pending until ``retry_at``."""
    ids, params = tx.dialect.any("id", update_ids)
    tx.execute(
        "UPDATE profile_updates SET attempts = attempts + 1, last_error = ?,"
        f" next_attempt_at = ? WHERE {ids}",
        [error[:500], retry_at, *params],
    )


def note_sources(tx: Tx, note_ids: Sequence[int]) -> dict[int, list[tuple[int, str, str, float]]]:
    """The kept source lines of notes: note id -> [(author id, author name, text, at)]."""
    found: dict[int, list[tuple[int, str, str, float]]] = {n: [] for n in note_ids}
    if not note_ids:
        return found
    notes, params = tx.dialect.any("note_id", note_ids)
    for note_id, author_id, name, text, at in tx.all(
        "SELECT note_id, author_id, author_name, text, created_at FROM note_lines"
        f" WHERE {notes} ORDER BY message_id",
        params,
    ):
        found[int(note_id)].append((int(author_id), str(name), str(text), float(at)))
    return found


def update_context(tx: Tx, guild_id: int, user_id: int, note_ids: Sequence[int]) -> UpdateContext:
    """The member's profile version and facts, and the source notes with their lines."""
    return UpdateContext(
        version=profile_version(tx, guild_id, user_id),
        facts=active_facts(tx, guild_id, user_id),
        notes=get_notes(tx, note_ids),
        lines=note_sources(tx, note_ids),
    )


def apply_updates(
    tx: Tx,
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
    read for update first, so a concurrent forget-me waits for this transaction or wins
    before it.
    """
    ids, params = tx.dialect.any("id", update_ids)
    still = tx.all(
        f"SELECT id FROM profile_updates WHERE status = 'pending' AND {ids}{tx.dialect.for_update}",
        params,
    )
    if len(still) != len(update_ids):
        return False
    if plan.changes and not apply_plan(tx, guild_id, user_id, version, plan, now):
        return False
    mark_updates_applied(tx, update_ids, now)
    return True
