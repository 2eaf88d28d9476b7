"""Ranking candidates from the searches' hits: what both engines' note searches found,
joined into one candidate per note (:func:`assemble_candidates`, pure; the engines read the
details and window similarities it takes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from vivy.memory.evidence import EvidenceLine
from vivy.memory.notes import Note
from vivy.storage.search_types import (
    Candidate,
    Chosen,
    Loaded,
    NoteSearch,
    NoteSearchResult,
    TermPlan,
)
from vivy.text.terms import TermMatcher

T = TypeVar("T")

__all__ = [
    "WINDOWS_SHOWN",
    "CandidateDetails",
    "KeywordMatch",
    "SearchHits",
    "VectorMatch",
    "WindowMatch",
    "assemble_candidates",
    "chosen_and_loaded",
    "shown_windows",
]


@dataclass(frozen=True, slots=True)
class VectorMatch:
    """A note found by vector search, with the exact cosine similarity of its float vector."""

    note_id: int
    similarity: float


@dataclass(frozen=True, slots=True)
class KeywordMatch:
    """A note found by keyword search, with its BM25 strength (higher is better)."""

    note_id: int
    bm25: float


@dataclass(frozen=True, slots=True)
class WindowMatch:
    """A window found by search: its note, and BM25 strength or cosine similarity."""

    window_id: int
    note_id: int
    score: float


@dataclass(frozen=True, slots=True)
class SearchHits:
    """What the searches of one :class:`NoteSearch` found, before the found notes are read:
    the note vector and keyword matches, the evidence windows found by keyword, the notes in
    the question's time range (each in its search's order), and the planned terms' idf among
    notes and among evidence windows. Both engines fill one and join it with
    :func:`assemble_candidates`."""

    vectors: tuple[VectorMatch, ...]
    vector_failed: bool
    keywords: tuple[KeywordMatch, ...]
    windows: tuple[WindowMatch, ...]
    in_time: tuple[int, ...]
    note_terms: TermPlan
    window_terms: TermPlan

    @property
    def note_ids(self) -> list[int]:
        """Every note found, once: by vector, by keyword, by evidence, then by time."""
        return list(
            dict.fromkeys(
                [
                    *(match.note_id for match in self.vectors),
                    *(match.note_id for match in self.keywords),
                    *(match.note_id for match in self.windows),
                    *self.in_time,
                ]
            )
        )

    @property
    def plan(self) -> TermPlan:
        """The terms' plan the question is weighed by: among the evidence windows, or among
        the notes where no window holds any of its terms (evidence off, or notes older than
        it)."""
        return self.window_terms if self.window_terms.weights else self.note_terms

    @property
    def unheld(self) -> frozenset[str]:
        """The question's terms that no note and no evidence window holds."""
        if not (self.window_terms.weights or self.window_terms.unheld):
            return self.note_terms.unheld
        return self.note_terms.unheld & self.window_terms.unheld

    @property
    def weights(self) -> dict[str, float]:
        """The searched terms' weights (:meth:`plan`'s)."""
        return dict(self.plan.weights)


def shown_windows(
    windows: Sequence[WindowMatch], similar: Sequence[WindowMatch]
) -> dict[int, tuple[int, ...]]:
    """Each note's best windows, at most :data:`WINDOWS_SHOWN`: the one most similar to the
    question, the best found by keyword, then the next of each (``windows`` and ``similar``
    best first within each note), so that what the words mean and the words themselves both
    choose the quoted lines."""
    by_keyword: dict[int, list[int]] = {}
    for found in windows:
        by_keyword.setdefault(found.note_id, []).append(found.window_id)
    by_meaning: dict[int, list[int]] = {}
    for found in similar:
        by_meaning.setdefault(found.note_id, []).append(found.window_id)
    shown: dict[int, tuple[int, ...]] = {}
    for note_id in dict.fromkeys([*by_keyword, *by_meaning]):
        meaning, keyword = by_meaning.get(note_id, []), by_keyword.get(note_id, [])
        ids: list[int] = []
        for rank in range(max(len(meaning), len(keyword))):
            for window_id in (*meaning[rank : rank + 1], *keyword[rank : rank + 1]):
                if window_id not in ids:
                    ids.append(window_id)
            if len(ids) >= WINDOWS_SHOWN:
                break
        shown[note_id] = tuple(ids[:WINDOWS_SHOWN])
    return shown


