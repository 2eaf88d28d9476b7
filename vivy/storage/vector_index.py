"""An in-memory copy of each guild's note vectors, for a fast two-step approximate KNN.

A KNN over the binary vectors by sqlite-vec's ``vec0`` scans the guild's partition row by row,
which in a large guild takes most of the retrieval budget. The same scan over numpy columns of
64-bit words (XOR, popcount, partial sort) takes a fraction of that, so ``vec_notes`` is a
plain table and this copy is its only index. Beside the bits, the copy keeps each vector's
leading :data:`~vivy.storage.vectors.BINARY_PREFIX_DIMENSIONS` dimensions as int8 codes
(scaled per vector): they order the hamming candidates by an approximate cosine, so that only
a short list of them is read from the database and compared exactly (reading a float vector
costs a page of the table, comparing codes in memory a few hundred bytes). On PostgreSQL the
copy replaced an HNSW index, which kept fewer of the true nearest notes and, at 100k notes,
did not stay in a default ``shared_buffers``. The copy is a cache of what the database holds,
never a second source of truth:

- before every search it is checked against the database: the guild's notes added since
  (a guild's note ids grow in the order their transactions commit, :func:`vectors_adding`)
  are read and appended; a removal or replacement of vectors (forget-me, re-embedding) bumps
  the guild's row in ``vector_generations`` in the same transaction, and a copy with an older
  generation is loaded again;
- the candidates it returns are re-ranked exactly from ``vec_notes``'s float vectors.

Both engines keep their copies so (PostgreSQL as SQLite: the same search, the same results);
each reads its rows through a :class:`VectorReader`. Loading a guild reads its rows in note
order, in batches, so its float vectors pass through memory a batch at a time; it happens
once per process and guild.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from vivy.memory.notes import NoteType
from vivy.storage.vectors import VEC_KINDS, binary_dimensions

if TYPE_CHECKING:
    from vivy.storage.dialect import Tx

__all__ = [
    "EXACT_SHARE",
    "BinaryIndex",
    "VectorLengthError",
    "VectorReader",
    "query_bits",
    "vectors_adding",
    "vectors_replaced",
]

#: Bytes in one numpy column word.
_WORD = 8
#: The largest magnitude of an int8 code.
_CODE_MAX = 127
#: Notes a vector search compares exactly, per note it keeps: the codes' approximate cosine
#: (:meth:`BinaryIndex.shortlist`) orders the hamming candidates, and the margin covers its
#: error, so the notes kept are those an exact comparison of every candidate keeps.
EXACT_SHARE = 1.5
#: Rows read from the database at a time when loading a guild.
LOAD_BATCH = 4096
#: A row of ``vec_notes`` as the copy reads it: note id, kind, bits (as
#: :func:`query_bits` makes them) and float vector (a float32 blob).
Row = tuple[int, str, bytes, bytes]


def vectors_adding(tx: Tx, guild_id: int) -> None:
    """Take the guild's turn to add notes: call it in the transaction that adds a note, before
    the note's id is drawn. It locks the guild's row in ``vector_generations`` until the
    transaction ends, so a guild's notes get their ids in the order their transactions commit;
    a copy that has read the guild's notes up to some id has then missed none below it.
    (PostgreSQL draws ids from a sequence before commit, so two writers of one guild could
    otherwise commit them out of order; SQLite's one writer always commits in order.)"""
    tx.execute(
        "INSERT INTO vector_generations (guild_id, generation) VALUES (?, 0)"
        " ON CONFLICT (guild_id) DO UPDATE SET generation = vector_generations.generation",
        (guild_id,),
    )


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
        " ON CONFLICT (guild_id) DO UPDATE SET generation = vector_generations.generation + 1",
        params,
    )


class VectorLengthError(ValueError):
    """A question's vector has another length than every vector of the guild: it was embedded
    by another model than the guild's notes."""


def query_bits(vector: bytes) -> bytes:
    """The binary copy of ``vector`` (a float32 blob), as sqlite-vec's
    ``vec_quantize_binary(vec_slice(vector, 0, binary_dimensions(n)))`` makes the notes':
    one bit a leading dimension, set where it is positive, the first dimension in the lowest
    bit of the first byte."""
    floats = np.frombuffer(vector, dtype=np.float32)
    leading = floats[: binary_dimensions(floats.size)]
    return np.packbits(leading > 0, bitorder="little").tobytes()


