"""An in-memory copy of each guild's binary note vectors, for a fast hamming KNN.

A KNN over the binary vectors by sqlite-vec's ``vec0`` scans the guild's partition row by row,
which in a large guild takes most of the retrieval budget. The same scan over numpy columns of
64-bit words (XOR, popcount, partial sort) takes a fraction of that, so ``vec_notes`` is a
plain table and this copy is its only index. The copy is a cache of
what SQLite holds, never a second source of truth:

- before every search it is checked against the database: notes added since (note ids only
  grow) are read by id and appended; a removal or replacement of vectors (forget-me,
  re-embedding) bumps the guild's row in ``vector_generations`` in the same transaction, and
  a copy with an older generation is loaded again;
- the candidates it returns are re-ranked exactly from ``vec_notes``'s float vectors.

Loading a guild reads its rows' bits in note order through ``vec_notes_by_guild`` (the float
vectors stay on their overflow pages); it happens once per process and guild.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from sqlite3 import Connection
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vivy.memory.notes import NoteType
from vivy.storage.schema import VEC_KINDS

if TYPE_CHECKING:
    from vivy.storage.dialect import Tx

__all__ = ["BinaryIndex", "vectors_replaced"]

#: Bytes in one numpy column word.
_WORD = 8


def vectors_replaced(tx: Tx, note_ids: Sequence[int] | None = None) -> None:
    """Record that the vectors of ``note_ids`` (None: of every note) are removed or replaced.

    Call it in the transaction that changes ``vec_notes``, before the notes are deleted:
    it bumps the generation of each guild they belong to, so in-memory copies reload.
    """
    params: tuple[int, ...] = ()
    if note_ids is None:
        where = ""
    else:
        if not note_ids:
            return
        where = f" WHERE id IN ({','.join('?' * len(note_ids))})"
        params = tuple(note_ids)
    tx.execute(
        "INSERT INTO vector_generations (guild_id, generation)"
        f" SELECT DISTINCT guild_id, 1 FROM interaction_notes{where}"
        " ORDER BY guild_id"  # a SELECT in an upsert needs a clause before ON CONFLICT
        " ON CONFLICT (guild_id) DO UPDATE SET generation = generation + 1",
        params,
    )


@dataclass(slots=True)
class _GuildBits:
    """One guild's binary vectors as word columns, with what the copy has seen."""

    generation: int
    seen_note_id: int
    ids: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.int8]
    columns: list[npt.NDArray[np.uint64]]


def _kind_code(kind: str) -> int:
    return 1 if kind == VEC_KINDS[NoteType.TOPIC_CLUSTER] else 0