def assemble_candidates(
    search: NoteSearch,
    hits: SearchHits,
    similar: Sequence[WindowMatch],
    details: Mapping[int, CandidateDetails],
    shown: Mapping[int, tuple[int, ...]],
    texts: Mapping[int, str],
    named: frozenset[int],
) -> NoteSearchResult:
    """Join what the searches found into ranking candidates, one per note of the guild.

    Pure: the engine reads, for the notes of ``hits.note_ids``, the windows' similarity to the
    question (``similar``, best first within each note), the notes' ``details`` (notes missing
    from it are not the guild's and are dropped), the texts of their ``shown`` windows
    (:func:`shown_windows`) and the members the question names (``named``).
    """
    weights = hits.weights
    similarity = {match.note_id: match.similarity for match in hits.vectors}
    strength = {match.note_id: match.bm25 for match in hits.keywords}
    window_strength: dict[int, float] = {}
    for found in hits.windows:
        window_strength.setdefault(found.note_id, found.score)
    window_similarity: dict[int, float] = {}
    for found in similar:
        window_similarity.setdefault(found.note_id, found.score)
    matcher = TermMatcher.of(weights)
    total = math.fsum(weights.values())
    # The gate's coverage is the share of the whole question's term weight, the terms no
    # row holds included: they can match nothing, and a question that is mostly such terms
    # is mostly not about this guild's memory.
    whole = total + hits.plan.absent
    candidates: list[Candidate] = []
    for note_id in hits.note_ids:
        note = details.get(note_id)
        if note is None:
            continue
        # One scan of the note's text and its shown windows, a line apart: a term found in
        # any of them is found in the joined text, and in no other place.
        matched, whole_words = matcher.held(
            "\n".join([note.text, *(texts.get(w, "") for w in shown.get(note_id, ()))])
        )
        candidates.append(
            Candidate(
                note_id=note_id,
                channel_id=note.channel_id,
                at=note.ended,
                similarity=similarity.get(note_id),
                bm25=strength.get(note_id),
                coverage=math.fsum(weights[t] for t in matched) / total if total > 0 else 0.0,
                question_coverage=(
                    math.fsum(weights[t] for t in matched) / whole if whole > 0 else 0.0
                ),
                started=note.started,
                window_similarity=window_similarity.get(note_id),
                window_bm25=window_strength.get(note_id),
                terms=matched,
                named=bool(named & note.participants),
                time_distance_s=(
                    None if search.time is None else search.time.distance(note.started, note.ended)
                ),
                text=note.text,
                whole_terms=whole_words,
            )
        )
    return NoteSearchResult(
        tuple(candidates), hits.vector_failed, weights, shown, named, hits.unheld
    )


#: Evidence windows kept per note for coverage and for the reply's quoted lines.
WINDOWS_SHOWN = 2


@dataclass(frozen=True, slots=True)
class CandidateDetails:
    """What ranking reads of a found note: channel, time, text and participants."""

    channel_id: int
    started: float
    ended: float
    text: str
    participants: frozenset[int]


def chosen_and_loaded(
    results: list[NoteSearchResult],
    choose: Callable[[list[NoteSearchResult]], Chosen[T]],
    load: Callable[
        [Sequence[int], Sequence[int]],
        tuple[list[Note], Mapping[int, Sequence[EvidenceLine]]],
    ],
) -> Loaded[T]:
    """Both engines' ``find_and_load`` after the searches: ``choose`` picks from
    ``results``, ``load`` reads the chosen notes and their evidence lines (on the same
    connection)."""
    chosen = choose(results)
    notes, lines = load(chosen.note_ids, chosen.evidence_of)
    return Loaded(
        tuple(results),
        chosen.value,
        tuple(notes),
        {note_id: tuple(found) for note_id, found in lines.items()},
    )
