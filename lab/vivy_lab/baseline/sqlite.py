"""The raw SQLite baselines ``vivy bench ingest`` measures Vivy's ingest path against.

These are storage operations of the benchmark only, never of the bot: :class:`RawMessageTable`
is the ceiling of what SQLite can take (one ``executemany`` of the rows into Vivy's own
``buffer_messages`` table in one transaction) and :class:`JsonRewriteTable` is seed 002's
design (one row per channel holding a JSON array of its messages, rewritten per message). Both
open fresh databases with the same pragmas as Vivy's (:func:`~vivy.storage.sqlite.db.connect`); the
benchmark times their calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from vivy.storage.sqlite.db import connect, migrate

__all__ = ["JsonRewriteTable", "RawMessageRow", "RawMessageTable", "count_buffered_messages"]

#: A ``buffer_messages`` row as the baseline binds it: message id, channel id (its buffer is
#: looked up before timing), author id, author name, text, created at, reply-to, mentions.
RawMessageRow = tuple[int, int, int, str, str, float, int | None, Sequence[int]]


def count_buffered_messages(path: Path) -> int:
    """Buffered message rows in the database at ``path``, read on a fresh connection."""
    conn = connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM buffer_messages").fetchone()[0])
    finally:
        conn.close()


class RawMessageTable:
    """A fresh Vivy database taking message rows with one plain ``executemany``."""

    def __init__(self, path: Path) -> None:
        self._conn = connect(path)
        migrate(self._conn)
        self._buffers: dict[int, int] = {}

    def open_buffers(self, guild_id: int, channel_ids: Iterable[int], at: float) -> None:
        """One open buffer row per channel, so the rows' foreign keys hold (not timed)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        for channel_id in sorted(set(channel_ids)):
            cursor = conn.execute(
                "INSERT INTO channel_buffers (guild_id, channel_id, status, started_at,"
                " last_message_at, inactivity_s) VALUES (?, ?, 'open', ?, ?, 1500.0)",
                (guild_id, channel_id, at, at),
            )
            self._buffers[channel_id] = int(cursor.lastrowid or 0)
        conn.execute("COMMIT")

    def bind(self, rows: Sequence[RawMessageRow]) -> list[tuple[object, ...]]:
        """The parameters of the rows, each under its channel's buffer (not timed)."""
        return [
            (message_id, self._buffers[channel], author, name, text, at, reply, json.dumps(list(m)))
            for message_id, channel, author, name, text, at, reply, m in rows
        ]

    def insert(self, bound: Sequence[tuple[object, ...]]) -> None:
        """Insert rows from :meth:`bind` with one ``executemany`` in one transaction."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO buffer_messages (message_id, buffer_id, author_id, author_name, text,"
            " created_at, reply_to, mentions) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            bound,
        )
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


_JSON_DDL = """
CREATE TABLE channel_buffers (
    channel_id  TEXT PRIMARY KEY,
    guild_id    TEXT NOT NULL,
    messages    TEXT NOT NULL,
    started_at  DATETIME DEFAULT CURRENT_TIMESTAMP,
    updated_at  DATETIME DEFAULT CURRENT_TIMESTAMP
)
"""


class JsonRewriteTable:
    """Seed 002's buffer table in a fresh database: a JSON array per channel, rewritten for
    every message in its own transaction."""

    def __init__(self, path: Path, *, buffer_size: int) -> None:
        self._conn = connect(path)
        self._conn.execute(_JSON_DDL)
        self._buffer_size = buffer_size

    def append(self, guild_id: int, channel_id: int, entry: Mapping[str, str]) -> None:
        """One seed-002 upsert: SELECT the array, append in memory, write it back, commit.

        A full buffer (``buffer_size`` messages) was flushed: its array starts over.
        """
        conn = self._conn
        channel = str(channel_id)
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "SELECT messages FROM channel_buffers WHERE channel_id = ?", (channel,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO channel_buffers (channel_id, guild_id, messages) VALUES (?, ?, ?)",
                (channel, str(guild_id), json.dumps([dict(entry)])),
            )
        else:
            buffered: list[dict[str, str]] = json.loads(row[0])
            if len(buffered) >= self._buffer_size:
                buffered = []
            buffered.append(dict(entry))
            conn.execute(
                "UPDATE channel_buffers SET messages = ?, updated_at = CURRENT_TIMESTAMP"
                " WHERE channel_id = ?",
                (json.dumps(buffered), channel),
            )
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
