"""Bookkeeping of ``vivy import``: per-channel high marks, the outbox's state and row counts.

Written once for both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

from collections.abc import Iterable

from vivy.memory.database import OutboxState
from vivy.storage.dialect import Tx

__all__ = ["count_rows", "fact_count", "fed_high_marks", "note_counts", "outbox_state"]

#: Channel ids per statement (under SQLite's variable limit).
_CHUNK = 500


def count_rows(tx: Tx, table: str) -> int:
    """Rows in ``table`` (a name from the schema, never user input)."""
    return int(tx.scalar(f'SELECT COUNT(*) FROM "{table}"'))


def fact_count(tx: Tx) -> int:
    """Stored profile facts, active or not."""
    return count_rows(tx, "profile_facts")


def fed_high_marks(tx: Tx, channel_ids: Iterable[int]) -> dict[int, int]:
    """Each channel's highest stored message id: the larger of its watermark (its last closed
    buffer) and the last message of its open buffer; channels with neither are left out."""
    ids = sorted(set(channel_ids))
    found: dict[int, int] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marked, marked_params = tx.dialect.any("channel_id", chunk)
        buffered, buffered_params = tx.dialect.any("b.channel_id", chunk)
        for channel_id, mark in tx.all(
            "SELECT channel_id, MAX(mark) FROM ("
            f" SELECT channel_id, last_message_id AS mark FROM channel_watermarks WHERE {marked}"
            " UNION ALL SELECT b.channel_id, m.message_id FROM buffer_messages m"
            " JOIN channel_buffers b ON b.id = m.buffer_id"
            f" WHERE b.status = 'open' AND {buffered}"
            ") AS marks GROUP BY channel_id",
            [*marked_params, *buffered_params],
        ):
            found[int(channel_id)] = int(mark)
    return found


def outbox_state(tx: Tx) -> OutboxState:
    """The pipeline's unfinished work."""
    open_count = tx.scalar("SELECT COUNT(*) FROM channel_buffers WHERE status = 'open'")
    closed = {
        int(r[0]): int(r[1])
        for r in tx.all("SELECT id, attempts FROM channel_buffers WHERE status = 'closed'")
    }
    pending = {
        int(r[0]): int(r[1])
        for r in tx.all("SELECT id, attempts FROM profile_updates WHERE status = 'pending'")
    }
    return OutboxState(int(open_count), closed, pending)


def note_counts(tx: Tx) -> dict[str, int]:
    """Stored notes by type."""
    rows = tx.all("SELECT note_type, COUNT(*) FROM interaction_notes GROUP BY note_type")
    return {str(r[0]): int(r[1]) for r in rows}
