"""Storage of the nightly job: its log per (guild, day, pass) and completed runs.

A run is recorded per shard of the store's scope (one row ``(1, 0)`` for every shard), so each
process of a fleet catches up the days its own shards missed. Idempotent inserts use
``ON CONFLICT``, so that several processes recording the same pass agree. Written once for
both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

from datetime import date

from vivy.storage.dialect import Tx, in_scope

__all__ = [
    "completed_days",
    "first_note_time",
    "guilds_with_notes",
    "pass_done",
    "record_pass",
    "record_run",
]


def pass_done(tx: Tx, guild_id: int, day: date, job_pass: str) -> bool:
    """Whether ``job_pass`` (``clusters`` or ``consolidation``) is recorded for the day."""
    row = tx.one(
        "SELECT 1 FROM memory_job_log WHERE guild_id = ? AND job_date = ? AND pass = ?",
        (guild_id, day.isoformat(), job_pass),
    )
    return row is not None


def record_pass(tx: Tx, guild_id: int, day: date, job_pass: str, now: float) -> None:
    """Record a completed pass (idempotent)."""
    tx.execute(
        "INSERT INTO memory_job_log (guild_id, job_date, pass, completed_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (guild_id, day.isoformat(), job_pass, now),
    )


def record_run(tx: Tx, day: date, now: float) -> None:
    """Record that the job for ``day`` completed for the store's guilds: one row per shard
    of a partial scope, ``(1, 0)`` for every shard."""
    scope = tx.scope
    keys = [(1, 0)] if scope.complete else [(scope.count, shard) for shard in scope.ids]
    tx.executemany(
        "INSERT INTO scheduler_runs (job_date, shard_count, shard_id, completed_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (job_date, shard_count, shard_id)"
        " DO UPDATE SET completed_at = excluded.completed_at",
        [(day.isoformat(), count, shard, now) for count, shard in keys],
    )


def completed_days(tx: Tx) -> list[date]:
    """Days whose job completed for the store's guilds: a run of every shard, or a run of
    each of the scope's shards."""
    scope = tx.scope
    shards, params = tx.dialect.any("shard_id", scope.ids)
    rows = tx.all(
        "SELECT job_date FROM scheduler_runs WHERE shard_count = 1"
        f" UNION SELECT job_date FROM scheduler_runs WHERE shard_count = ? AND {shards}"
        " GROUP BY job_date HAVING COUNT(*) = ? ORDER BY job_date",
        [scope.count, *params, len(scope.ids)],
    )
    return [date.fromisoformat(str(r[0])) for r in rows]


def first_note_time(tx: Tx) -> float | None:
    """When the earliest conversation note started."""
    found = tx.scalar(
        "SELECT MIN(COALESCE(started_at, created_at)) FROM interaction_notes"
        " WHERE note_type = 'conversation'"
    )
    return None if found is None else float(found)


def guilds_with_notes(tx: Tx, start: float, end: float) -> list[int]:
    """The store's guilds with conversation notes that started in [start, end)."""
    condition, params = in_scope(tx)
    rows = tx.all(
        "SELECT DISTINCT guild_id FROM interaction_notes WHERE note_type = 'conversation'"
        " AND COALESCE(started_at, created_at) >= ? AND COALESCE(started_at, created_at) < ?"
        f"{condition} ORDER BY guild_id",
        [start, end, *params],
    )
    return [int(r[0]) for r in rows]
