"""The SQL of note search: vector and keyword search over notes and their evidence.

Rules of this module:

* Every query is scoped to one guild *inside* the index or before any ``LIMIT``: the vector
  KNN runs over the guild's own binary vectors (:mod:`vivy.storage.vector_index`), the
  keyword searches take FTS5's ranked matches in batches and keep the guild's until they
  have enough (:func:`vivy.storage.sqlite.fts.best_of_guild`). Nothing read here can belong to
  another guild, whatever the caller passes.
* Vector search runs in three steps. A hamming KNN over the binary-quantised vectors finds
  ``reranked`` notes of the guild; the approximate cosine of their int8 codes shortlists a
  few more than ``candidates`` of them
  (:data:`~vivy.storage.vector_index.EXACT_SHARE`); the exact cosine distance of
  those notes' float vectors (``vec_distance_cosine``) ranks them and the ``candidates``
  closest are kept. No step sees another guild's notes, so the guild filter is never applied
  after a top-k cut.
* User text never reaches FTS5 as syntax: the terms are word tokens only, and
  :func:`match_expression` quotes each one and joins them with OR, so ``"``, ``*``,
  ``NEAR``, ``-`` or ``column:`` in a message are plain text.
* A keyword search reads a bounded number of postings (:func:`plan_terms`): the rarest terms
  first, the commonest dropped beyond :data:`KEYWORD_POSTINGS_BUDGET`, so its cost stays flat
  as a guild grows to 100k notes.
* Functions are synchronous and take the connection first, as
  :class:`~vivy.storage.sqlite.db.Database` runs them; :func:`search_notes_sync` runs a whole
  search through
  :meth:`vivy.storage.search_flow.EngineReads.run`, which orders the reads and joins them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import sqlean

from vivy.storage.candidates import KeywordMatch, VectorMatch, WindowMatch
from vivy.storage.dialect import Tx
from vivy.storage.search_flow import CONVERSATION, EngineReads, Found
from vivy.storage.search_types import (
    EVIDENCE_POSTINGS_BUDGET,
    KEYWORD_POSTINGS_BUDGET,
    NoteSearch,
    NoteSearchResult,
    TermPlan,
    prune_terms,
    term_weight,
)
from vivy.storage.sqlite.db import Connection
from vivy.storage.sqlite.dialect import sqlite_tx
from vivy.storage.sqlite.fts import KEYWORD_INDEXES, best_of_guild, window_keyword_search
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.vector_index import LOAD_BATCH, BinaryIndex, Row, VectorLengthError

__all__ = [
    "CONVERSATION",
    "SQLITE_VECTORS",
    "TERM_COUNTS",
    "TermCounts",
    "compared_windows",
    "count_terms",
    "keyword_search",
    "match_expression",
    "plan_terms",
    "search_notes_sync",
    "vector_search",
]


class _SqliteVectors:
    """SQLite's reads for the copy: ``vec_notes`` holds the bits beside the float vector,
    and ``vec_notes_by_guild`` (guild, note id) finds the newest note and the rows after it."""

    def state(self, conn: Connection, guild_id: int) -> tuple[int, int]:
        generation, newest = conn.execute(
            "SELECT (SELECT generation FROM vector_generations WHERE guild_id = ?),"
            " (SELECT MAX(note_id) FROM vec_notes WHERE guild_id = ?)",
            (guild_id, guild_id),
        ).fetchone()
        return int(generation or 0), int(newest or 0)

    def rows_after(self, conn: Connection, guild_id: int, after: int) -> Iterator[Sequence[Row]]:
        cursor = conn.execute(
            "SELECT note_id, note_kind, embedding_bits, embedding FROM vec_notes"
            " WHERE guild_id = ? AND note_id > ? ORDER BY note_id",
            (guild_id, after),
        )
        while rows := cursor.fetchmany(LOAD_BATCH):
            yield rows


#: The reader of a SQLite database's in-memory vector copies.
SQLITE_VECTORS = _SqliteVectors()


#: A side read's result.
R = TypeVar("R")


def match_expression(terms: Sequence[str]) -> str | None:
    """A safe FTS5 MATCH expression: each term quoted, joined by OR; None without terms.

    Terms from :func:`vivy.text.terms.query_terms` contain letters and digits only, so
    quoting cannot be broken out of; a stray ``"`` is removed anyway.
    """
    quoted = [f'"{term.replace(chr(34), "")}"' for term in terms if term.replace('"', "")]
    return " OR ".join(quoted) if quoted else None


def count_terms(
    conn: Connection, terms: Sequence[str], *, budget: int, index: str
) -> tuple[int, dict[str, int]]:
    """The index's total (its table's newest row id: an upper bound, read in O(log n)) and
    the count of each of ``terms`` (quotable ones) capped at ``budget + 1``, so that counting
    a common term costs no more than the budget; one statement for all."""
    table, fts = KEYWORD_INDEXES[index]
    counted = f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?))"
    row = conn.execute(
        f"SELECT (SELECT MAX(id) FROM {table}){''.join(', ' + counted for _ in terms)}",
        [value for term in terms for value in (match_expression([term]), budget + 1)],
    ).fetchone()
    return int(row[0] or 0), {term: int(n) for term, n in zip(terms, row[1:], strict=True)}


#: Most term counts a :class:`TermCounts` holds before it starts again.
TERM_COUNTS = 4096


class TermCounts:
    """The term counts one connection that never writes read from the keyword indexes, kept
    for as long as no other connection commits (SQLite's ``PRAGMA data_version``, checked
    before each use): a guild's questions share their common words, and counting a common
    word reads a budget of postings. A connection's own commits leave its data_version as it
    was, so the call's connection, which writes, never keeps one. One thread at a time."""

    def __init__(self, size: int = TERM_COUNTS) -> None:
        self._size = size
        self._version: int | None = None
        self._totals: dict[str, int] = {}
        self._counts: dict[tuple[str, int, str], int] = {}

    def count(
        self, conn: Connection, terms: Sequence[str], *, budget: int, index: str
    ) -> tuple[int, dict[str, int]]:
        """:func:`count_terms` of ``conn``, reading only what is not held."""
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._version or len(self._counts) > self._size:
            self._version = version
            self._totals.clear()
            self._counts.clear()
        missing = [term for term in terms if (index, budget, term) not in self._counts]
        if missing or index not in self._totals:
            self._totals[index], found = count_terms(conn, missing, budget=budget, index=index)
            self._counts.update(((index, budget, term), n) for term, n in found.items())
        return self._totals[index], {term: self._counts[index, budget, term] for term in terms}


