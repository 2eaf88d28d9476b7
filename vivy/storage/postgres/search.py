"""Note search on PostgreSQL: vector and keyword search over notes and their evidence.

These are the engine-specific reads of a search (:class:`_PgReads`); the order they run in and
their join into ranking candidates are written once for both engines
(:meth:`vivy.storage.search_flow.EngineReads.run`).
Keyword search and its term plans are in :mod:`vivy.storage.postgres.keywords`.

Rules, as for SQLite (:mod:`vivy.storage.sqlite.search`):

* Vector search runs in two steps, as on SQLite and through the same in-memory copy of the
  guild's vectors (:class:`~vivy.storage.vector_index.BinaryIndex`, read by
  :data:`PG_VECTORS`): its hamming and int8 candidates are re-ranked exactly by pgvector's
  cosine over their float vectors, so both engines find the same notes.
* Every read names the guild in its ``WHERE`` clause, before any ``LIMIT``.
* A failing vector search (a question embedded at another dimension) is reported in the
  result, as on SQLite; it runs in a savepoint, so the rest of the read goes on.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
from psycopg import pq
from psycopg.adapt import Dumper

from vivy.storage.candidates import KeywordMatch, VectorMatch, WindowMatch
from vivy.storage.dialect import Tx
from vivy.storage.postgres.db import SIDE_CONNECTIONS, PgConnection, PgSide
from vivy.storage.postgres.dialect import postgres_tx
from vivy.storage.postgres.keywords import keyword_search, plan_terms, window_keyword_search
from vivy.storage.search_flow import CONVERSATION, EngineReads, Found
from vivy.storage.search_types import (
    EVIDENCE_POSTINGS_BUDGET,
    KEYWORD_POSTINGS_BUDGET,
    NoteSearch,
    NoteSearchResult,
)
from vivy.storage.vector_index import (
    LOAD_BATCH,
    BinaryIndex,
    Row,
    VectorLengthError,
    query_bits,
)

__all__ = [
    "PG_VECTORS",
    "PgVector",
    "search_notes",
    "vector_bytes",
    "vector_param",
    "vector_search",
    "window_similarities",
]


class _PgVectors:
    """PostgreSQL's reads for the in-memory copies: ``vec_notes_by_guild`` (guild, note id)
    finds the newest note and the rows after it. pgvector's binary ``vector`` (its length,
    then float32 big-endian) becomes the float32 blob the copy takes, and its bits are made
    here (:func:`~vivy.storage.vector_index.query_bits`: PostgreSQL stores no bits)."""

    def state(self, conn: PgConnection, guild_id: int) -> tuple[int, int]:
        row = conn.execute(
            "SELECT (SELECT generation FROM vector_generations WHERE guild_id = %(g)s),"
            " (SELECT MAX(note_id) FROM vec_notes WHERE guild_id = %(g)s)",
            {"g": guild_id},
        ).fetchone()
        assert row is not None
        return int(row[0] or 0), int(row[1] or 0)

    def rows_after(self, conn: PgConnection, guild_id: int, after: int) -> Iterator[Sequence[Row]]:
        # One query a batch, each after the last one's note: psycopg's cursor would hold the
        # whole result in memory (every float vector of a large guild).
        cursor = conn.cursor(binary=True)
        while True:
            rows = cursor.execute(
                "SELECT note_id, note_kind, embedding FROM vec_notes"
                " WHERE guild_id = %s AND note_id > %s ORDER BY note_id LIMIT %s",
                (guild_id, after, LOAD_BATCH),
            ).fetchall()
            if rows:
                yield [_row(int(i), str(kind), bytes(vector)) for i, kind, vector in rows]
            if len(rows) < LOAD_BATCH:
                return
            after = int(rows[-1][0])


def _row(note_id: int, kind: str, vector: bytes) -> Row:
    """A row of the copy from pgvector's binary ``vector``."""
    floats = np.frombuffer(vector, dtype=">f4", offset=4).astype(np.float32).tobytes()
    return note_id, kind, query_bits(floats), floats


#: The reader of a PostgreSQL database's copies.
PG_VECTORS = _PgVectors()


def vector_search(
    conn: PgConnection,
    index: BinaryIndex[PgConnection],
    guild_id: int,
    vector: Sequence[float],
    *,
    note_type: str | None,
    limit: int,
    candidates: int,
) -> list[VectorMatch]:
    """The ``limit`` notes of the guild closest to ``vector`` by cosine, best first;
    ``note_type`` None searches both types.

    As on SQLite (:func:`vivy.storage.sqlite.search.vector_search`): ``candidates`` notes come from
    ``index`` (hamming KNN over the guild's bits in memory), their int8 codes shortlist
    :data:`~vivy.storage.vector_index.EXACT_SHARE` times ``limit`` of them, and pgvector compares
    their float vectors exactly. Raises
    :class:`~vivy.storage.vector_index.VectorLengthError` for a question of another
    dimension than the guild's vectors.
    """
    shortlist = index.to_compare(
        conn,
        guild_id,
        array("f", vector).tobytes(),
        note_type=note_type,
        limit=limit,
        candidates=candidates,
    )
    if not shortlist:
        return []
    rows = conn.execute(
        "SELECT note_id, 1 - (embedding <=> %(v)b::vector) AS similarity FROM vec_notes"
        " WHERE note_id = ANY(%(ids)s) AND guild_id = %(g)s"
        " ORDER BY similarity DESC, note_id LIMIT %(m)s",
        {"v": vector_param(vector), "ids": shortlist, "g": guild_id, "m": limit},
    ).fetchall()
    return [VectorMatch(int(note_id), float(similarity)) for note_id, similarity in rows]


