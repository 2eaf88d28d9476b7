"""The SQL of note search: vector and keyword search over notes and their evidence.

Rules of this module:

* Every query is scoped to one guild *inside* the index or before any ``LIMIT``: the vector
  KNN runs over the guild's own binary vectors (:mod:`vivy.storage.vector_index`), the
  keyword searches take FTS5's ranked matches in batches and keep the guild's until they
  have enough (:func:`vivy.storage.fts.best_of_guild`). Nothing read here can belong to
  another guild, whatever the caller passes.
* Vector search runs in two steps. A hamming KNN over the binary-quantised vectors finds
  ``reranked`` notes of the guild; the exact cosine distance of their float vectors
  (``vec_distance_cosine``) re-ranks them and the ``candidates`` closest are kept. Neither
  step sees another guild's notes, so the guild filter is never applied after a top-k cut.
* User text never reaches FTS5 as syntax: the terms are word tokens only, and
  :func:`match_expression` quotes each one and joins them with OR, so ``"``, ``*``,
  ``NEAR``, ``-`` or ``column:`` in a message are plain text.
* A keyword search reads a bounded number of postings (:func:`plan_terms`): the rarest terms
  first, the commonest dropped beyond :data:`KEYWORD_POSTINGS_BUDGET`, so its cost stays flat
  as a guild grows to 100k notes.
* Functions are synchronous and take the connection first, as :class:`~vivy.storage.db.Database`
  runs them; :class:`vivy.storage.sqlite.SqliteSearchStore` puts them behind the port.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import sqlean

from vivy.memory.notes import NoteType
from vivy.storage import evidence
from vivy.storage.candidates import (
    CandidateDetails,
    KeywordMatch,
    SearchHits,
    VectorMatch,
    WindowMatch,
    assemble_candidates,
    shown_windows,
)
from vivy.storage.db import Connection
from vivy.storage.dialect import sqlite_tx
from vivy.storage.fts import KEYWORD_INDEXES, best_of_guild, window_keyword_search
from vivy.storage.notes import members_named, notes_in_range
from vivy.storage.schema import VEC_KINDS, binary_dimensions, serialize_vector
from vivy.storage.search_types import (
    NoteSearch,
    NoteSearchResult,
)
from vivy.storage.vector_index import BinaryIndex

__all__ = [
    "CONVERSATION",
    "EVIDENCE_POSTINGS_BUDGET",
    "KEYWORD_POSTINGS_BUDGET",
    "TermPlan",
    "candidate_details",
    "compared_windows",
    "keyword_search",
    "match_expression",
    "plan_terms",
    "prune_terms",
    "search_notes_sync",
    "term_weight",
    "vector_search",
]

#: The note type of conversations (topic clusters have no evidence).
CONVERSATION = NoteType.CONVERSATION


def match_expression(terms: Sequence[str]) -> str | None:
    """A safe FTS5 MATCH expression: each term quoted, joined by OR; None without terms.

    Terms from :func:`vivy.retrieval.search.query_terms` contain letters and digits only, so
    quoting cannot be broken out of; a stray ``"`` is removed anyway.
    """
    quoted = [f'"{term.replace(chr(34), "")}"' for term in terms if term.replace('"', "")]
    return " OR ".join(quoted) if quoted else None


#: Most postings one keyword search reads. Terms are taken rarest first; the commonest are
#: dropped beyond the budget, which bounds the search's cost in a large guild (a term in 2500
#: notes carries little weight there anyway).
KEYWORD_POSTINGS_BUDGET = 2500


def prune_terms(terms: Sequence[str], counts: Mapping[str, int], budget: int) -> list[str]:
    """The terms worth searching, rarest first, within ``budget`` postings in total.

    Terms in no note cannot match; the rarest term over the budget is dropped like the rest.
    """
    usable = [term for term in dict.fromkeys(terms) if 0 < counts.get(term, 0) <= budget]
    usable.sort(key=lambda term: (counts[term], term))
    kept: list[str] = []
    spent = 0
    for term in usable:
        if spent + counts[term] > budget:
            break
        kept.append(term)
        spent += counts[term]
    return kept


def term_weight(count: int, total: int) -> float:
    """A term's idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``: positive even for common terms."""
    count = max(0, min(count, total))
    return math.log(1.0 + (total - count + 0.5) / (count + 0.5))


