"""Bookkeeping of ``vivy import``: per-channel watermarks, the outbox's state and row counts.

Every function here is a plain synchronous function taking the connection first, like the rest
of :mod:`vivy.storage`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from vivy.memory.database import OutboxState
from vivy.storage.db import Connection

__all__ = [
    "buffered_high_marks",
    "count_rows",
    "fed_high_marks",
    "note_counts",
    "outbox_state",
    "watermarks",
]


def count_rows(conn: Connection, table: str) -> int:
    """Rows in ``table`` (a name from the schema, never user input)."""
    return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def _per_channel(conn: Connection, sql: str, channel_ids: Iterable[int]) -> dict[int, int]:
    """``channel id -> value`` rows of ``sql`` (``{marks}`` stands for the ids' placeholders),
    run over the ids 500 at a time (SQLite's variable limit)."""
    ids = sorted(set(channel_ids))
    found: dict[int, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        query = sql.format(marks=",".join("?" * len(chunk)))
        for channel_id, value in conn.execute(query, chunk).fetchall():
            found[int(channel_id)] = int(value)
    return found


def watermarks(conn: Connection, channel_ids: Iterable[int]) -> dict[int, int]:
    """Closed-buffer watermarks of the given channels (channels without one are left out)."""
    return _per_channel(
        conn,
        "SELECT channel_id, last_message_id FROM channel_watermarks WHERE channel_id IN ({marks})",
        channel_ids,
    )


def buffered_high_marks(conn: Connection, channel_ids: Iterable[int]) -> dict[int, int]:
    """The highest message id held in an open buffer of each given channel that has one."""
    return _per_channel(
        conn,
        "SELECT b.channel_id, MAX(m.message_id) FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.status = 'open' AND b.channel_id IN ({marks}) GROUP BY b.channel_id",
        channel_ids,
    )


def outbox_state(conn: Connection) -> OutboxState:
    """The pipeline's unfinished work."""
    open_count = conn.execute(
        "SELECT COUNT(*) FROM channel_buffers WHERE status = 'open'"
    ).fetchone()[0]
    closed = {
        int(r[0]): int(r[1])
        for r in conn.execute("SELECT id, attempts FROM channel_buffers WHERE status = 'closed'")
    }
    pending = {
        int(r[0]): int(r[1])
        for r in conn.execute("SELECT id, attempts FROM profile_updates WHERE status = 'pending'")
    }
    return OutboxState(int(open_count), closed, pending)


def note_counts(conn: Connection) -> Counter[str]:
    """Stored notes by type."""
    return Counter(
        {
            str(r[0]): int(r[1])
            for r in conn.execute(
                "SELECT note_type, COUNT(*) FROM interaction_notes GROUP BY note_type"
            )
        }
    )


def fed_high_marks(conn: Connection, channel_ids: Iterable[int]) -> dict[int, int]:
    """Each channel's highest stored message id: the larger of its watermark (its last closed
    buffer) and the last message of its open buffer."""
    marks = watermarks(conn, channel_ids)
    for channel_id, last in buffered_high_marks(conn, channel_ids).items():
        marks[channel_id] = max(last, marks.get(channel_id, 0))
    return marks