class PgVector(bytes):
    """A vector in pgvector's binary form (:func:`vector_bytes`), bound as ``%b::vector``:
    psycopg sends it as it is (:class:`_VectorDumper`)."""


def vector_bytes(values: Sequence[float]) -> bytes:
    """pgvector's binary ``vector`` of ``values``: the dimension count, a zero, then the
    values as float32 big-endian (``vector_recv``'s input)."""
    floats = array("f", values)
    floats.byteswap()
    return struct.pack(">HH", len(floats), 0) + floats.tobytes()


class _VectorDumper(Dumper):
    """Dumps a :class:`PgVector` in binary; its type comes from the ``::vector`` cast (oid 0),
    so no connection needs to look the extension's type up first."""

    format = pq.Format.BINARY

    def dump(self, obj: object) -> bytes:
        """``obj``, a :class:`PgVector`, already in pgvector's binary form."""
        assert isinstance(obj, bytes)
        return obj


psycopg.adapters.register_dumper(PgVector, _VectorDumper)


def vector_param(values: Sequence[float]) -> PgVector:
    """``values`` as a query parameter bound as ``%b::vector``: cheaper than psycopg's binary
    ``float8[]`` of the floats, and no cast on the server."""
    return PgVector(vector_bytes(values))


def window_similarities(
    conn: PgConnection, guild_id: int, note_ids: Sequence[int], vector: Sequence[float] | None
) -> tuple[list[WindowMatch], dict[int, str]]:
    """The cosine similarity of ``vector`` (None: no similarities) to every
    embedded window of the guild's notes ``note_ids``, best first (windows embedded at
    another dimension are skipped), and the text of every window of those notes, which
    holds every window a candidate can show; one statement."""
    if not note_ids:
        return [], {}
    rows = conn.execute(
        "SELECT id, note_id, text, CASE WHEN %(v)b::vector IS NOT NULL"
        " AND embedding IS NOT NULL AND vector_dims(embedding) = %(d)s"
        " THEN 1 - (embedding <=> %(v)b::vector) END FROM evidence_windows"
        " WHERE note_id = ANY(%(ids)s) AND guild_id = %(g)s",
        {
            "v": None if vector is None else vector_param(vector),
            "ids": list(note_ids),
            "g": guild_id,
            "d": 0 if vector is None else len(vector),
        },
    ).fetchall()
    found = [WindowMatch(int(r[0]), int(r[1]), float(r[3])) for r in rows if r[3] is not None]
    found.sort(key=lambda match: (-match.score, match.window_id))
    return found, {int(r[0]): str(r[2]) for r in rows}


#: Threads for the keyword searches of a search (see :func:`search_notes`).
_KEYWORD_THREADS = ThreadPoolExecutor(max_workers=SIDE_CONNECTIONS, thread_name_prefix="vivy-pg")


class _PgReads(EngineReads[PgConnection]):
    """A search's reads on PostgreSQL: the guild's vectors in ``index``."""

    threads = _KEYWORD_THREADS

    def __init__(self, index: BinaryIndex[PgConnection]) -> None:
        self.index = index

    def tx(self, conn: PgConnection) -> Tx:
        return postgres_tx(conn)

    def vectors(self, conn: PgConnection, search: NoteSearch) -> list[VectorMatch] | None:
        assert search.vector is not None
        try:
            with conn.transaction():  # a savepoint: a failure leaves the read usable
                return vector_search(
                    conn,
                    self.index,
                    search.guild_id,
                    search.vector,
                    note_type=search.note_type,
                    limit=search.candidates,
                    candidates=max(search.reranked, search.candidates),
                )
        except (psycopg.Error, VectorLengthError):
            return None

    def note_keywords(self, conn: PgConnection, search: NoteSearch) -> Found[KeywordMatch]:
        plan = plan_terms(conn, search.terms, budget=KEYWORD_POSTINGS_BUDGET)
        limit = search.keyword_candidates
        found = keyword_search(conn, search.guild_id, plan, note_type=search.note_type, limit=limit)
        return found, plan

    def window_keywords(self, conn: PgConnection, search: NoteSearch) -> Found[WindowMatch]:
        plan = plan_terms(conn, search.terms, budget=EVIDENCE_POSTINGS_BUDGET, index="evidence")
        found = window_keyword_search(conn, search.guild_id, plan, limit=search.window_candidates)
        return found, plan

    def windows(
        self, conn: PgConnection, search: NoteSearch, note_ids: Sequence[int], compare: bool
    ) -> tuple[list[WindowMatch], dict[int, str]]:
        """With the question's similarities (when ``compare``), the texts of every window of
        the notes, in one statement: no window a candidate shows is left to read by id."""
        if not (search.evidence and search.note_type in (None, CONVERSATION)):
            return [], {}
        vector = search.vector if compare else None
        return window_similarities(conn, search.guild_id, note_ids, vector)


def search_notes(
    conn: PgConnection,
    index: BinaryIndex[PgConnection],
    search: NoteSearch,
    sides: Sequence[PgSide] = (),
) -> NoteSearchResult:
    """Run every search of ``search`` and join them into ranking candidates, one per note
    (:meth:`~vivy.storage.search_flow.EngineReads.run`, as on SQLite), the vectors searched
    through ``index``, the in-memory copies of the guilds' vectors.

    With ``sides`` the notes' and the windows' keyword searches each run on one in another
    thread while the vector search runs here: the server works on three statements at once.
    A side's statements each read a snapshot of their own; a note deleted in between is
    simply not found by the read of its details, and dropped.
    """
    return _PgReads(index).run(conn, search, sides)
