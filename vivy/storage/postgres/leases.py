"""Shard leases on PostgreSQL: who owns which shard, until when, under which epoch.

A lease row per shard id names its owner, its epoch and its expiry. Acquiring takes a free or
expired lease (or one this owner already holds) and bumps the epoch in one statement, so two
processes racing for a shard get distinct epochs and only one of them the lease. Renewing
moves the expiry of the leases this owner still holds at the epochs it holds them. Every
buffer write first runs :func:`check_fence` in its own transaction: it reads the shard's lease
``FOR SHARE``, so a takeover (an ``UPDATE`` of that row) waits until the write commits, and a
write after a takeover sees the new epoch and is refused. Times are the processes' wall clocks
(``now`` arguments); a clock that runs late only delays a takeover, the epochs keep writes
safe whatever the clocks say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vivy.errors import LeaseLost
from vivy.memory.database import LeaseHolder
from vivy.shards import Fence, Shards
from vivy.storage.postgres.db import PgConnection

__all__ = [
    "EpochRecord",
    "acquire_lease",
    "check_fence",
    "check_guild_fence",
    "epoch_history",
    "in_scope",
    "lease_holders",
    "live_leases",
    "release_leases",
    "renew_leases",
]


@dataclass(frozen=True, slots=True)
class EpochRecord:
    """One epoch ever granted on a shard, with its owner's fenced writes."""

    shard_id: int
    epoch: int
    owner: str
    acquired_seq: int
    writes: int
    last_write_seq: int | None


def acquire_lease(
    conn: PgConnection, shard_id: int, shard_count: int, owner: str, now: float, ttl_s: float
) -> int | None:
    """Take the shard's lease if it is free, expired or already ``owner``'s; returns the new
    epoch, or None while another owner's lease is live."""
    row = conn.execute(
        "INSERT INTO shard_leases (shard_id, shard_count, owner, epoch, expires_at, heartbeat_at)"
        " VALUES (%s, %s, %s, 1, %s, %s)"
        " ON CONFLICT (shard_id) DO UPDATE SET shard_count = excluded.shard_count,"
        " owner = excluded.owner, epoch = shard_leases.epoch + 1,"
        " expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at"
        " WHERE shard_leases.expires_at <= %s OR shard_leases.owner = excluded.owner"
        " RETURNING epoch",
        (shard_id, shard_count, owner, now + ttl_s, now, now),
    ).fetchone()
    if row is None:
        return None
    epoch = int(row[0])
    conn.execute(
        "INSERT INTO shard_epochs (shard_id, epoch, shard_count, owner, acquired_at, acquired_seq)"
        " VALUES (%s, %s, %s, %s, %s, nextval('shard_write_seq'))",
        (shard_id, epoch, shard_count, owner, now),
    )
    return epoch


def renew_leases(
    conn: PgConnection, owner: str, held: Mapping[int, int], now: float, ttl_s: float
) -> set[int]:
    """Move the expiry of the leases ``owner`` holds at the epochs in ``held``; returns the
    shards renewed (a shard missing from it was taken over)."""
    if not held:
        return set()
    shards = sorted(held)
    rows = conn.execute(
        "UPDATE shard_leases AS l SET expires_at = %s, heartbeat_at = %s"
        " FROM unnest(%s::integer[], %s::bigint[]) AS h (shard_id, epoch)"
        " WHERE l.shard_id = h.shard_id AND l.epoch = h.epoch AND l.owner = %s"
        " RETURNING l.shard_id",
        (now + ttl_s, now, shards, [held[s] for s in shards], owner),
    ).fetchall()
    return {int(r[0]) for r in rows}


def release_leases(conn: PgConnection, owner: str, held: Mapping[int, int]) -> None:
    """Let the leases go at once (a graceful stop), so a successor need not wait."""
    shards = sorted(held)
    conn.execute(
        "UPDATE shard_leases AS l SET expires_at = 0"
        " FROM unnest(%s::integer[], %s::bigint[]) AS h (shard_id, epoch)"
        " WHERE l.shard_id = h.shard_id AND l.epoch = h.epoch AND l.owner = %s",
        (shards, [held[s] for s in shards], owner),
    )


def lease_holders(conn: PgConnection, shard_ids: Sequence[int]) -> list[LeaseHolder]:
    """The stored leases of these shards."""
    rows = conn.execute(
        "SELECT shard_id, shard_count, owner, epoch, expires_at FROM shard_leases"
        " WHERE shard_id = ANY(%s) ORDER BY shard_id",
        (list(shard_ids),),
    ).fetchall()
    return [LeaseHolder(int(r[0]), int(r[1]), str(r[2]), int(r[3]), float(r[4])) for r in rows]


def live_leases(
    conn: PgConnection, now: float, other_than_count: int | None = None
) -> list[LeaseHolder]:
    """Live leases (those taken with a shard count other than ``other_than_count``, when
    given: a fleet of another size still runs)."""
    rows = conn.execute(
        "SELECT shard_id, shard_count, owner, epoch, expires_at FROM shard_leases"
        " WHERE expires_at > %s AND (%s::integer IS NULL OR shard_count <> %s)"
        " ORDER BY shard_id",
        (now, other_than_count, other_than_count),
    ).fetchall()
    return [LeaseHolder(int(r[0]), int(r[1]), str(r[2]), int(r[3]), float(r[4])) for r in rows]


def check_fence(conn: PgConnection, shard_id: int, epoch: int) -> None:
    """Refuse the transaction's write unless the shard's lease is still at ``epoch``, and
    count the write under that epoch.

    The lease row is read ``FOR SHARE``: a takeover waits for this transaction to end.
    """
    row = conn.execute(
        "SELECT epoch, owner FROM shard_leases WHERE shard_id = %s FOR SHARE", (shard_id,)
    ).fetchone()
    if row is None or int(row[0]) != epoch:
        holder = "nobody" if row is None else f"{row[1]} at epoch {row[0]}"
        raise LeaseLost(
            f"the lease of shard {shard_id} is no longer ours (epoch {epoch}): {holder} "
            "holds it now"
        )
    conn.execute(
        "UPDATE shard_epochs SET writes = writes + 1, last_write_seq = nextval('shard_write_seq')"
        " WHERE shard_id = %s AND epoch = %s",
        (shard_id, epoch),
    )


def epoch_history(conn: PgConnection) -> list[EpochRecord]:
    """Every epoch granted, by shard then epoch."""
    rows = conn.execute(
        "SELECT shard_id, epoch, owner, acquired_seq, writes, last_write_seq FROM shard_epochs"
        " ORDER BY shard_id, epoch"
    ).fetchall()
    return [
        EpochRecord(
            int(r[0]),
            int(r[1]),
            str(r[2]),
            int(r[3]),
            int(r[4]),
            None if r[5] is None else int(r[5]),
        )
        for r in rows
    ]


def check_guild_fence(conn: PgConnection, fence: Fence | None, guild_id: int | None) -> None:
    """:func:`check_fence` for the guild's shard under ``fence`` (no fence: one process owns
    everything; no guild: nothing of a channel's is written)."""
    if fence is not None and guild_id is not None:
        check_fence(conn, *fence.token(guild_id))


def in_scope(scope: Shards, column: str = "guild_id") -> tuple[str, tuple[object, ...]]:
    """An SQL condition (``AND ...``) keeping rows of guilds on the scope's shards, and its
    parameters; empty for a scope of every shard."""
    if scope.complete:
        return "", ()
    return f" AND ({column} >> 22) %% %s = ANY(%s)", (scope.count, list(scope.ids))
