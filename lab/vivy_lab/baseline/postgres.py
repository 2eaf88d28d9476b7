"""The raw PostgreSQL baselines ``vivy bench ingest --db postgresql://…`` measures against.

The PostgreSQL side of :mod:`vivy_lab.baseline.sqlite`, storage operations of the benchmark
only: :class:`PgRawMessageTable` is plain psycopg's ceiling (one ``executemany`` of the rows
into Vivy's own ``buffer_messages`` table in one transaction, pipelined by psycopg) and
:class:`PgJsonRewriteTable` is seed 002's design (a JSON array per channel, rewritten per
message in its own transaction). Each works in a fresh schema of its own (a URL from
:func:`vivy_lab.scratch.new_schema`); the benchmark times their calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from vivy.storage.postgres.db import connect, migrate
from vivy_lab.baseline.sqlite import RawMessageRow

__all__ = ["PgJsonRewriteTable", "PgRawMessageTable", "count_buffered_messages"]


def count_buffered_messages(url: str) -> int:
    """Buffered message rows in the database (schema) at ``url``, on a fresh connection."""
    with connect(url) as conn:
        row = conn.execute("SELECT COUNT(*) FROM buffer_messages").fetchone()
    return int(row[0]) if row else 0


class PgRawMessageTable:
    """Vivy's migrated schema at ``url`` taking message rows with one plain ``executemany``."""

    def __init__(self, url: str) -> None:
        self._conn = connect(url)
        migrate(self._conn)
        self._buffers: dict[int, int] = {}

    def open_buffers(self, guild_id: int, channel_ids: Iterable[int], at: float) -> None:
        """One open buffer row per channel, so the rows' foreign keys hold (not timed)."""
        with self._conn.transaction():
            for channel_id in sorted(set(channel_ids)):
                row = self._conn.execute(
                    "INSERT INTO channel_buffers (guild_id, channel_id, status, started_at,"
                    " last_message_at, inactivity_s) VALUES (%s, %s, 'open', %s, %s, 1500.0)"
                    " RETURNING id",
                    (guild_id, channel_id, at, at),
                ).fetchone()
                assert row is not None
                self._buffers[channel_id] = int(row[0])

    def bind(self, rows: Sequence[RawMessageRow]) -> list[tuple[object, ...]]:
        """The parameters of the rows, each under its channel's buffer (not timed)."""
        return [
            (message_id, self._buffers[channel], author, name, text, at, reply, json.dumps(list(m)))
            for message_id, channel, author, name, text, at, reply, m in rows
        ]

    def insert(self, bound: Sequence[tuple[object, ...]]) -> None:
        """Insert rows from :meth:`bind` with one ``executemany`` in one transaction."""
        with self._conn.transaction(), self._conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO buffer_messages (message_id, buffer_id, author_id, author_name,"
                " text, created_at, reply_to, mentions) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                bound,
            )

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


_JSON_DDL = """
CREATE TABLE channel_buffers (
    channel_id  TEXT PRIMARY KEY,
    guild_id    TEXT NOT NULL,
    messages    TEXT NOT NULL,
    started_at  TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP,
    updated_at  TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP
)
"""


class PgJsonRewriteTable:
    """Seed 002's buffer table in the fresh schema at ``url``: a JSON array per channel,
    rewritten for every message in its own transaction."""

    def __init__(self, url: str, *, buffer_size: int) -> None:
        self._conn = connect(url)
        self._conn.execute(_JSON_DDL)
        self._buffer_size = buffer_size

    def append(self, guild_id: int, channel_id: int, entry: Mapping[str, str]) -> None:
        """One seed-002 upsert: SELECT the array, append in memory, write it back, commit.

        A full buffer (``buffer_size`` messages) was flushed: its array starts over.
        """
        conn = self._conn
        channel = str(channel_id)
        with conn.transaction():
            row = conn.execute(
                "SELECT messages FROM channel_buffers WHERE channel_id = %s FOR UPDATE",
                (channel,),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO channel_buffers (channel_id, guild_id, messages)"
                    " VALUES (%s, %s, %s)",
                    (channel, str(guild_id), json.dumps([dict(entry)])),
                )
                return
            buffered: list[dict[str, str]] = json.loads(row[0])
            if len(buffered) >= self._buffer_size:
                buffered = []
            buffered.append(dict(entry))
            conn.execute(
                "UPDATE channel_buffers SET messages = %s, updated_at = CURRENT_TIMESTAMP"
                " WHERE channel_id = %s",
                (json.dumps(buffered), channel),
            )

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
