"""PostgreSQL storage of the database's own facts (``meta``) and of the nightly job's log.

The same behaviour as :mod:`vivy.storage.meta` and :mod:`vivy.storage.jobs`, in PostgreSQL's
dialect; idempotent inserts use ``ON CONFLICT`` so that several processes recording the same
pass agree.
"""

from __future__ import annotations

from datetime import date

from vivy.memory.database import EmbeddingModel
from vivy.shards import ALL_SHARDS, Shards
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.leases import in_scope

__all__ = [
    "adopt_embedding_model",
    "completed_days",
    "first_note_time",
    "get_meta",
    "guilds_with_notes",
    "pass_done",
    "record_pass",
    "record_run",
    "set_meta",
]


def get_meta(conn: PgConnection, key: str) -> str | None:
    """The value stored under ``key``, or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: PgConnection, key: str, value: str) -> None:
    """Store ``value`` under ``key``."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def adopt_embedding_model(conn: PgConnection, model: str, dimension: int) -> EmbeddingModel | None:
    """Record ``model`` on first use or while no note exists; else return the model the notes
    were embedded with (nothing changes then), or None when it is ``model`` already."""
    conn.execute("LOCK TABLE meta IN SHARE ROW EXCLUSIVE MODE")
    stored = get_meta(conn, "embedding_model")
    stored_dim = get_meta(conn, "embedding_dimension")
    if stored == model and stored_dim == str(dimension):
        return None
    if stored is not None:
        row = conn.execute("SELECT EXISTS (SELECT 1 FROM interaction_notes)").fetchone()
        if row is not None and row[0]:
            return EmbeddingModel(stored, stored_dim)
    set_meta(conn, "embedding_model", model)
    set_meta(conn, "embedding_dimension", str(dimension))
    return None


def pass_done(conn: PgConnection, guild_id: int, day: date, job_pass: str) -> bool:
    """Whether ``job_pass`` (``clusters`` or ``consolidation``) is recorded for the day."""
    row = conn.execute(
        "SELECT 1 FROM memory_job_log WHERE guild_id = %s AND job_date = %s AND pass = %s",
        (guild_id, day.isoformat(), job_pass),
    ).fetchone()
    return row is not None


def record_pass(conn: PgConnection, guild_id: int, day: date, job_pass: str, now: float) -> None:
    """Record a completed pass (idempotent)."""
    conn.execute(
        "INSERT INTO memory_job_log (guild_id, job_date, pass, completed_at)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (guild_id, day.isoformat(), job_pass, now),
    )


def record_run(conn: PgConnection, day: date, now: float, scope: Shards = ALL_SHARDS) -> None:
    """Record that the job for ``day`` completed for the scope's guilds: one row per shard
    of a partial scope, ``(1, 0)`` for every shard."""
    keys = [(1, 0)] if scope.complete else [(scope.count, shard) for shard in scope.ids]
    conn.cursor().executemany(
        "INSERT INTO scheduler_runs (job_date, shard_count, shard_id, completed_at)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (job_date, shard_count, shard_id)"
        " DO UPDATE SET completed_at = excluded.completed_at",
        [(day.isoformat(), count, shard, now) for count, shard in keys],
    )


def completed_days(conn: PgConnection, scope: Shards = ALL_SHARDS) -> list[date]:
    """Days whose job completed for the scope's guilds: a run of every shard, or a run of
    each of the scope's shards."""
    rows = conn.execute(
        "SELECT job_date FROM scheduler_runs WHERE shard_count = 1"
        " UNION SELECT job_date FROM scheduler_runs WHERE shard_count = %s"
        " AND shard_id = ANY(%s) GROUP BY job_date HAVING COUNT(*) = %s ORDER BY job_date",
        (scope.count, list(scope.ids), len(scope.ids)),
    ).fetchall()
    return [date.fromisoformat(str(r[0])) for r in rows]


def first_note_time(conn: PgConnection) -> float | None:
    """When the earliest conversation note started."""
    row = conn.execute(
        "SELECT MIN(COALESCE(started_at, created_at)) FROM interaction_notes"
        " WHERE note_type = 'conversation'"
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else None


def guilds_with_notes(
    conn: PgConnection, start: float, end: float, scope: Shards = ALL_SHARDS
) -> list[int]:
    """Guilds with conversation notes that started in [start, end)."""
    condition, params = in_scope(scope)
    rows = conn.execute(
        "SELECT DISTINCT guild_id FROM interaction_notes WHERE note_type = 'conversation'"
        " AND COALESCE(started_at, created_at) >= %s AND COALESCE(started_at, created_at) < %s"
        f"{condition} ORDER BY guild_id",
        (start, end, *params),
    ).fetchall()
    return [int(r[0]) for r in rows]