class BinaryIndex:
    """Per-guild in-memory binary vectors of one database, kept in step with it.

    Thread-safe: searches run on the storage owner's worker threads.
    """

    def __init__(self) -> None:
        self._guilds: dict[int, _GuildBits] = {}
        self._lock = threading.Lock()

    def nearest(
        self, conn: Connection, guild_id: int, bits: bytes, k: int, *, kind: str | None
    ) -> list[int]:
        """Ids of the guild's ``k`` notes nearest to ``bits`` by hamming distance, nearest
        first (ties by id); ``kind`` (a ``vec_notes.note_kind``) None searches both kinds."""
        with self._lock:
            guild = self._current(conn, guild_id)
        if guild.ids.size == 0 or k <= 0:
            return []
        query = np.frombuffer(_padded(bits, len(guild.columns)), dtype=np.uint64)
        if len(guild.columns) != query.size:
            raise ValueError("query bits and stored bits differ in length")
        distance = np.zeros(guild.ids.size, dtype=np.uint16)
        word = np.empty(guild.ids.size, dtype=np.uint64)
        for column, value in zip(guild.columns, query, strict=True):
            np.bitwise_xor(column, value, out=word)
            distance += np.bitwise_count(word)
        # Other kinds sit one past the largest possible distance, so they come last.
        farthest = 64 * len(guild.columns) + 1
        eligible = guild.ids.size
        if kind is not None:
            outside = guild.kinds != _kind_code(kind)
            distance[outside] = farthest
            eligible -= int(np.count_nonzero(outside))
        k = min(k, eligible)
        if k <= 0:
            return []
        # Every row within the k-th smallest distance is a candidate (partitioning the
        # distances finds it quicker than ``argpartition`` finds the rows).
        within = int(np.partition(distance, k - 1)[k - 1])
        picked = np.flatnonzero(distance <= within)
        order = picked[np.lexsort((guild.ids[picked], distance[picked]))][:k]
        return [int(note_id) for note_id in guild.ids[order]]

    def _current(self, conn: Connection, guild_id: int) -> _GuildBits:
        """The guild's copy, loaded or brought up to date from the database."""
        row = conn.execute(
            "SELECT generation FROM vector_generations WHERE guild_id = ?", (guild_id,)
        ).fetchone()
        generation = int(row[0]) if row is not None else 0
        guild = self._guilds.get(guild_id)
        if guild is None or guild.generation != generation:
            guild = self._load(conn, guild_id, generation)
            self._guilds[guild_id] = guild
            return guild
        newest = int(
            conn.execute("SELECT COALESCE(MAX(id), 0) FROM interaction_notes").fetchone()[0]
        )
        if newest <= guild.seen_note_id:
            return guild
        # Note ids only grow; ``+guild_id`` keeps the id range as the index used.
        added = [
            row
            for (note_id,) in conn.execute(
                "SELECT id FROM interaction_notes WHERE id > ? AND +guild_id = ? ORDER BY id",
                (guild.seen_note_id, guild_id),
            ).fetchall()
            for row in conn.execute(
                "SELECT note_id, note_kind, embedding_bits FROM vec_notes"
                " WHERE note_id = ? AND guild_id = ?",
                (note_id, guild_id),
            ).fetchall()
        ]
        guild = _appended(guild, added) if added else guild
        guild.seen_note_id = max(guild.seen_note_id, newest)
        self._guilds[guild_id] = guild
        return guild

    def _load(self, conn: Connection, guild_id: int, generation: int) -> _GuildBits:
        seen = _newest_note_id(conn)
        rows = conn.execute(
            "SELECT note_id, note_kind, embedding_bits FROM vec_notes WHERE guild_id = ?"
            " ORDER BY note_id",
            (guild_id,),
        ).fetchall()
        empty = _GuildBits(generation, seen, np.empty(0, np.int64), np.empty(0, np.int8), [])
        return _appended(empty, rows) if rows else empty


def _newest_note_id(conn: Connection) -> int:
    """The largest note id in the database (0 if none): a rowid read, O(1)."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM interaction_notes").fetchone()[0])


def _padded(bits: bytes, words: int) -> bytes:
    """``bits`` zero-padded to a whole number of 64-bit words (at least ``words``)."""
    size = max(words * _WORD, -(-len(bits) // _WORD) * _WORD)
    return bits + bytes(size - len(bits))


def _appended(guild: _GuildBits, rows: Sequence[tuple[int, str, bytes]]) -> _GuildBits:
    """``guild`` with ``rows`` (note id, kind, bits) added at the end."""
    words = len(guild.columns) or -(-len(rows[0][2]) // _WORD)
    matrix = np.frombuffer(
        b"".join(_padded(bytes(bits), words) for _, _, bits in rows), dtype=np.uint64
    ).reshape(len(rows), words)
    ids = np.fromiter((int(row[0]) for row in rows), dtype=np.int64, count=len(rows))
    kinds = np.fromiter((_kind_code(row[1]) for row in rows), dtype=np.int8, count=len(rows))
    columns = [
        np.concatenate((old, matrix[:, j])) if guild.columns else matrix[:, j].copy()
        for j, old in enumerate(guild.columns or [np.empty(0, np.uint64)] * words)
    ]
    return _GuildBits(
        guild.generation,
        max(guild.seen_note_id, int(ids.max())),
        np.concatenate((guild.ids, ids)),
        np.concatenate((guild.kinds, kinds)),
        columns,
    )
