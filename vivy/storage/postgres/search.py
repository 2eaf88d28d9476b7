"""Note search on PostgreSQL: vector and keyword search over notes and their evidence.

These are the engine-specific reads :class:`~vivy.storage.postgres.stores.PgSearchStore`
runs (:func:`search_notes`); what they found is joined into ranking candidates by the pure
:func:`vivy.storage.search.assemble_candidates`, the same function the SQLite engine calls.
Keyword search and its term plans are in :mod:`vivy.storage.postgres.keywords`.

Rules, as for SQLite (:mod:`vivy.storage.search`):

* The guild is filtered inside the index scan, never after a top-k cut. pgvector's HNSW scan
  on its own returns ``hnsw.ef_search`` candidates and filters them afterwards, so a guild
  whose notes are not among the nearest of all guilds would get too few; with
  ``hnsw.iterative_scan`` the scan goes on until ``limit`` rows of the guild are found.
* Vector search runs in two steps, as on SQLite: the HNSW index over the vectors in half
  precision finds the candidates by cosine, their float vectors re-rank them exactly.
* Every read names the guild in its ``WHERE`` clause, before any ``LIMIT``.
* A failing vector query (a question embedded at another dimension) is reported in the
  result, as on SQLite; it runs in a savepoint, so the rest of the read goes on.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from psycopg import pq
from psycopg.adapt import Dumper

from vivy.storage.candidates import (
    CandidateDetails,
    KeywordMatch,
    SearchHits,
    VectorMatch,
    WindowMatch,
    assemble_candidates,
    shown_windows,
)
from vivy.storage.dialect import postgres_tx
from vivy.storage.notes import members_named, notes_in_range
from vivy.storage.postgres.db import SIDE_CONNECTIONS, PgConnection, PgSide
from vivy.storage.postgres.keywords import (
    LexemePlan,
    keyword_search,
    plan_terms,
    window_keyword_search,
)
from vivy.storage.schema import VEC_KINDS
from vivy.storage.search import CONVERSATION, EVIDENCE_POSTINGS_BUDGET, KEYWORD_POSTINGS_BUDGET
from vivy.storage.search_types import NoteSearch, NoteSearchResult

__all__ = [
    "EF_SEARCH",
    "PgVector",
    "candidate_details",
    "search_notes",
    "vector_bytes",
    "vector_param",
    "vector_search",
    "window_similarities",
]

#: A keyword search's match type (notes or evidence windows).
M = TypeVar("M")

#: Candidates the half-precision HNSW scan keeps per step, and at least the nearest notes it
#: returns to be re-ranked exactly (a search asking for more raises it to its limit).
EF_SEARCH = 60


def vector_search(
    conn: PgConnection,
    guild_id: int,
    vector: Sequence[float],
    *,
    note_type: str | None,
    limit: int,
) -> list[VectorMatch]:
    """The ``limit`` notes of the guild closest to ``vector`` by cosine, best first;
    ``note_type`` None searches both types. The HNSW index over the vectors in half precision
    finds at least :data:`EF_SEARCH` nearest (the guild filtered inside the scan: the
    session's ``hnsw.iterative_scan``, set by :func:`~vivy.storage.postgres.db.connect`), and
    their float vectors re-rank them exactly. Runs inside the caller's transaction (a raised
    ``ef_search`` is local to it); a question of another dimension than the stored vectors
    raises."""
    pool = max(limit, EF_SEARCH)
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(int(pool)),))
    half = f"halfvec({len(vector)})"
    rows = conn.execute(
        (
            "SELECT note_id, embedding <=> %(v)b::vector AS distance FROM (SELECT note_id,"
            " embedding FROM vec_notes WHERE guild_id = %(g)s"
            " AND (%(k)s::text IS NULL OR note_kind = %(k)s)"
            f" ORDER BY embedding::{half} <=> %(v)b::vector::{half} LIMIT %(n)s) AS near"
            " ORDER BY distance, note_id LIMIT %(m)s"
        ).encode(),
        {
            "v": vector_param(vector),
            "g": guild_id,
            "k": None if note_type is None else VEC_KINDS[note_type],
            "n": pool,
            "m": limit,
        },
    ).fetchall()
    found = [VectorMatch(int(r[0]), 1.0 - float(r[1])) for r in rows]
    found.sort(key=lambda match: (-match.similarity, match.note_id))
    return found


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


def candidate_details(
    conn: PgConnection, guild_id: int, note_ids: Sequence[int]
) -> dict[int, CandidateDetails]:
    """Channel, start and end, searchable text and participants of the guild's notes."""
    if not note_ids:
        return {}
    rows = conn.execute(
        "SELECT n.id, n.channel_id, COALESCE(n.started_at, n.created_at),"
        " COALESCE(n.ended_at, n.created_at), n.title || ' ' || n.summary || ' ' || n.topics"
        " || ' ' || n.entities || ' ' || n.decisions,"
        " ARRAY(SELECT p.user_id FROM note_participants AS p WHERE p.note_id = n.id)"
        " FROM interaction_notes AS n WHERE n.id = ANY(%s) AND n.guild_id = %s",
        (list(note_ids), guild_id),
    ).fetchall()
    return {
        int(r[0]): CandidateDetails(
            int(r[1]), float(r[2]), float(r[3]), str(r[4]), frozenset(int(u) for u in r[5])
        )
        for r in rows
    }