@dataclasses.dataclass(frozen=True, slots=True)
class _GuildVectors:
    """One guild's vectors: bits as word columns (a row of ``columns`` per 64-bit word),
    int8 codes by row with their norms, each row's float length (and every length held), and
    the newest note id the copy holds.

    The first ``size`` rows of the arrays hold the copy; the rest is room for notes to come.
    Appending writes there and makes a new copy of the greater size, so that a search still
    holding this one reads only its own rows, and a large guild's arrays (tens of megabytes
    of codes) are copied only when the room runs out.
    """

    generation: int
    seen_note_id: int
    size: int
    ids: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.int8]
    columns: npt.NDArray[np.uint64]
    codes: npt.NDArray[np.int8]
    norms: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.int32]
    held: frozenset[int]


#: The room a guild's copy makes when it outgrows its arrays, as a share of its rows (and at
#: least :data:`_LEAST_ROOM` rows, all it makes when loaded).
_ROOM = 0.25
_LEAST_ROOM = 1024


def _empty(generation: int) -> _GuildVectors:
    """A copy of a guild without vectors."""
    return _GuildVectors(
        generation,
        0,
        0,
        np.empty(0, np.int64),
        np.empty(0, np.int8),
        np.empty((0, 0), np.uint64),
        np.empty((0, 0), np.int8),
        np.empty(0, np.float32),
        np.empty(0, np.int32),
        frozenset(),
    )


def _kind_code(kind: str) -> int:
    return 1 if kind == VEC_KINDS[NoteType.TOPIC_CLUSTER] else 0


C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


class VectorReader(Protocol[C_contra]):
    """An engine's reads of ``vec_notes`` for the copy, on its connection type."""

    def state(self, conn: C_contra, guild_id: int) -> tuple[int, int]:
        """The guild's vector generation (0 without a row) and its newest note id with a
        vector (0 without one)."""
        ...

    def rows_after(self, conn: C_contra, guild_id: int, after: int) -> Iterator[Sequence[Row]]:
        """The guild's rows with a note id above ``after``, in note order, in batches of at
        most :data:`LOAD_BATCH`."""
        ...


