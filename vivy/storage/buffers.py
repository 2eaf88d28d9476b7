"""Storage of channel buffers: open buffers, their message rows, and the closed-buffer outbox.

Each buffered message is a row of its own keyed by its Discord message id (an append, never a
rewrite of a growing JSON array). A buffer row with status ``closed`` is the durable hand-off
to the NoteWriter: it stays until its note is committed.

Written once for both engines (:mod:`vivy.storage.dialect`). In a fenced store (a process of
a fleet on PostgreSQL) every write first checks that the process still holds the guild's
shard; a channel's effects are fenced once for all of them. The lists of pending work keep to
the store's shards.
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
from vivy.state.buffer import (
    AppendMessages,
    CloseBuffer,
    DeleteMessage,
    EditMessage,
    Effect,
    OpenBuffer,
)
from vivy.storage.dialect import Tx, in_scope
from vivy.storage.evidence import delete_evidence_message, edit_evidence_message

__all__ = [
    "append_messages",
    "apply_effects",
    "close_buffer",
    "closed_buffer_ids",
    "delete_stored_message",
    "edit_stored_message",
    "load_buffer",
    "open_buffer",
    "open_buffer_rows",
    "open_channels",
    "record_note_failure",
    "restore_channel",
    "watermark",
]

_BUFFER_COLUMNS = (
    "id, guild_id, channel_id, channel_name, status, started_at, last_message_at, "
    "inactivity_s, closed_at, close_reason, attempts, next_attempt_at"
)


def open_buffer(
    tx: Tx,
    guild_id: int,
    channel_id: int,
    channel_name: str,
    started_at: float,
    inactivity_s: float,
) -> int:
    """Create an open buffer for the channel and return its id."""
    tx.check_fence(guild_id)
    return _open(tx, guild_id, channel_id, channel_name, started_at, inactivity_s)


def _open(
    tx: Tx,
    guild_id: int,
    channel_id: int,
    channel_name: str,
    started_at: float,
    inactivity_s: float,
) -> int:
    return int(
        tx.scalar(
            "INSERT INTO channel_buffers (guild_id, channel_id, channel_name, status, started_at,"
            " last_message_at, inactivity_s) VALUES (?, ?, ?, 'open', ?, ?, ?) RETURNING id",
            (guild_id, channel_id, channel_name, started_at, started_at, inactivity_s),
        )
    )


_INSERT_MESSAGE = (
    "INSERT INTO buffer_messages (message_id, buffer_id, author_id, author_name, text,"
    " created_at, mentions) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING"
)
_INSERT_REPLY = (
    "INSERT INTO buffer_messages (message_id, buffer_id, author_id, author_name, text,"
    " created_at, mentions, reply_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (message_id) DO NOTHING"
)


def append_messages(
    tx: Tx, buffer_id: int, messages: Sequence[BufferedMessage], last_at: float
) -> frozenset[int]:
    """Append messages to an open buffer and move its last-message time to ``last_at``.

    Returns the ids that were not appended because another buffer already holds them
    (Discord ids are unique, so only a bogus or replayed event can cause that); only then
    does it look them up, so the common case is one ``executemany`` and one update.
    """
    if tx.fenced:
        tx.check_fence(_buffer_guild(tx, buffer_id))
    return _append(tx, buffer_id, messages, last_at)


def _append(
    tx: Tx, buffer_id: int, messages: Sequence[BufferedMessage], last_at: float
) -> frozenset[int]:
    """:func:`append_messages`, unfenced.

    Where binding a NULL is costly (sqlean looks for ``__adapt__`` and ``__conform__`` by
    raising and clearing two AttributeErrors, a large share of the cost of inserting the
    row), messages that reply to nothing are inserted by a statement that leaves
    ``reply_to`` to its NULL default.
    """
    plain: list[tuple[int, int, int, str, str, float, str]] = []
    replies: list[tuple[int, int, int, str, str, float, str, int | None]] = []
    split = tx.dialect.null_binding_costly
    for m in messages:
        mentions = json.dumps(list(m.mentions)) if m.mentions else "[]"
        row = (m.message_id, buffer_id, m.author_id, m.author_name, m.text, m.created_at, mentions)
        if split and m.reply_to is None:
            plain.append(row)
        else:
            replies.append((*row, m.reply_to))
    inserted = tx.executemany(_INSERT_MESSAGE, plain) + tx.executemany(_INSERT_REPLY, replies)
    taken: frozenset[int] = frozenset()
    if inserted < len(messages):
        ids, params = tx.dialect.any("message_id", [m.message_id for m in messages])
        taken = frozenset(
            int(r[0])
            for r in tx.all(
                f"SELECT message_id FROM buffer_messages WHERE buffer_id != ? AND {ids}",
                [buffer_id, *params],
            )
        )
    tx.execute("UPDATE channel_buffers SET last_message_at = ? WHERE id = ?", (last_at, buffer_id))
    return taken


def edit_stored_message(tx: Tx, message_id: int, text: str, edited_at: float) -> bool:
    """Replace a message's text wherever it is buffered or kept as a note's evidence;
    False if it is neither."""
    if tx.fenced:
        tx.check_fence(_message_guild(tx, message_id))
    return _edit(tx, message_id, text, edited_at)


def _edit(tx: Tx, message_id: int, text: str, edited_at: float) -> bool:
    cursor = tx.execute(
        "UPDATE buffer_messages SET text = ?, edited_at = ? WHERE message_id = ?",
        (text, edited_at, message_id),
    )
    buffered = cursor.rowcount > 0
    kept = edit_evidence_message(tx, message_id, text)
    return buffered or kept


def delete_stored_message(tx: Tx, message_id: int) -> bool:
    """Delete a message wherever it is buffered or kept as a note's evidence; False if it
    is neither."""
    if tx.fenced:
        tx.check_fence(_message_guild(tx, message_id))
    return _delete(tx, message_id)


def _delete(tx: Tx, message_id: int) -> bool:
    cursor = tx.execute("DELETE FROM buffer_messages WHERE message_id = ?", (message_id,))
    buffered = cursor.rowcount > 0
    kept = delete_evidence_message(tx, message_id)
    return buffered or kept


def close_buffer(tx: Tx, buffer_id: int, closed_at: float, reason: CloseReason) -> None:
    """Turn an open buffer into a closed outbox row and advance the channel's watermark.

    The watermark is the newest message id of the channel's closed buffers; a redelivered
    message at or below it is recognised as a duplicate after its buffer is gone.
    """
    if tx.fenced:
        tx.check_fence(_buffer_guild(tx, buffer_id))
    _close(tx, buffer_id, closed_at, reason)


def _close(tx: Tx, buffer_id: int, closed_at: float, reason: CloseReason) -> None:
    tx.execute(
        "UPDATE channel_buffers SET status = 'closed', closed_at = ?, close_reason = ?,"
        " next_attempt_at = ? WHERE id = ? AND status = 'open'",
        (closed_at, reason.value, closed_at, buffer_id),
    )
    tx.execute(
        "INSERT INTO channel_watermarks AS w (channel_id, last_message_id)"
        " SELECT b.channel_id, MAX(m.message_id) FROM channel_buffers b"
        " JOIN buffer_messages m ON m.buffer_id = b.id WHERE b.id = ? GROUP BY b.channel_id"
        " ON CONFLICT (channel_id) DO UPDATE SET last_message_id ="
        f" {tx.dialect.greatest}(w.last_message_id, excluded.last_message_id)",
        (buffer_id,),
    )


def _buffer_guild(tx: Tx, buffer_id: int) -> int | None:
    """The guild of a buffer (None when it is gone)."""
    row = tx.one("SELECT guild_id FROM channel_buffers WHERE id = ?", (buffer_id,))
    return None if row is None else int(row[0])


def _message_guild(tx: Tx, message_id: int) -> int | None:
    """The guild of the buffer holding a message (None when no buffer does)."""
    row = tx.one(
        "SELECT b.guild_id FROM buffer_messages m JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE m.message_id = ?",
        (message_id,),
    )
    return None if row is None else int(row[0])


def record_note_failure(tx: Tx, buffer_id: int, error: str, next_attempt_at: float) -> None:
    """Count a failed note attempt; the buffer stays pending until ``next_attempt_at``."""
    tx.execute(
        "UPDATE channel_buffers SET attempts = attempts + 1, last_error = ?,"
        " next_attempt_at = ? WHERE id = ?",
        (error[:500], next_attempt_at, buffer_id),
    )


def watermark(tx: Tx, channel_id: int) -> int:
    """The channel's watermark (0 when no buffer of it has closed yet)."""
    row = tx.execute(
        "SELECT last_message_id FROM channel_watermarks WHERE channel_id = ?", (channel_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def _row(values: Sequence[object]) -> BufferRow:
    return BufferRow(*values)  # type: ignore[arg-type]


def _messages(tx: Tx, buffer_id: int) -> tuple[BufferedMessage, ...]:
    rows = tx.execute(
        "SELECT message_id, author_id, author_name, text, created_at, reply_to, mentions"
        " FROM buffer_messages WHERE buffer_id = ? ORDER BY message_id",
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


def load_buffer(tx: Tx, buffer_id: int) -> StoredBuffer | None:
    """A buffer with its messages, or None if it no longer exists."""
    row = tx.execute(
        f"SELECT {_BUFFER_COLUMNS} FROM channel_buffers WHERE id = ?", (buffer_id,)
    ).fetchone()
    if row is None:
        return None
    return StoredBuffer(_row(tuple(row)), _messages(tx, buffer_id))


def open_buffer_rows(tx: Tx, channel_id: int | None = None) -> list[BufferRow]:
    """Open buffers (of one channel, or all of the store's guilds), oldest first."""
    if channel_id is None:
        condition, params = in_scope(tx)
        rows = tx.all(
            f"SELECT {_BUFFER_COLUMNS} FROM channel_buffers WHERE status = 'open'{condition}"
            " ORDER BY id",
            params,
        )
    else:
        rows = tx.execute(
            f"SELECT {_BUFFER_COLUMNS} FROM channel_buffers"
            " WHERE status = 'open' AND channel_id = ?",
            (channel_id,),
        ).fetchall()
    return [_row(tuple(r)) for r in rows]


def closed_buffer_ids(tx: Tx) -> list[tuple[int, float]]:
    """Closed buffers of the store's guilds awaiting their note, as (id, next attempt time),
    oldest first."""
    condition, params = in_scope(tx)
    rows = tx.all(
        "SELECT id, COALESCE(next_attempt_at, 0) FROM channel_buffers"
        f" WHERE status = 'closed'{condition} ORDER BY id",
        params,
    )
    return [(int(r[0]), float(r[1])) for r in rows]


def restore_channel(tx: Tx, channel_id: int) -> tuple[tuple[BufferRow, frozenset[int]] | None, int]:
    """The channel's open buffer with its message ids (None if it has none), and its watermark."""
    mark = watermark(tx, channel_id)
    rows = open_buffer_rows(tx, channel_id)
    if not rows:
        return None, mark
    row = rows[0]
    ids = frozenset(
        int(r[0])
        for r in tx.execute(
            "SELECT message_id FROM buffer_messages WHERE buffer_id = ?", (row.id,)
        ).fetchall()
    )
    return (row, ids), mark


def open_channels(tx: Tx) -> list[tuple[int, int]]:
    """The (guild id, channel id) of every channel with an open buffer, oldest buffer first."""
    return [(row.guild_id, row.channel_id) for row in open_buffer_rows(tx)]


def apply_effects(
    tx: Tx,
    guild_id: int,
    channel_id: int,
    buffer_id: int | None,
    effects: Sequence[Effect],
) -> AppliedEffects:
    """Carry out a channel buffer machine's storage effects in order, in one transaction,
    fenced once for all of them. ``buffer_id`` is the channel's open buffer before them;
    effects that store nothing are skipped."""
    tx.check_fence(guild_id)
    applied = AppliedEffects(buffer_id)
    taken: set[int] = set()
    for index, effect in enumerate(effects):
        if isinstance(effect, AppendMessages):  # one executemany for the burst
            assert applied.buffer_id is not None
            taken.update(_append(tx, applied.buffer_id, effect.messages, effect.at))
        elif isinstance(effect, OpenBuffer):
            applied.buffer_id = _open(
                tx,
                guild_id,
                channel_id,
                effect.channel_name,
                effect.started_at,
                effect.inactivity_s,
            )
            applied.opened += 1
        elif isinstance(effect, CloseBuffer):
            current = applied.buffer_id
            if current is None:
                rows = open_buffer_rows(tx, channel_id)
                if not rows:
                    raise LookupError(f"channel {channel_id} has no open buffer to close")
                current = rows[0].id
            _close(tx, current, effect.closed_at, effect.reason)
            applied.closed.append((current, effect.reason))
            applied.buffer_id = None
        elif isinstance(effect, EditMessage):
            applied.found[index] = _edit(tx, effect.message_id, effect.text, effect.edited_at)
        elif isinstance(effect, DeleteMessage):
            applied.found[index] = _delete(tx, effect.message_id)
    applied.taken = frozenset(taken)
    return applied