#: Threads for the keyword searches of a search (see :func:`search_notes`).
_KEYWORD_THREADS = ThreadPoolExecutor(max_workers=SIDE_CONNECTIONS, thread_name_prefix="vivy-pg")


@dataclass(frozen=True, slots=True)
class _NoteReads:
    """What ranking reads of some found notes: their details, and their windows' similarity
    to the question (best first) with those windows' texts."""

    details: dict[int, CandidateDetails]
    similar: list[WindowMatch]
    texts: dict[int, str]


def _read_notes(conn: PgConnection, search: NoteSearch, note_ids: Sequence[int]) -> _NoteReads:
    """The details of the guild's notes ``note_ids`` and, for a search with evidence, their
    windows' similarity to the question's vector (none without one)."""
    similar: list[WindowMatch] = []
    texts: dict[int, str] = {}
    if _with_evidence(search):
        similar, texts = window_similarities(conn, search.guild_id, note_ids, search.vector)
    return _NoteReads(candidate_details(conn, search.guild_id, note_ids), similar, texts)


def _with_evidence(search: NoteSearch) -> bool:
    """Whether ``search`` reads evidence windows (conversations only)."""
    return search.evidence and search.note_type in (None, CONVERSATION)


def _note_keywords(
    conn: PgConnection, search: NoteSearch
) -> tuple[list[KeywordMatch], LexemePlan, _NoteReads]:
    """The notes whose own text matches the planned terms, the plan (idf among notes), and
    what ranking reads of the notes found."""
    plan = plan_terms(conn, search.terms, budget=KEYWORD_POSTINGS_BUDGET)
    found = keyword_search(
        conn,
        search.guild_id,
        plan,
        note_type=search.note_type,
        limit=search.keyword_candidates,
    )
    ids = list(dict.fromkeys(match.note_id for match in found))
    return found, plan, _read_notes(conn, search, ids)


def _window_keywords(
    conn: PgConnection, search: NoteSearch
) -> tuple[list[WindowMatch], LexemePlan, _NoteReads]:
    """The evidence windows that match the planned terms, the plan (idf among windows), and
    what ranking reads of their notes."""
    plan = plan_terms(conn, search.terms, budget=EVIDENCE_POSTINGS_BUDGET, index="evidence")
    found = window_keyword_search(conn, search.guild_id, plan, limit=search.window_candidates)
    ids = list(dict.fromkeys(match.note_id for match in found))
    return found, plan, _read_notes(conn, search, ids)


