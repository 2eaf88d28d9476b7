"""PostgreSQL bookkeeping of ``vivy import``: per-channel high marks, the outbox's state and
row counts, as :mod:`vivy.storage.maintenance` reads them on SQLite."""

from __future__ import annotations

from collections.abc import Iterable

from vivy.memory.database import OutboxState
from vivy.storage.postgres.db import PgConnection

__all__ = ["fact_count", "fed_high_marks", "note_counts", "outbox_state"]


def fed_high_marks(conn: PgConnection, channel_ids: Iterable[int]) -> dict[int, int]:
    """Each channel's highest stored message id: the larger of its watermark (its last closed
    buffer) and the last message of its open buffer; channels with neither are left out."""
    ids = sorted(set(channel_ids))
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT channel_id, MAX(mark) FROM ("
        " SELECT channel_id, last_message_id AS mark FROM channel_watermarks"
        " WHERE channel_id = ANY(%(ids)s)"
        " UNION ALL SELECT b.channel_id, m.message_id FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.status = 'open' AND b.channel_id = ANY(%(ids)s)"
        ") AS marks GROUP BY channel_id",
        {"ids": ids},
    ).fetchall()
    return {int(r[0]): int(r[1]) for r in rows}


def outbox_state(conn: PgConnection) -> OutboxState:
    """The pipeline's unfinished work."""
    row = conn.execute("SELECT COUNT(*) FROM channel_buffers WHERE status = 'open'").fetchone()
    closed = {
        int(r[0]): int(r[1])
        for r in conn.execute(
            "SELECT id, attempts FROM channel_buffers WHERE status = 'closed'"
        ).fetchall()
    }
    pending = {
        int(r[0]): int(r[1])
        for r in conn.execute(
            "SELECT id, attempts FROM profile_updates WHERE status = 'pending'"
        ).fetchall()
    }
    return OutboxState(int(row[0]) if row else 0, closed, pending)


def note_counts(conn: PgConnection) -> dict[str, int]:
    """Stored notes by type."""
    rows = conn.execute(
        "SELECT note_type, COUNT(*) FROM interaction_notes GROUP BY note_type"
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def fact_count(conn: PgConnection) -> int:
    """Stored profile facts, active or not."""
    row = conn.execute("SELECT COUNT(*) FROM profile_facts").fetchone()
    return int(row[0]) if row else 0
