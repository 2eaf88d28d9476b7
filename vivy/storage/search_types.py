"""The values note search takes and gives: the question's search, its time range, the
keyword terms it reads (their budget and weights) and the ranking candidates it finds.

They are plain frozen records and pure functions, shared by the storage engines and by
retrieval's ranking, so neither depends on the other's modules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from vivy.memory.evidence import EvidenceLine
    from vivy.memory.notes import Note

__all__ = [
    "EVIDENCE_POSTINGS_BUDGET",
    "KEYWORD_POSTINGS_BUDGET",
    "Candidate",
    "Chosen",
    "Loaded",
    "NoteSearch",
    "NoteSearchResult",
    "TermPlan",
    "TimeRange",
    "prune_terms",
    "term_weight",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A UTC interval ``[start, end)`` in epoch seconds that a question refers to."""

    start: float
    end: float

    def distance(self, start: float, end: float) -> float:
        """Seconds between ``[start, end]`` and this range (0 when they overlap)."""
        if end < self.start:
            return self.start - end
        if start >= self.end:
            return start - self.end
        return 0.0


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


#: Most window postings one evidence search reads (see :data:`KEYWORD_POSTINGS_BUDGET`).
EVIDENCE_POSTINGS_BUDGET = 2500


@dataclass(frozen=True, slots=True)
class TermPlan:
    """The terms a keyword search reads, rarest first, each with its idf weight; and the
    total idf of the question's terms that are in no row (``absent``, each weighed as a term
    of count 0), which the gate's coverage counts against a note: "Caroline" asked of a
    guild without a Caroline leaves the question half covered, however well "research"
    matches. ``unheld`` are those terms."""

    weights: Mapping[str, float]
    absent: float = 0.0
    unheld: frozenset[str] = frozenset()

    @property
    def terms(self) -> list[str]:
        """The terms, rarest first."""
        return list(self.weights)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note found by any search, with what ranking needs to know of it.

    ``at`` is the note's wall time (end of the conversation) and ``started`` its start;
    ``similarity`` / ``bm25`` its own vector and keyword match (None when that search did not
    find it); ``window_similarity`` / ``window_bm25`` its best evidence window's;
    ``coverage`` the idf-weighted share of the question's searched terms in the note or its
    best windows (0 to 1), ``terms`` those terms; ``question_coverage`` the same share of all
    the question's terms, those no row holds included (:attr:`TermPlan.absent`; None: as
    ``coverage``), which the reply's gate reads; ``whole_terms`` those of ``terms`` the note
    or its shown windows hold as whole words (a name is held as itself, "Tim" not by "time");
    ``named`` whether a member the question names
    took part; ``time_distance_s`` how far it lies from the time the question names (None
    when the question names none); ``text`` the note's searchable text (title, summary,
    topics, entities, decisions), whose words ranking matches with the question's.
    """

    note_id: int
    channel_id: int
    at: float
    similarity: float | None = None
    bm25: float | None = None
    coverage: float = 0.0
    started: float | None = None
    window_similarity: float | None = None
    window_bm25: float | None = None
    terms: frozenset[str] = frozenset()
    named: bool = False
    time_distance_s: float | None = None
    text: str = ""
    question_coverage: float | None = None
    whole_terms: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class NoteSearch:
    """One note search: the guild, the query (vector and/or keywords) and how many to find.

    ``vector`` is the question's embedding or None (no embedding); ``terms`` the words to search by
    keyword (from :func:`vivy.text.terms.query_terms`). ``note_type`` None searches both
    types. With
    ``evidence`` the notes' evidence windows are searched too (``window_candidates`` windows
    by keyword; the found notes' windows by vector); ``name_grams`` are the question's word
    runs that may name a member, and ``time`` the interval it names. The vector search
    re-ranks ``reranked`` candidates of its approximate index by exact cosine and keeps the
    ``candidates`` closest.
    """

    guild_id: int
    vector: Sequence[float] | None
    terms: tuple[str, ...]
    note_type: str | None
    candidates: int
    keyword_candidates: int
    evidence: bool = True
    reranked: int = 400
    window_candidates: int = 80
    name_grams: tuple[str, ...] = ()
    time: TimeRange | None = None
    time_candidates: int = 40


@dataclass(frozen=True, slots=True)
class NoteSearchResult:
    """The ranking inputs of one search; ``vector_failed`` when sqlite-vec raised.

    ``term_weights`` are the searched terms with their idf; ``windows`` the best matching
    evidence windows of each candidate, best first; ``named`` the user ids of the members the
    question names (by :attr:`NoteSearch.name_grams`); ``unheld`` the question's terms that no
    note and no evidence window holds.
    """

    candidates: tuple[Candidate, ...]
    vector_failed: bool
    term_weights: Mapping[str, float] = field(default_factory=dict)
    windows: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    named: frozenset[int] = frozenset()
    unheld: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Chosen(Generic[T]):
    """What a caller picked from search results: its own ``value`` (a ranking, say), the
    notes to load for it and those of them whose evidence lines to load (see
    :meth:`SearchStore.find_and_load`)."""

    value: T
    note_ids: tuple[int, ...]
    evidence_of: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Loaded(Generic[T]):
    """The answer of :meth:`SearchStore.find_and_load`: every search's result, the caller's
    chosen ``value``, the chosen notes of the guild (in the order chosen) and the evidence
    lines of those it chose them for, oldest first, by note id."""

    results: tuple[NoteSearchResult, ...]
    value: T
    notes: tuple[Note, ...]
    lines: Mapping[int, tuple[EvidenceLine, ...]]