def _keywords_of(
    conn: PgConnection,
    search: NoteSearch,
    ahead: Future[tuple[list[M], LexemePlan, _NoteReads]] | None,
    wanted: bool,
    here: Callable[[PgConnection, NoteSearch], tuple[list[M], LexemePlan, _NoteReads]],
) -> tuple[list[M], LexemePlan, list[_NoteReads]]:
    """A keyword search's answer: from its side thread, or run here without one."""
    if ahead is not None:
        found, plan, reads = ahead.result()
        return found, plan, [reads]
    if not wanted:
        return [], LexemePlan({}), []
    found, plan, reads = here(conn, search)
    return found, plan, [reads]


def search_notes(
    conn: PgConnection, search: NoteSearch, sides: Sequence[PgSide] = ()
) -> NoteSearchResult:
    """Run every search of ``search`` and join them into ranking candidates, one per note,
    as :func:`vivy.storage.search.search_notes_sync` does on SQLite.

    With ``sides`` (more connections to the database) the notes' and the windows' keyword
    searches each run on one in another thread, and read what ranking needs of the notes
    they found, while the vector search runs here: the server works on three statements at
    once. A side's statements each read a snapshot of their own; a note deleted in between
    is simply not found by the read of its details, and dropped.
    """
    guild_id = search.guild_id
    wanted_windows = bool(search.terms) and _with_evidence(search)
    note_side, window_side = (*sides[:2], None, None)[:2]
    notes_ahead = (
        _KEYWORD_THREADS.submit(note_side.read, lambda conn: _note_keywords(conn, search))
        if search.terms and note_side is not None
        else None
    )
    windows_ahead = (
        _KEYWORD_THREADS.submit(window_side.read, lambda conn: _window_keywords(conn, search))
        if wanted_windows and window_side is not None
        else None
    )
    try:
        vectors: list[VectorMatch] = []
        vector_failed = False
        if search.vector is not None:
            try:
                with conn.transaction():  # a savepoint: a failure leaves the read usable
                    vectors = vector_search(
                        conn,
                        guild_id,
                        search.vector,
                        note_type=search.note_type,
                        limit=search.candidates,
                    )
            except psycopg.Error:
                vector_failed = True
        in_time: list[int] = []
        if search.time is not None:
            in_time = notes_in_range(
                postgres_tx(conn),
                guild_id,
                search.time.start,
                search.time.end,
                note_type=search.note_type or CONVERSATION,
                limit=search.time_candidates,
            )
        reads = [
            _read_notes(
                conn, search, list(dict.fromkeys([*(m.note_id for m in vectors), *in_time]))
            )
        ]
        named = members_named(postgres_tx(conn), guild_id, list(search.name_grams))
    finally:
        # Never leave a side busy: the next search will use it.
        if notes_ahead is not None:
            futures.wait([notes_ahead])
        if windows_ahead is not None:
            futures.wait([windows_ahead])
    keywords, note_plan, note_reads = _keywords_of(
        conn, search, notes_ahead, bool(search.terms), _note_keywords
    )
    windows, window_plan, window_reads = _keywords_of(
        conn, search, windows_ahead, wanted_windows, _window_keywords
    )
    reads += note_reads + window_reads
    hits = SearchHits(
        vectors=tuple(vectors),
        vector_failed=vector_failed,
        keywords=tuple(keywords),
        windows=tuple(windows),
        in_time=tuple(in_time),
        note_weights=note_plan.weights,
        window_weights=window_plan.weights,
    )
    details: dict[int, CandidateDetails] = {}
    compared: dict[int, WindowMatch] = {}
    texts: dict[int, str] = {}
    for read in reads:
        details.update(read.details)
        texts.update(read.texts)
        compared.update((match.window_id, match) for match in read.similar)
    later = [note_id for note_id in hits.note_ids if note_id not in details]
    if later:  # found by no read: read here
        more = _read_notes(conn, search, later)
        details.update(more.details)
        texts.update(more.texts)
        compared.update((match.window_id, match) for match in more.similar)
    # A question the note vectors could not take (another dimension) compares no window.
    similar = (
        []
        if vector_failed
        else sorted(compared.values(), key=lambda match: (-match.score, match.window_id))
    )
    shown = shown_windows(hits.windows, similar)
    return assemble_candidates(search, hits, similar, details, shown, texts, named)
