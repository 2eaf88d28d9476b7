"""PostgreSQL storage of channel buffers, their message rows and the closed-buffer outbox.

The same behaviour as :mod:`vivy.storage.buffers` (whose records it returns), in PostgreSQL's
dialect: ``RETURNING`` gives new ids, ``= ANY(%s)`` takes id lists, and the watermark only
moves forward through ``GREATEST``.

Every write takes an optional :class:`~vivy.shards.Fence`: given one (a process of a fleet),
the write first checks, in its transaction, that this process still holds the lease of the
guild's shard (:func:`~vivy.storage.postgres.leases.check_fence`). The lists of pending work
take a scope of shards and return only the rows of guilds on those shards.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from vivy.memory.buffers import (
    AppliedEffects,
    BufferedMessage,
    BufferRow,
    CloseReason,
    StoredBuffer,
)
from vivy.shards import ALL_SHARDS, Fence, Shards
from vivy.state.buffer import Effect
from vivy.storage.buffers import BufferStatements, carry_out_effects
from vivy.storage.postgres.db import PgConnection
from vivy.storage.postgres.evidence import delete_evidence_message, edit_evidence_message
from vivy.storage.postgres.leases import check_guild_fence, in_scope

__all__ = [
    "STATEMENTS",
    "append_messages",
    "apply_effects",
    "close_buffer",
    "closed_buffer_ids",
    "delete_stored_message",
    "edit_stored_message",
    "load_buffer",
    "open_buffer",
    "open_buffer_rows",
    "record_note_failure",
    "restore_channel",
    "watermark",
]

_BUFFER_COLUMNS = (
    "id, guild_id, channel_id, channel_name, status, started_at, last_message_at, "
    "inactivity_s, closed_at, close_reason, attempts, next_attempt_at"
)


def open_buffer(
    conn: PgConnection,
    guild_id: int,
    channel_id: int,
    channel_name: str,
    started_at: float,
    inactivity_s: float,
    *,
    fence: Fence | None = None,
) -> int:
    """Create an open buffer for the channel and return its id."""
    check_guild_fence(conn, fence, guild_id)
    row = conn.execute(
        "INSERT INTO channel_buffers (guild_id, channel_id, channel_name, status, started_at,"
        " last_message_at, inactivity_s) VALUES (%s, %s, %s, 'open', %s, %s, %s) RETURNING id",
        (guild_id, channel_id, channel_name, started_at, started_at, inactivity_s),
    ).fetchone()
    assert row is not None
    return int(row[0])


def append_messages(
    conn: PgConnection,
    buffer_id: int,
    messages: Sequence[BufferedMessage],
    last_at: float,
    *,
    fence: Fence | None = None,
) -> frozenset[int]:
    """Append messages to an open buffer and move its last-message time to ``last_at``.

    Returns the ids that were not appended because another buffer already holds them; only
    then does it look them up, so the common case is one insert and one update.
    """
    if fence is not None:
        check_guild_fence(conn, fence, _buffer_guild(conn, buffer_id))
    rows = [
        (
            m.message_id,
            buffer_id,
            m.author_id,
            m.author_name,
            m.text,
            m.created_at,
            json.dumps(list(m.mentions)) if m.mentions else "[]",
            m.reply_to,
        )
        for m in messages
    ]
    inserted = 0
    if rows:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO buffer_messages (message_id, buffer_id, author_id, author_name,"
                " text, created_at, mentions, reply_to) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (message_id) DO NOTHING",
                rows,
            )
            inserted = cursor.rowcount
    taken: frozenset[int] = frozenset()
    if inserted < len(messages):
        taken = frozenset(
            int(r[0])
            for r in conn.execute(
                "SELECT message_id FROM buffer_messages WHERE buffer_id != %s"
                " AND message_id = ANY(%s)",
                (buffer_id, [m.message_id for m in messages]),
            ).fetchall()
        )
    conn.execute(
        "UPDATE channel_buffers SET last_message_at = %s WHERE id = %s", (last_at, buffer_id)
    )
    return taken


def edit_stored_message(
    conn: PgConnection,
    message_id: int,
    text: str,
    edited_at: float,
    *,
    fence: Fence | None = None,
) -> bool:
    """Replace a message's text wherever it is buffered or kept as a note's evidence;
    False if it is neither."""
    if fence is not None:
        check_guild_fence(conn, fence, _message_guild(conn, message_id))
    cursor = conn.execute(
        "UPDATE buffer_messages SET text = %s, edited_at = %s WHERE message_id = %s",
        (text, edited_at, message_id),
    )
    buffered = cursor.rowcount > 0
    kept = edit_evidence_message(conn, message_id, text)
    return buffered or kept


def delete_stored_message(
    conn: PgConnection, message_id: int, *, fence: Fence | None = None
) -> bool:
    """Delete a message wherever it is buffered or kept as a note's evidence; False if it
    is neither."""
    if fence is not None:
        check_guild_fence(conn, fence, _message_guild(conn, message_id))
    cursor = conn.execute("DELETE FROM buffer_messages WHERE message_id = %s", (message_id,))
    buffered = cursor.rowcount > 0
    kept = delete_evidence_message(conn, message_id)
    return buffered or kept


def close_buffer(
    conn: PgConnection,
    buffer_id: int,
    closed_at: float,
    reason: CloseReason,
    *,
    fence: Fence | None = None,
) -> None:
    """Turn an open buffer into a closed outbox row and advance the channel's watermark."""
    if fence is not None:
        check_guild_fence(conn, fence, _buffer_guild(conn, buffer_id))
    conn.execute(
        "UPDATE channel_buffers SET status = 'closed', closed_at = %s, close_reason = %s,"
        " next_attempt_at = %s WHERE id = %s AND status = 'open'",
        (closed_at, reason.value, closed_at, buffer_id),
    )
    conn.execute(
        "INSERT INTO channel_watermarks AS w (channel_id, last_message_id)"
        " SELECT b.channel_id, MAX(m.message_id) FROM channel_buffers b"
        " JOIN buffer_messages m ON m.buffer_id = b.id WHERE b.id = %s GROUP BY b.channel_id"
        " ON CONFLICT (channel_id) DO UPDATE SET last_message_id ="
        " GREATEST(w.last_message_id, excluded.last_message_id)",
        (buffer_id,),
    )