class BinaryIndex(Generic[C]):
    """Per-guild in-memory binary vectors and int8 codes of one database, kept in step with it
    through ``reader`` (its engine's reads) on the connection each search passes.

    Thread-safe: searches run on the storage owner's worker threads.
    """

    def __init__(self, reader: VectorReader[C]) -> None:
        self._reader = reader
        self._guilds: dict[int, _GuildVectors] = {}
        self._lock = threading.Lock()

    def nearest(
        self, conn: C, guild_id: int, bits: bytes, k: int, *, kind: str | None
    ) -> list[int]:
        """Ids of the guild's ``k`` notes nearest to ``bits`` by hamming distance, nearest
        first (ties by id); ``kind`` (a ``vec_notes.note_kind``) None searches both kinds."""
        with self._lock:
            guild = self._current(conn, guild_id)
        return [int(note_id) for note_id in guild.ids[_hamming(guild, bits, k, kind)]]

    def shortlist(
        self,
        conn: C,
        guild_id: int,
        vector: bytes,
        *,
        candidates: int,
        keep: int,
        kind: str | None,
    ) -> list[int]:
        """Ids of the ``keep`` notes, of the guild's ``candidates`` nearest to ``vector`` (a
        float32 blob) by hamming distance (:meth:`nearest`), whose codes are nearest it by
        cosine; best first, ties by id. Notes whose vectors have another length than
        ``vector`` (a half-done re-embedding) or are all zeros are left out, as an exact
        comparison skips them.

        Raises :class:`VectorLengthError` when the guild has vectors but none of the length
        of ``vector``."""
        with self._lock:
            guild = self._current(conn, guild_id)
        floats = np.frombuffer(vector, dtype=np.float32)
        if guild.held and floats.size not in guild.held:
            raise VectorLengthError(
                f"the question's vector has {floats.size} dimensions, the guild's notes"
                f" {', '.join(str(n) for n in sorted(guild.held))}"
            )
        rows = _hamming(guild, query_bits(vector), candidates, kind)
        query = np.zeros(guild.codes.shape[1], dtype=np.float32)
        leading = floats[: query.size]
        query[: leading.size] = leading
        comparable = (guild.lengths[rows] == floats.size) & (guild.norms[rows] > 0)
        rows = rows[comparable]
        # numpy's own loop, not BLAS: a BLAS product of this size wakes the library's threads,
        # which then spin on the core the keyword searches run on.
        similarity = np.einsum("wd,d->w", guild.codes[rows], query) / guild.norms[rows]
        order = np.lexsort((guild.ids[rows], -similarity))[:keep]
        return [int(note_id) for note_id in guild.ids[rows[order]]]

    def to_compare(
        self,
        conn: C,
        guild_id: int,
        vector: bytes,
        *,
        note_type: str | None,
        limit: int,
        candidates: int,
    ) -> list[int]:
        """The notes whose float vectors a search keeping ``limit`` notes compares exactly:
        :meth:`shortlist` of the guild's ``candidates`` (at least ``limit``) nearest to
        ``vector`` by hamming, keeping :data:`EXACT_SHARE` times ``limit``; ``note_type``
        None searches both types."""
        return self.shortlist(
            conn,
            guild_id,
            vector,
            candidates=max(candidates, limit),
            keep=math.ceil(limit * EXACT_SHARE),
            kind=None if note_type is None else VEC_KINDS[note_type],
        )

    def _current(self, conn: C, guild_id: int) -> _GuildVectors:
        """The guild's copy, loaded or brought up to date from the database."""
        generation, newest = self._reader.state(conn, guild_id)
        guild = self._guilds.get(guild_id)
        if guild is None or guild.generation != generation:
            guild = _empty(generation)
        elif newest <= guild.seen_note_id:
            return guild
        # The rows after the newest the copy holds: a guild's note ids grow in commit order.
        blocks: list[_Block] = []
        shape: tuple[int, int] | None = None
        for rows in self._reader.rows_after(conn, guild_id, guild.seen_note_id):
            shape = shape or _shape(guild, rows[0])
            blocks.append(_block(rows, *shape))
        guild = _appended(guild, blocks) if blocks else guild
        self._guilds[guild_id] = guild
        return guild


def _hamming(guild: _GuildVectors, bits: bytes, k: int, kind: str | None) -> npt.NDArray[np.intp]:
    """The rows of the guild's ``k`` notes nearest to ``bits`` by hamming distance, nearest
    first (ties by id), of ``kind`` (None: both kinds)."""
    none = np.empty(0, np.intp)
    size = guild.size
    if size == 0 or k <= 0:
        return none
    query = np.frombuffer(_padded(bits, len(guild.columns)), dtype=np.uint64)
    distance = np.zeros(size, dtype=np.uint16)
    word = np.empty(size, dtype=np.uint64)
    for column, value in zip(guild.columns, query, strict=True):
        np.bitwise_xor(column[:size], value, out=word)
        distance += np.bitwise_count(word)
    # Other kinds sit one past the largest possible distance, so they come last.
    farthest = 64 * len(guild.columns) + 1
    eligible = size
    if kind is not None:
        outside = guild.kinds[:size] != _kind_code(kind)
        distance[outside] = farthest
        eligible -= int(np.count_nonzero(outside))
    k = min(k, eligible)
    if k <= 0:
        return none
    # Every row within the k-th smallest distance is a candidate (partitioning the
    # distances finds it quicker than ``argpartition`` finds the rows).
    within = int(np.partition(distance, k - 1)[k - 1])
    picked = np.flatnonzero(distance <= within)
    return picked[np.lexsort((guild.ids[picked], distance[picked]))][:k]


def _padded(bits: bytes, words: int) -> bytes:
    """``bits`` as ``words`` 64-bit words: zero-padded, or cut to their leading bits (a vector
    longer than the copy's first, compared on the bits they share)."""
    return bits[: words * _WORD].ljust(words * _WORD, b"\0")