def plan_terms(
    conn: Connection,
    terms: Sequence[str],
    *,
    budget: int = KEYWORD_POSTINGS_BUDGET,
    index: str = "notes",
    counts: TermCounts | None = None,
) -> TermPlan:
    """The terms to search and their weights, each term's count read from the index
    (:func:`count_terms`; through ``counts``, the connection's :class:`TermCounts`, when given).

    ``index`` is ``"notes"`` (the notes' own text) or ``"evidence"`` (their evidence
    windows).
    """
    if not terms:
        return TermPlan({})
    quotable = [term for term in dict.fromkeys(terms) if match_expression([term]) is not None]
    total, found = (
        count_terms(conn, quotable, budget=budget, index=index)
        if counts is None
        else counts.count(conn, quotable, budget=budget, index=index)
    )
    kept = prune_terms(list(found), found, budget)
    return TermPlan(
        {term: term_weight(found[term], total) for term in kept},
        sum(term_weight(0, total) for n in found.values() if n == 0),
        frozenset(term for term, n in found.items() if n == 0),
    )


def vector_search(
    conn: Connection,
    index: BinaryIndex[Connection],
    guild_id: int,
    vector: bytes,
    *,
    note_type: str | None,
    limit: int,
    candidates: int,
) -> list[VectorMatch]:
    """The ``limit`` notes of the guild closest to ``vector`` (a float32 blob), best first.

    ``candidates`` notes come from ``index``, the guild's binary vectors in memory (hamming
    KNN); their int8 codes there shortlist
    :data:`~vivy.storage.vector_index.EXACT_SHARE` times ``limit`` of them, whose
    float vectors are then compared exactly. ``note_type`` None searches both types.
    """
    shortlist = index.to_compare(
        conn, guild_id, vector, note_type=note_type, limit=limit, candidates=candidates
    )
    if not shortlist:
        return []
    # One query by primary key, ranked there (a similarity that cannot be computed sorts
    # last); a vector of another length (a half-done re-embedding) is skipped rather than
    # compared. ``+guild_id`` keeps SQLite's planner on the primary key: on the guild's
    # (guild_id, note_id) index each candidate would cost an index seek and a row lookup.
    return [
        VectorMatch(int(note_id), float(similarity))
        for note_id, similarity in conn.execute(
            "SELECT note_id, 1.0 - vec_distance_cosine(embedding, ?) AS similarity"
            f" FROM vec_notes WHERE note_id IN ({','.join('?' * len(shortlist))})"
            " AND +guild_id = ? AND length(embedding) = ?"
            " ORDER BY similarity DESC, note_id LIMIT ?",
            (vector, *shortlist, guild_id, len(vector), limit),
        ).fetchall()
        if similarity is not None
    ]


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
        "SELECT id FROM interaction_notes WHERE id = ranked.rowid AND +guild_id = ?" + type_filter,
        (guild_id,) if note_type is None else (guild_id, note_type),
        limit,
    )
    # FTS5's bm25() is negative, lower is better; flip it so that higher is better.
    return [KeywordMatch(note_id, max(0.0, -score)) for note_id, _, score in found]


