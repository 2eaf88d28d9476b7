"""Keyword search on PostgreSQL: term plans and BM25 over the postings tables.

Triggers keep ``note_postings`` and ``window_postings`` beside the ``tsvector`` columns
(schema version 5, :mod:`vivy.storage.postgres.schema`). A term plan counts each term's rows
and a search sums a textbook BM25 there, both in index-only scans of their primary keys;
FTS5 computes SQLite's own BM25, so ``bm25`` and ``window_bm25`` differ somewhat in scale
between the engines while the candidates found mean the same. Plans use the engines' shared
postings budget and idf (:func:`vivy.storage.search_types.prune_terms`,
:func:`~vivy.storage.search_types.term_weight`).

User text never reaches a query as syntax: a term is a bound parameter, turned into its
lexeme by ``to_tsvector``; the guild is part of every postings key read, before any ``LIMIT``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vivy.storage.candidates import KeywordMatch, WindowMatch
from vivy.storage.postgres.db import PgConnection
from vivy.storage.search_types import KEYWORD_POSTINGS_BUDGET, TermPlan, prune_terms, term_weight

__all__ = [
    "BM25_B",
    "BM25_K1",
    "LexemePlan",
    "keyword_search",
    "plan_terms",
    "window_keyword_search",
]

#: BM25's term-frequency saturation and length normalisation: the textbook values, which
#: FTS5's ``bm25()`` uses too.
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class _Postings:
    """A postings table: its name, the rows it indexes, the posting column naming the row,
    the text search configuration of their ``tsvector`` (a term's lexeme must be made the
    same way), and its rows' average length (BM25's length norm: the long-conversation eval
    set's, for a note's weighted text and for a window, taken from its PostgreSQL store)."""

    table: str
    rows: str
    key: str
    config: str
    average_length: float


#: The keyword indexes: notes' own text and their evidence windows.
_POSTINGS = {
    "notes": _Postings("note_postings", "interaction_notes", "p.note_id", "simple", 46.0),
    "evidence": _Postings("window_postings", "evidence_windows", "p.window_id", "english", 14.0),
}


@dataclass(frozen=True, slots=True)
class LexemePlan(TermPlan):
    """A term plan with each kept term's lexeme in its postings table."""

    lexemes: Mapping[str, str] = field(default_factory=dict)

    @property
    def lexeme_weights(self) -> dict[str, float]:
        """Each kept lexeme once with its idf (terms stemmed to one lexeme share its count,
        hence its idf)."""
        return {self.lexemes[term]: weight for term, weight in self.weights.items()}


def plan_terms(
    conn: PgConnection,
    terms: Sequence[str],
    *,
    budget: int = KEYWORD_POSTINGS_BUDGET,
    index: str = "notes",
) -> LexemePlan:
    """The terms to search and their idf weights, as :func:`vivy.storage.sqlite.search.plan_terms`
    plans them on SQLite: each term's count of rows (capped at ``budget + 1``, counted in the
    postings' primary key alone: an index-only scan of at most ``budget + 1`` entries), the
    rarest kept within the budget, the total the newest row id; one statement. A term
    without a lexeme (a stop word of the evidence's English configuration) counts 0 and is
    dropped. (Taking common lexemes' counts from ``pg_stats`` instead is slower.)"""
    wanted = [term for term in dict.fromkeys(terms) if term.strip()]
    if not wanted:
        return LexemePlan({})
    postings = _POSTINGS[index]
    rows = conn.execute(
        (
            "SELECT t.term, t.lexeme, CASE WHEN t.lexeme IS NULL THEN 0 ELSE"
            f" (SELECT count(*) FROM (SELECT 1 FROM {postings.table} AS p"
            "   WHERE p.lexeme = t.lexeme LIMIT %(cap)s) AS found) END,"
            f" (SELECT MAX(id) FROM {postings.rows})"
            " FROM (SELECT term, (tsvector_to_array("
            f"   to_tsvector('{postings.config}', term)))[1] AS lexeme"
            "  FROM unnest(%(terms)s::text[]) AS term) AS t"
        ).encode(),
        {"cap": budget + 1, "terms": wanted},
    ).fetchall()
    counts = {str(r[0]): min(budget + 1, int(r[2])) for r in rows}
    lexemes = {str(r[0]): str(r[1]) for r in rows if r[1] is not None}
    total = int(rows[0][3] or 0) if rows else 0
    kept = prune_terms(list(counts), counts, budget)
    unheld = frozenset(term for term, n in counts.items() if n == 0 and term in lexemes)
    return LexemePlan(
        {term: term_weight(counts[term], total) for term in kept},
        sum(term_weight(0, total) for _ in unheld),
        unheld,
        {term: lexemes[term] for term in kept},
    )


def _bm25(postings: _Postings) -> str:
    """The SQL of one posting's BM25 share (``k.idf`` its lexeme's weight, ``p`` the row)."""
    return (
        f"k.idf * p.tf * {BM25_K1 + 1} / (p.tf + {BM25_K1}"
        f" * ({1 - BM25_B} + {BM25_B} * p.length / {postings.average_length}))"
    )


def keyword_search(
    conn: PgConnection,
    guild_id: int,
    plan: LexemePlan,
    *,
    note_type: str | None,
    limit: int,
) -> list[KeywordMatch]:
    """The ``limit`` notes of the guild matching the planned terms best (BM25 over the
    weighted note text, higher is better), read from the postings' primary key; the guild
    and type are part of the key, so they filter before the ``LIMIT``."""
    rows = _best_postings(
        conn,
        "notes",
        "p.note_id",
        plan,
        guild_id,
        limit,
        ("AND (%(t)s::text IS NULL OR p.note_type = %(t)s)", {"t": note_type}),
    )
    return [KeywordMatch(int(r[0]), float(r[1])) for r in rows]


def window_keyword_search(
    conn: PgConnection, guild_id: int, plan: LexemePlan, *, limit: int
) -> list[WindowMatch]:
    """The ``limit`` evidence windows of the guild matching the planned terms best (BM25
    over the stemmed window text), read from the postings' primary key; the guild filter
    applies before the ``LIMIT``."""
    rows = _best_postings(conn, "evidence", "p.window_id, min(p.note_id)", plan, guild_id, limit)
    return [WindowMatch(int(r[0]), int(r[1]), float(r[-1])) for r in rows]


def _best_postings(
    conn: PgConnection,
    index: str,
    key: str,
    plan: LexemePlan,
    guild_id: int,
    limit: int,
    condition: tuple[str, dict[str, object]] = ("", {}),
) -> list[tuple[Any, ...]]:
    """The ``limit`` rows of the guild's postings in ``index`` with the highest BM25 sums
    over the plan's lexemes, as ``key`` columns (the row id first) then the sum; none for
    an empty plan. ``condition`` adds a filter and its parameters."""
    weights = plan.lexeme_weights
    if not weights:
        return []
    postings = _POSTINGS[index]
    extra, parameters = condition
    return conn.execute(
        (
            f"SELECT {key}, sum({_bm25(postings)}) AS score"
            " FROM unnest(%(lexemes)s::text[], %(idf)s::float8[]) AS k(lexeme, idf)"
            f" JOIN {postings.table} AS p ON p.lexeme = k.lexeme AND p.guild_id = %(g)s {extra}"
            f" GROUP BY {postings.key} ORDER BY score DESC, {postings.key} LIMIT %(n)s"
        ).encode(),
        {
            "lexemes": list(weights),
            "idf": list(weights.values()),
            "g": guild_id,
            "n": limit,
            **parameters,
        },
    ).fetchall()