@dataclasses.dataclass(frozen=True, slots=True)
class _Block:
    """Some rows of ``vec_notes`` in the copy's forms, to be joined to a guild's."""

    ids: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.int8]
    bits: npt.NDArray[np.uint64]
    codes: npt.NDArray[np.int8]
    norms: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.int32]


def _shape(guild: _GuildVectors, row: Row) -> tuple[int, int]:
    """The 64-bit words of bits and the width of codes of the guild's copy; for an empty
    copy, of ``row``'s vector."""
    if guild.size:
        return len(guild.columns), guild.codes.shape[1]
    return -(-len(row[2]) // _WORD), binary_dimensions(len(row[3]) // 4)


def _block(rows: Sequence[Row], words: int, width: int) -> _Block:
    """``rows`` in the copy's forms: the bits padded to ``words`` 64-bit words, and the codes
    of the leading ``width`` dimensions, each vector scaled so that its largest magnitude is
    :data:`_CODE_MAX`."""
    size = width * 4
    bits = np.frombuffer(b"".join(_padded(row[2], words) for row in rows), dtype=np.uint64).reshape(
        len(rows), words
    )
    floats = np.frombuffer(
        b"".join(row[3][:size].ljust(size, b"\0") for row in rows), dtype=np.float32
    ).reshape(len(rows), width)
    largest = np.abs(floats).max(axis=1, keepdims=True)
    scale = np.divide(_CODE_MAX, largest, out=np.zeros_like(largest), where=largest > 0)
    codes = np.rint(floats * scale).astype(np.int8)
    return _Block(
        np.fromiter((int(row[0]) for row in rows), dtype=np.int64, count=len(rows)),
        np.fromiter((_kind_code(row[1]) for row in rows), dtype=np.int8, count=len(rows)),
        bits,
        codes,
        np.linalg.norm(codes.astype(np.float32), axis=1).astype(np.float32),
        np.fromiter((len(row[3]) // 4 for row in rows), dtype=np.int32, count=len(rows)),
    )


def _appended(guild: _GuildVectors, blocks: Sequence[_Block]) -> _GuildVectors:
    """``guild`` with ``blocks`` added after its rows, in order: written into its room, or
    into new arrays with room to spare when it has too little."""
    start = guild.size
    size = start + sum(block.ids.size for block in blocks)
    if size > guild.ids.size:
        # A guild loaded whole gains notes slowly: its first arrays leave the least room.
        room = _LEAST_ROOM if start == 0 else max(_LEAST_ROOM, int(size * _ROOM))
        guild = _grown(guild, size + room, blocks[0])
    at = start
    for block in blocks:
        end = at + block.ids.size
        guild.ids[at:end] = block.ids
        guild.kinds[at:end] = block.kinds
        guild.columns[:, at:end] = block.bits.T
        guild.codes[at:end] = block.codes
        guild.norms[at:end] = block.norms
        guild.lengths[at:end] = block.lengths
        at = end
    return dataclasses.replace(
        guild,
        seen_note_id=max(guild.seen_note_id, int(guild.ids[start:size].max())),
        size=size,
        held=guild.held.union(*(np.unique(block.lengths).tolist() for block in blocks)),
    )


def _grown(guild: _GuildVectors, capacity: int, like: _Block) -> _GuildVectors:
    """``guild``'s rows in new arrays of ``capacity`` rows (shaped as ``like`` when the guild
    has none)."""
    size = guild.size
    words, width = like.bits.shape[1], like.codes.shape[1]
    columns = np.zeros((words, capacity), np.uint64)
    codes = np.zeros((capacity, width), np.int8)
    ids = np.zeros(capacity, np.int64)
    kinds = np.zeros(capacity, np.int8)
    norms = np.zeros(capacity, np.float32)
    lengths = np.zeros(capacity, np.int32)
    if size:
        columns[:, :size] = guild.columns[:, :size]
        codes[:size] = guild.codes[:size]
        ids[:size] = guild.ids[:size]
        kinds[:size] = guild.kinds[:size]
        norms[:size] = guild.norms[:size]
        lengths[:size] = guild.lengths[:size]
    return dataclasses.replace(
        guild, ids=ids, kinds=kinds, columns=columns, codes=codes, norms=norms, lengths=lengths
    )