@dataclass(frozen=True, slots=True)
class TermPlan:
    """The terms a keyword search reads, rarest first, each with its idf weight."""

    weights: Mapping[str, float]

    @property
    def terms(self) -> list[str]:
        """The terms, rarest first."""
        return list(self.weights)


def plan_terms(
    conn: Connection,
    terms: Sequence[str],
    *,
    budget: int = KEYWORD_POSTINGS_BUDGET,
    index: str = "notes",
) -> TermPlan:
    """The terms to search and their weights, each term's count read from the index.

    ``index`` is ``"notes"`` (the notes' own text) or ``"evidence"`` (their evidence
    windows). Counts are capped at ``budget + 1``, so counting a common term costs no more
    than the budget; the total is the newest row id (an upper bound, read in O(log n)).
    """
    if not terms:
        return TermPlan({})
    table, fts = KEYWORD_INDEXES[index]
    expressions = {
        term: expression
        for term in dict.fromkeys(terms)
        if (expression := match_expression([term])) is not None
    }
    # One statement for the total and every term's count, instead of one per term.
    counted = f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?))"
    row = conn.execute(
        f"SELECT (SELECT MAX(id) FROM {table}){''.join(', ' + counted for _ in expressions)}",
        [value for expression in expressions.values() for value in (expression, budget + 1)],
    ).fetchone()
    total = int(row[0] or 0)
    counts = {term: int(count) for term, count in zip(expressions, row[1:], strict=True)}
    kept = prune_terms(list(counts), counts, budget)
    return TermPlan({term: term_weight(counts[term], total) for term in kept})