#: The thread of the keyword searches of a search (see :func:`search_notes_sync`): the notes'
#: then the windows' run one after the other beside the vector search. With a thread each,
#: three threads would share the cores and the GIL with the call, and each part of the
#: search would wait on the others.
_KEYWORD_THREADS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vivy-keywords")


@dataclass(frozen=True, slots=True)
class _SideConnection:
    """A side connection of the owner's: SQLite releases the GIL, so its reads run in a
    worker thread beside the vector search."""

    conn: Connection

    def read(self, fn: Callable[[Connection], R], /) -> R:
        """``fn`` run on the connection."""
        return fn(self.conn)


class _SqliteReads(EngineReads[Connection]):
    """A search's reads on SQLite: the guild's binary vectors in ``index`` and the question
    as a float32 blob (None without a vector)."""

    threads = _KEYWORD_THREADS
    compare_errors = (sqlean.Error,)
    #: The notes' keyword search runs first on the keyword thread, usually done by the time
    #: the vector search is; the call's connection reads its notes while the thread goes on
    #: with the windows'.
    keyword_notes_here = True

    def __init__(
        self,
        index: BinaryIndex[Connection],
        vector: bytes | None,
        counts: Mapping[Connection, TermCounts],
    ) -> None:
        self.index = index
        self.vector = vector
        self.counts = counts

    def tx(self, conn: Connection) -> Tx:
        return sqlite_tx(conn)

    def vectors(self, conn: Connection, search: NoteSearch) -> list[VectorMatch] | None:
        assert self.vector is not None
        try:
            return vector_search(
                conn,
                self.index,
                search.guild_id,
                self.vector,
                note_type=search.note_type,
                limit=search.candidates,
                candidates=max(search.reranked, search.candidates),
            )
        except (sqlean.Error, VectorLengthError):
            return None

    def note_keywords(self, conn: Connection, search: NoteSearch) -> Found[KeywordMatch]:
        plan = plan_terms(conn, search.terms, counts=self.counts.get(conn))
        limit = search.keyword_candidates
        found = keyword_search(conn, search.guild_id, plan, note_type=search.note_type, limit=limit)
        return found, plan

    def window_keywords(self, conn: Connection, search: NoteSearch) -> Found[WindowMatch]:
        plan = plan_terms(
            conn,
            search.terms,
            budget=EVIDENCE_POSTINGS_BUDGET,
            index="evidence",
            counts=self.counts.get(conn),
        )
        match = match_expression(plan.terms)
        if match is None:
            return [], plan
        found = window_keyword_search(conn, search.guild_id, match, limit=search.window_candidates)
        return found, plan

    def windows(
        self, conn: Connection, search: NoteSearch, note_ids: Sequence[int], compare: bool
    ) -> tuple[list[WindowMatch], dict[int, str]]:
        if not compare or self.vector is None:
            return [], {}
        return compared_windows(conn, search.guild_id, note_ids, self.vector)


def search_notes_sync(
    conn: Connection,
    index: BinaryIndex[Connection],
    search: NoteSearch,
    sides: Sequence[Connection] = (),
    counts: Mapping[Connection, TermCounts] | None = None,
) -> NoteSearchResult:
    """Run every search of ``search`` and join them into ranking candidates, one per note
    (:meth:`~vivy.storage.search_flow.EngineReads.run`), each keyword search on one of
    ``sides`` (more connections to the same database, read in turn by the keyword thread)
    when given, its terms counted through that side's :class:`TermCounts` in ``counts``.
    The terms' weights are their idf among the evidence windows; where no window holds any
    of them (evidence off, or notes older than it) among the notes."""
    vector = None if search.vector is None else serialize_vector(search.vector)
    sqlite_reads = _SqliteReads(index, vector, counts or {})
    return sqlite_reads.run(conn, search, [_SideConnection(side) for side in sides])


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
        "SELECT id, note_id, 1.0 - vec_distance_cosine(embedding, ?) AS score, text"
        f" FROM evidence_windows WHERE note_id IN ({marks}) AND guild_id = ?"
        " AND length(embedding) = ? ORDER BY score DESC, id",
        (vector, *note_ids, guild_id, len(vector)),
    ).fetchall()
    found = [WindowMatch(int(r[0]), int(r[1]), float(r[2])) for r in rows]
    return found, {int(r[0]): str(r[3]) for r in rows}
