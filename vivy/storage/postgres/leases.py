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
from vivy.storage.dialect import Tx
from vivy.storage.postgres.connect import PgConnection

__all__ = [
    "EpochRecord",
    "acquire",
    "check_fence",
    "epoch_history",
    "holders",
    "live",
    "other_fleet",
    "release",
    "renew",
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


def acquire(
    tx: Tx, shard_id: int, shard_count: int, owner: str, now: float, ttl_s: float
) -> int | None:
    """Take the shard's lease until ``now + ttl_s`` if it is free, expired or already
    ``owner``'s; returns the new epoch, or None while another owner's lease is live."""
    row = tx.one(
        "INSERT INTO shard_leases (shard_id, shard_count, owner, epoch, expires_at, heartbeat_at)"
        " VALUES (?, ?, ?, 1, ?, ?)"
        " ON CONFLICT (shard_id) DO UPDATE SET shard_count = excluded.shard_count,"
        " owner = excluded.owner, epoch = shard_leases.epoch + 1,"
        " expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at"
        " WHERE shard_leases.expires_at <= ? OR shard_leases.owner = excluded.owner"
        " RETURNING epoch",
        (shard_id, shard_count, owner, now + ttl_s, now, now),
    )
    if row is None:
        return None
    epoch = int(row[0])
    tx.execute(
        "INSERT INTO shard_epochs (shard_id, epoch, shard_count, owner, acquired_at, acquired_seq)"
        " VALUES (?, ?, ?, ?, ?, nextval('shard_write_seq'))",
        (shard_id, epoch, shard_count, owner, now),
    )
    return epoch


def renew(tx: Tx, owner: str, held: Mapping[int, int], now: float, ttl_s: float) -> set[int]:
    """Extend the leases ``owner`` holds at the epochs in ``held`` to ``now + ttl_s``;
    returns the shards still ours (a shard missing from it was taken over)."""
    if not held:
        return set()
    shards = sorted(held)
    rows = tx.all(
        "UPDATE shard_leases AS l SET expires_at = ?, heartbeat_at = ?"
        " FROM unnest(?::integer[], ?::bigint[]) AS h (shard_id, epoch)"
        " WHERE l.shard_id = h.shard_id AND l.epoch = h.epoch AND l.owner = ?"
        " RETURNING l.shard_id",
        (now + ttl_s, now, shards, [held[s] for s in shards], owner),
    )
    return {int(r[0]) for r in rows}


def release(tx: Tx, owner: str, held: Mapping[int, int]) -> None:
    """Let the leases go at once (a graceful stop), so a successor need not wait."""
    shards = sorted(held)
    tx.execute(
        "UPDATE shard_leases AS l SET expires_at = 0"
        " FROM unnest(?::integer[], ?::bigint[]) AS h (shard_id, epoch)"
        " WHERE l.shard_id = h.shard_id AND l.epoch = h.epoch AND l.owner = ?",
        (shards, [held[s] for s in shards], owner),
    )


def holders(tx: Tx, shard_ids: Sequence[int]) -> list[LeaseHolder]:
    """The stored leases of these shards."""
    rows = tx.all(
        "SELECT shard_id, shard_count, owner, epoch, expires_at FROM shard_leases"
        " WHERE shard_id = ANY(?) ORDER BY shard_id",
        (list(shard_ids),),
    )
    return [LeaseHolder(int(r[0]), int(r[1]), str(r[2]), int(r[3]), float(r[4])) for r in rows]


def live(tx: Tx, now: float) -> list[LeaseHolder]:
    """Every live lease: the processes of a fleet running on this database."""
    return _live(tx, now, None)


def other_fleet(tx: Tx, shard_count: int, now: float) -> list[LeaseHolder]:
    """Live leases taken with another shard count (a fleet of another size still runs)."""
    return _live(tx, now, shard_count)


def _live(tx: Tx, now: float, other_than_count: int | None) -> list[LeaseHolder]:
    rows = tx.all(
        "SELECT shard_id, shard_count, owner, epoch, expires_at FROM shard_leases"
        " WHERE expires_at > ? AND (?::integer IS NULL OR shard_count <> ?)"
        " ORDER BY shard_id",
        (now, other_than_count, other_than_count),
    )
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


def epoch_history(tx: Tx) -> list[EpochRecord]:
    """Every epoch granted, by shard then epoch."""
    rows = tx.all(
        "SELECT shard_id, epoch, owner, acquired_seq, writes, last_write_seq FROM shard_epochs"
        " ORDER BY shard_id, epoch"
    )
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