def record_note_failure(
    conn: PgConnection, buffer_id: int, error: str, next_attempt_at: float
) -> None:
    """Count a failed note attempt; the buffer stays pending until ``next_attempt_at``."""
    conn.execute(
        "UPDATE channel_buffers SET attempts = attempts + 1, last_error = %s,"
        " next_attempt_at = %s WHERE id = %s",
        (error[:500], next_attempt_at, buffer_id),
    )


def watermark(conn: PgConnection, channel_id: int) -> int:
    """The channel's watermark (0 when no buffer of it has closed yet)."""
    row = conn.execute(
        "SELECT last_message_id FROM channel_watermarks WHERE channel_id = %s", (channel_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def _buffer_guild(conn: PgConnection, buffer_id: int) -> int | None:
    """The guild of a buffer (None when it is gone)."""
    row = conn.execute(
        "SELECT guild_id FROM channel_buffers WHERE id = %s", (buffer_id,)
    ).fetchone()
    return None if row is None else int(row[0])


def _message_guild(conn: PgConnection, message_id: int) -> int | None:
    """The guild of the buffer holding a message (None when no buffer does)."""
    row = conn.execute(
        "SELECT b.guild_id FROM buffer_messages m JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE m.message_id = %s",
        (message_id,),
    ).fetchone()
    return None if row is None else int(row[0])


def _row(values: Sequence[object]) -> BufferRow:
    return BufferRow(*values)  # type: ignore[arg-type]


def _messages(conn: PgConnection, buffer_id: int) -> tuple[BufferedMessage, ...]:
    rows = conn.execute(
        "SELECT message_id, author_id, author_name, text, created_at, reply_to, mentions"
        " FROM buffer_messages WHERE buffer_id = %s ORDER BY message_id",
        (buffer_id,),
    ).fetchall()
    return tuple(
        BufferedMessage(
            message_id=r[0],
            author_id=r[1],
            author_name=r[2],
            text=r[3],
            created_at=r[4],
            reply_to=r[5],
            mentions=tuple(json.loads(r[6])),
        )
        for r in rows
    )


def load_buffer(conn: PgConnection, buffer_id: int) -> StoredBuffer | None:
    """A buffer with its messages, or None if it no longer exists."""
    row = conn.execute(
        f"SELECT {_BUFFER_COLUMNS} FROM channel_buffers WHERE id = %s", (buffer_id,)
    ).fetchone()
    if row is None:
        return None
    return StoredBuffer(_row(row), _messages(conn, buffer_id))


def open_buffer_rows(
    conn: PgConnection, channel_id: int | None = None, scope: Shards = ALL_SHARDS
) -> list[BufferRow]:
    """Open buffers (of one channel, or all of the scope's guilds), oldest first."""
    if channel_id is None:
        condition, params = in_scope(scope)
        rows = conn.execute(
            f"SELECT {_BUFFER_COLUMNS} FROM channel_buffers WHERE status = 'open'{condition}"
            " ORDER BY id",
            params,
        ).fetchall()
    else:
        rows = conn.execute(
            f"SELECT {_BUFFER_COLUMNS} FROM channel_buffers"
            " WHERE status = 'open' AND channel_id = %s",
            (channel_id,),
        ).fetchall()
    return [_row(r) for r in rows]


def closed_buffer_ids(conn: PgConnection, scope: Shards = ALL_SHARDS) -> list[tuple[int, float]]:
    """Closed buffers of the scope's guilds awaiting their note, as (id, next attempt time),
    oldest first."""
    condition, params = in_scope(scope)
    rows = conn.execute(
        "SELECT id, COALESCE(next_attempt_at, 0) FROM channel_buffers"
        f" WHERE status = 'closed'{condition} ORDER BY id",
        params,
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def restore_channel(
    conn: PgConnection, channel_id: int
) -> tuple[tuple[BufferRow, frozenset[int]] | None, int]:
    """The channel's open buffer with its message ids (None if it has none), and its watermark."""
    mark = watermark(conn, channel_id)
    rows = open_buffer_rows(conn, channel_id)
    if not rows:
        return None, mark
    row = rows[0]
    ids = frozenset(
        int(r[0])
        for r in conn.execute(
            "SELECT message_id FROM buffer_messages WHERE buffer_id = %s", (row.id,)
        ).fetchall()
    )
    return (row, ids), mark


#: PostgreSQL's buffer writes, for :func:`~vivy.storage.buffers.carry_out_effects`.
STATEMENTS: BufferStatements[PgConnection] = BufferStatements(
    open_buffer=open_buffer,
    append_messages=append_messages,
    close_buffer=close_buffer,
    edit_message=edit_stored_message,
    delete_message=delete_stored_message,
    open_buffer_rows=open_buffer_rows,
)


def apply_effects(
    conn: PgConnection,
    guild_id: int,
    channel_id: int,
    buffer_id: int | None,
    effects: Sequence[Effect],
    *,
    fence: Fence | None = None,
) -> AppliedEffects:
    """Carry out a channel buffer machine's storage effects in order, in one transaction
    (fenced once for all of them)."""
    check_guild_fence(conn, fence, guild_id)
    return carry_out_effects(STATEMENTS, conn, guild_id, channel_id, buffer_id, effects)
