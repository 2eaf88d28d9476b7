"""Storage of the nightly job: its log per (guild, day, pass) and completed runs."""

from __future__ import annotations

from datetime import date

from vivy.storage.db import Connection

__all__ = [
    "completed_days",
    "first_note_time",
    "guilds_with_notes",
    "pass_done",
    "record_pass",
    "record_run",
]


def pass_done(conn: Connection, guild_id: int, day: date, job_pass: str) -> bool:
    """Whether ``job_pass`` (``clusters`` or ``consolidation``) is recorded for the day."""
    row = conn.execute(
        "SELECT 1 FROM memory_job_log WHERE guild_id = ? AND job_date = ? AND pass = ?",
        (guild_id, day.isoformat(), job_pass),
    ).fetchone()
    return row is not None


def record_pass(conn: Connection, guild_id: int, day: date, job_pass: str, now: float) -> None:
    """Record a completed pass (idempotent)."""
    conn.execute(
        "INSERT OR IGNORE INTO memory_job_log (guild_id, job_date, pass, completed_at)"
        " VALUES (?, ?, ?, ?)",
        (guild_id, day.isoformat(), job_pass, now),
    )


def record_run(conn: Connection, day: date, now: float) -> None:
    """Record that the whole job for ``day`` completed."""
    conn.execute(
        "INSERT INTO scheduler_runs (job_date, shard_count, shard_id, completed_at)"
        " VALUES (?, 1, 0, ?) ON CONFLICT (job_date, shard_count, shard_id)"
        " DO UPDATE SET completed_at = excluded.completed_at",
        (day.isoformat(), now),
    )


def completed_days(conn: Connection) -> list[date]:
    """Days whose job completed."""
    rows = conn.execute("SELECT job_date FROM scheduler_runs WHERE shard_count = 1")
    return [date.fromisoformat(r[0]) for r in rows]


def first_note_time(conn: Connection) -> float | None:
    """When the earliest conversation note started."""
    row = conn.execute(
        "SELECT MIN(COALESCE(started_at, created_at)) FROM interaction_notes"
        " WHERE note_type = 'conversation'"
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else None


def guilds_with_notes(conn: Connection, start: float, end: float) -> list[int]:
    """Guilds with conversation notes that started in [start, end)."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT guild_id FROM interaction_notes WHERE note_type = 'conversation'"
            " AND COALESCE(started_at, created_at) >= ? AND COALESCE(started_at, created_at) < ?"
            " ORDER BY guild_id",
            (start, end),
        )
    ]