def vector_search(
    conn: Connection,
    index: BinaryIndex,
    guild_id: int,
    vector: bytes,
    *,
    note_type: str | None,
    limit: int,
    candidates: int,
) -> list[VectorMatch]:
    """The ``limit`` notes of the guild closest to ``vector`` (a float32 blob), best first.

    ``candidates`` notes come from ``index``, the guild's binary vectors in memory (hamming
    KNN); their float vectors are then compared exactly. ``note_type`` None searches both types.
    """
    k = max(candidates, limit)
    bits = conn.execute(
        "SELECT vec_quantize_binary(vec_slice(?, 0, ?))",
        (vector, binary_dimensions(len(vector) // 4)),  # a float32 blob: four bytes a dimension
    ).fetchone()[0]
    kind = None if note_type is None else VEC_KINDS[note_type]
    nearest = index.nearest(conn, guild_id, bits, k, kind=kind)
    if not nearest:
        return []
    # One query by primary key; a vector of another length (a half-done re-embedding) is
    # skipped rather than compared.
    exact = [
        VectorMatch(int(note_id), 1.0 - float(distance))
        for note_id, distance in conn.execute(
            "SELECT note_id, vec_distance_cosine(embedding, ?) FROM vec_notes"
            f" WHERE note_id IN ({','.join('?' * len(nearest))}) AND guild_id = ?"
            " AND length(embedding) = ?",
            (vector, *nearest, guild_id, len(vector)),
        ).fetchall()
        if distance is not None
    ]
    exact.sort(key=lambda match: (-match.similarity, match.note_id))
    return exact[:limit]


#: BM25 column weights: title, summary, topics, entities. Titles, topics and entities are
#: short and chosen by the note writer, so a hit there says more than one in the summary.
BM25_WEIGHTS = (3.0, 1.0, 2.0, 2.0)


def keyword_search(
    conn: Connection,
    guild_id: int,
    plan: TermPlan,
    *,
    note_type: str | None,
    limit: int,
) -> list[KeywordMatch]:
    """The ``limit`` best BM25 matches in the guild of any of the planned terms (rarest
    first within the postings budget, :func:`plan_terms`).

    The guild (and type) filter is part of the query, so it applies before the ``LIMIT``.
    """
    match = match_expression(plan.terms)
    if match is None:
        return []
    weights = ", ".join(str(weight) for weight in BM25_WEIGHTS)
    type_filter = "" if note_type is None else " AND note_type = ?"
    found = best_of_guild(
        conn,
        f"SELECT rowid, bm25(notes_fts, {weights}) AS score FROM notes_fts"
        " WHERE notes_fts MATCH ? ORDER BY score, rowid LIMIT ?",
        (match,),
        "SELECT id, id FROM interaction_notes WHERE id IN ({marks}) AND +guild_id = ?"
        + type_filter,
        (guild_id,) if note_type is None else (guild_id, note_type),
        limit,
    )
    # FTS5's bm25() is negative, lower is better; flip it so that higher is better.
    return [KeywordMatch(note_id, max(0.0, -score)) for note_id, _, score in found]


def _note_keywords(search: NoteSearch, conn: Connection) -> tuple[list[KeywordMatch], TermPlan]:
    """The notes whose own text matches the planned terms, and the plan (idf among notes)."""
    plan = plan_terms(conn, search.terms)
    found = keyword_search(
        conn, search.guild_id, plan, note_type=search.note_type, limit=search.keyword_candidates
    )
    return found, plan


#: Threads for the keyword searches of a search (see :func:`search_notes_sync`).
_KEYWORD_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="vivy-keywords")


#: Most window postings one evidence search reads (see :data:`KEYWORD_POSTINGS_BUDGET`).
EVIDENCE_POSTINGS_BUDGET = 2500


def _window_keywords(search: NoteSearch, conn: Connection) -> tuple[list[WindowMatch], TermPlan]:
    """The evidence windows that match the planned terms, and the plan (idf among windows)."""
    plan = plan_terms(conn, search.terms, budget=EVIDENCE_POSTINGS_BUDGET, index="evidence")
    match = match_expression(plan.terms)
    if match is None:
        return [], plan
    found = window_keyword_search(conn, search.guild_id, match, limit=search.window_candidates)
    return found, plan


@dataclass(frozen=True, slots=True)
class _NoteReads:
    """What ranking reads of some found notes: their details, their windows' similarity to
    the question (best first; None when comparing failed) and those windows' texts."""

    details: dict[int, CandidateDetails]
    similar: list[WindowMatch] | None
    texts: dict[int, str]


def _read_notes(
    conn: Connection, search: NoteSearch, note_ids: Sequence[int], vector: bytes | None
) -> _NoteReads:
    """The details of the guild's notes ``note_ids`` and, given the question's ``vector``,
    their windows' similarity to it; a failing comparison (sqlite-vec missing) gives None."""
    similar: list[WindowMatch] | None = []
    texts: dict[int, str] = {}
    if vector is not None:
        try:
            similar, texts = _compared_windows(conn, search, note_ids, vector)
        except sqlean.Error:
            similar = None
    return _NoteReads(candidate_details(conn, search.guild_id, note_ids), similar, texts)


def _note_side(
    search: NoteSearch, conn: Connection, vector: bytes | None
) -> tuple[list[KeywordMatch], TermPlan, _NoteReads]:
    """On a side connection: the notes' own keyword search, then what ranking reads of the
    notes it found, so that the main connection need not read them after the join."""
    found, plan = _note_keywords(search, conn)
    ids = list(dict.fromkeys(match.note_id for match in found))
    return found, plan, _read_notes(conn, search, ids, vector)


def _window_side(
    search: NoteSearch, conn: Connection, vector: bytes | None
) -> tuple[list[WindowMatch], TermPlan, _NoteReads]:
    """On a side connection: the evidence keyword search, then what ranking reads of the
    notes whose windows it found."""
    found, plan = _window_keywords(search, conn)
    ids = list(dict.fromkeys(match.note_id for match in found))
    return found, plan, _read_notes(conn, search, ids, vector)


def search_notes_sync(
    conn: Connection,
    index: BinaryIndex,
    search: NoteSearch,
    sides: Sequence[Connection] = (),
) -> NoteSearchResult:
    """Run every search of ``search`` and join them into ranking candidates, one per note.

    Notes are found by their own text (vector and keyword), by their evidence windows
    (keyword; conversation notes only) and by the time the question names; the windows of
    the notes found are then compared with the question's vector exactly. With ``sides``
    (more connections to the same database) each keyword search runs in a worker thread,
    and reads the details and window similarities of the notes it found, while the vector
    search runs here; SQLite releases the GIL. A failing vector query (sqlite-vec missing or
    its index damaged) is reported, not raised, so the keyword searches still serve; a
    failing keyword query raises. The terms' weights are their idf among the evidence
    windows; where no window holds any of them (evidence off, or notes older than it) among
    the notes.
    """
    with_evidence = search.evidence and search.note_type in (None, CONVERSATION)
    wanted_windows = bool(search.terms) and with_evidence
    # Side threads compare windows as soon as they found their notes; if the vector search
    # then fails, what they compared is dropped.
    vector = None if search.vector is None else serialize_vector(search.vector)
    may_compare = with_evidence and vector is not None
    side_vector = vector if may_compare else None
    note_side, window_side = (*sides[:2], None, None)[:2]
    notes_ahead = (
        _KEYWORD_THREADS.submit(_note_side, search, note_side, side_vector)
        if search.terms and note_side is not None
        else None
    )
    windows_ahead = (
        _KEYWORD_THREADS.submit(_window_side, search, window_side, side_vector)
        if wanted_windows and window_side is not None
        else None
    )
    try:
        vectors: list[VectorMatch] = []
        vector_failed = False
        if vector is not None:
            try:
                vectors = vector_search(
                    conn,
                    index,
                    search.guild_id,
                    vector,
                    note_type=search.note_type,
                    limit=search.candidates,
                    candidates=max(search.reranked, search.candidates),
                )
            except sqlean.Error:
                vector_failed = True
        # While the keyword searches run, read what the notes found so far need.
        in_time: list[int] = []
        if search.time is not None:
            in_time = notes_in_range(
                sqlite_tx(conn),
                search.guild_id,
                search.time.start,
                search.time.end,
                note_type=search.note_type or CONVERSATION,
                limit=search.time_candidates,
            )
        early = list(dict.fromkeys([*(match.note_id for match in vectors), *in_time]))
        compare = may_compare and not vector_failed
        reads = [_read_notes(conn, search, early, vector if compare else None)]
        named = members_named(sqlite_tx(conn), search.guild_id, list(search.name_grams))
    finally:
        # Never leave a side connection busy: the next search will use it.
        if notes_ahead is not None:
            futures.wait([notes_ahead])
        if windows_ahead is not None:
            futures.wait([windows_ahead])
    keywords: list[KeywordMatch] = []
    note_plan = TermPlan({})
    if notes_ahead is not None:
        keywords, note_plan, side_reads = notes_ahead.result()
        reads.append(side_reads)
    elif search.terms:
        keywords, note_plan = _note_keywords(search, conn)
    window_keywords: list[WindowMatch] = []
    window_plan = TermPlan({})
    if windows_ahead is not None:
        window_keywords, window_plan, side_reads = windows_ahead.result()
        reads.append(side_reads)
    elif wanted_windows:
        window_keywords, window_plan = _window_keywords(search, conn)
    hits = SearchHits(
        vectors=tuple(vectors),
        vector_failed=vector_failed,
        keywords=tuple(keywords),
        windows=tuple(window_keywords),
        in_time=tuple(in_time),
        note_weights=note_plan.weights,
        window_weights=window_plan.weights,
    )
    details: dict[int, CandidateDetails] = {}
    compared: dict[int, WindowMatch] = {}
    texts: dict[int, str] = {}
    complete: set[int] = set()  # notes read with everything ranking needs of them
    for read in reads:
        details.update(read.details)
        texts.update(read.texts)
        if read.similar is not None:
            compared.update((match.window_id, match) for match in read.similar)
        if read.similar is not None or not compare:
            complete.update(read.details)
    # Notes no side read (no sides), or whose windows could not be compared: read here,
    # where a failing comparison raises as any other query of the search would.
    later = [note_id for note_id in hits.note_ids if note_id not in complete]
    if later:
        details.update(candidate_details(conn, search.guild_id, later))
        if compare and vector is not None:
            more, more_texts = _compared_windows(conn, search, later, vector)
            compared.update((match.window_id, match) for match in more)
            texts.update(more_texts)
    # Best first: each note's windows in the order of their similarity to the question.
    similar = (
        sorted(compared.values(), key=lambda match: (-match.score, match.window_id))
        if compare
        else []
    )
    shown = shown_windows(hits.windows, similar)
    wanted = [w for ids in shown.values() for w in ids]
    # Windows found by keyword but not compared (no embedding yet) are read by id.
    texts.update(evidence.window_texts(sqlite_tx(conn), [w for w in wanted if w not in texts]))
    return assemble_candidates(search, hits, similar, details, shown, texts, named)


def _compared_windows(
    conn: Connection, search: NoteSearch, note_ids: Sequence[int], vector: bytes
) -> tuple[list[WindowMatch], dict[int, str]]:
    """The question's ``vector``'s exact similarity to each embedded window of
    ``note_ids``, and those windows' texts (read with their embeddings, on the same page)."""
    return compared_windows(conn, search.guild_id, note_ids, vector)


def candidate_details(
    conn: Connection, guild_id: int, note_ids: Sequence[int]
) -> dict[int, CandidateDetails]:
    """Channel, start and end, searchable text and participants of the guild's notes."""
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    # ``+guild_id`` keeps the planner on the primary key: with a long id list it would
    # otherwise scan the guild's whole (guild_id, ...) index.
    rows = conn.execute(
        f"SELECT id, channel_id, COALESCE(started_at, created_at),"
        f" COALESCE(ended_at, created_at), title || ' ' || summary || ' ' || topics || ' '"
        f" || entities || ' ' || decisions, (SELECT group_concat(user_id)"
        f" FROM note_participants AS p WHERE p.note_id = n.id) FROM interaction_notes AS n"
        f" WHERE id IN ({marks}) AND +guild_id = ?",
        (*note_ids, guild_id),
    ).fetchall()
    return {
        int(r[0]): CandidateDetails(
            int(r[1]),
            float(r[2]),
            float(r[3]),
            str(r[4]),
            frozenset(int(user) for user in str(r[5]).split(",")) if r[5] else frozenset(),
        )
        for r in rows
    }


def compared_windows(
    conn: Connection, guild_id: int, note_ids: Sequence[int], vector: bytes
) -> tuple[list[WindowMatch], dict[int, str]]:
    """The cosine similarity of ``vector`` to every embedded window of the guild's notes
    ``note_ids``, best first, and those windows' texts by id (a window's text sits on the
    page its embedding is read from). Windows embedded at another dimension are skipped."""
    if not note_ids:
        return [], {}
    marks = ",".join("?" * len(note_ids))
    rows = conn.execute(
        f"SELECT id, note_id, vec_distance_cosine(embedding, ?), text FROM evidence_windows"
        f" WHERE note_id IN ({marks}) AND guild_id = ? AND length(embedding) = ?",
        (vector, *note_ids, guild_id, len(vector)),
    ).fetchall()
    found = [WindowMatch(int(r[0]), int(r[1]), 1.0 - float(r[2])) for r in rows]
    found.sort(key=lambda match: (-match.score, match.window_id))
    return found, {int(r[0]): str(r[3]) for r in rows}
