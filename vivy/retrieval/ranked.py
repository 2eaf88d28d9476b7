"""One ranked note search: find, rank, gate, then load the notes with their quoted lines.

Everything a note search does but the embedding call, over the storage port's ``search``
area: one call finds every search's candidates (:mod:`vivy.storage.sqlite.search`), ranking is pure
(:mod:`vivy.retrieval.ranking`) and runs inside that same call, on the storage owner's
thread, which then loads the chosen notes and their evidence lines (one hand-off, not two).
The lines that best answer the question are then chosen among each note's
(:mod:`vivy.retrieval.lines`), and the first notes are ordered again by what they quote
(:func:`by_best_line`). The retriever, the operator API, ``vivy search`` and the
benchmark all search through :func:`ranked_notes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vivy.memory.evidence import EvidenceLine, ScoredLine
from vivy.memory.notes import Note, NoteType
from vivy.retrieval.lines import WordVectors, best_lines, word_matches
from vivy.retrieval.query import asks_when, name_grams, proper_names, time_range
from vivy.retrieval.ranking import Calibration, Scored, rank
from vivy.retrieval.settings import RetrievalSettings
from vivy.storage.port import SearchStore
from vivy.storage.search_types import Chosen, NoteSearch, NoteSearchResult
from vivy.text.terms import query_terms

__all__ = [
    "LINE_WEIGHT",
    "REORDERED",
    "NoteHit",
    "RankedNotes",
    "best_line_order",
    "by_best_line",
    "ranked_notes",
]

#: How much a note's best quoted line weighs beside its score when the first notes are
#: ordered again: of the notes of one thread, the one that says what was asked holds the
#: line that answers it, where its summary may only name the subject ("What pets does
#: Melanie have?": the note naming the new cat, not the one where pets come up). Chosen held
#: out, conversation by conversation, on the real dev conversations with the weights learned
#: there (0.75 to 1.0 by fold; ``scripts/learn_fusion_weights.py`` chooses it for the
#: weights it learns).
LINE_WEIGHT = 1.0
#: How many of the first notes are ordered again by their best line (a search ranks and
#: loads at least as many, then keeps what it was asked for): the answer's note is mostly
#: among the first fifteen (measured on the real dev conversations; more gain nothing).
REORDERED = 15


@dataclass(frozen=True, slots=True)
class NoteHit:
    """A note found by search: its fused score and its raw vector and keyword scores.

    ``vector_score`` is the cosine similarity and ``keyword_score`` the BM25 strength
    (higher is better); each is None when that search did not find the note.
    """

    note: Note
    score: float
    vector_score: float | None
    keyword_score: float | None
    #: The note's evidence lines that best answer the question, best first, with their
    #: scores (none without evidence).
    lines: tuple[ScoredLine, ...] = ()

    @property
    def said(self) -> tuple[EvidenceLine, ...]:
        """:attr:`lines` in the order they were said."""
        return tuple(sorted((one.line for one in self.lines), key=lambda line: line.message_id))


def best_line_order(
    scores: Sequence[float], best_lines: Sequence[float | None], line_weight: float = LINE_WEIGHT
) -> list[int]:
    """The places of notes ranked with ``scores`` once those of the first :data:`REORDERED`
    that quote a line (``best_lines``: its score; None: they quote none) are ordered by their
    score plus ``line_weight`` times it (ties keep their order); the others keep their
    places."""
    order = list(range(len(scores)))
    claims = {
        place: scores[place] + line_weight * line
        for place, line in enumerate(best_lines[:REORDERED])
        if line is not None
    }
    moved = sorted(claims, key=lambda place: -claims[place])
    for place, index in zip(claims, moved, strict=True):
        order[place] = index
    return order


def _ranked(note_type: str | None, limit: int, settings: RetrievalSettings) -> int:
    """How many notes a search of ``note_type`` ranks and loads for ``limit``: at least
    :data:`REORDERED` where its notes quote lines to be ordered by, its limit where they quote
    none (topic clusters, or evidence switched off)."""
    if note_type == NoteType.TOPIC_CLUSTER or not settings.evidence:
        return limit
    return max(limit, REORDERED)


def by_best_line(hits: Sequence[NoteHit], line_weight: float = LINE_WEIGHT) -> tuple[NoteHit, ...]:
    """``hits`` in :func:`best_line_order`, their best lines read from their quoted lines;
    their scores stay as ranked (the gate read them)."""
    order = best_line_order(
        [hit.score for hit in hits],
        [hit.lines[0].score if hit.lines else None for hit in hits],
        line_weight,
    )
    return tuple(hits[index] for index in order)


@dataclass(frozen=True, slots=True)
class RankedNotes:
    """The result of one ranked note search: the notes kept, and ``found``, every candidate
    the search found before ranking (the eval ranks them again with other weights)."""

    hits: tuple[NoteHit, ...]
    found: NoteSearchResult

    @property
    def vector_failed(self) -> bool:
        """Whether the vector search raised (sqlite-vec), leaving the keyword search alone."""
        return self.found.vector_failed


async def ranked_notes(
    store: SearchStore,
    *,
    guild_id: int,
    vector: Sequence[float] | None,
    text: str,
    limits: Sequence[tuple[str | None, int]],
    channel_id: int | None,
    now: float,
    calibration: Calibration,
    settings: RetrievalSettings,
    words: WordVectors | None = None,
    gated: bool = True,
) -> list[RankedNotes]:
    """Search the guild's notes for ``text`` (and ``vector``) once per (note type, limit)
    of ``limits`` (type None: both), rank and gate each, and load the best notes of each
    with the evidence lines that best answer ``text``, in the order of ``limits``; the first
    :data:`REORDERED` are then ordered again by their best line (:func:`by_best_line`)
    before each search keeps its limit.

    ``words`` are the word vectors notes are matched and lines chosen with
    (:mod:`vivy.retrieval.lines`); without them, by the question's words alone. ``gated``:
    keep only the notes the reply's relevance gate (``settings.gate``) lets through; a search
    listing shows the whole ranking, its scores telling strong matches from weak ones.
    """
    gate = settings.gate if gated else None
    span = time_range(text, now, settings.timezone)
    terms = tuple(query_terms(text))
    grams = tuple(name_grams(text))
    names = proper_names(text)
    when = asks_when(text)
    searches = [
        NoteSearch(
            guild_id=guild_id,
            vector=vector,
            terms=terms,
            note_type=note_type,
            candidates=max(settings.candidates, limit),
            keyword_candidates=max(settings.keyword_candidates, limit),
            evidence=settings.evidence,
            reranked=max(settings.reranked, settings.candidates, limit),
            window_candidates=settings.window_candidates,
            name_grams=grams,
            time=span,
        )
        for note_type, limit in limits
    ]

    def choose(found: list[NoteSearchResult]) -> Chosen[list[list[Scored]]]:
        """Rank and gate each search's candidates; the best notes and their windows."""
        ranked = [
            rank(
                result.candidates,
                now=now,
                channel_id=channel_id,
                calibration=calibration,
                weights=settings.weights,
                gate=gate,
                limit=_ranked(note_type, limit, settings),
                term_weights=result.term_weights,
                time_span_s=(span.end - span.start) if span is not None else 86400.0,
                word_match=word_matches(result.candidates, terms, result.term_weights, words),
                names=names,
                unheld=result.unheld,
                asks_when=when,
            )
            for result, (note_type, limit) in zip(found, limits, strict=True)
        ]
        chosen = tuple(dict.fromkeys(s.note_id for scored in ranked for s in scored))
        return Chosen(ranked, chosen, chosen)

    loaded = await store.find_and_load(guild_id, searches, choose)
    notes = {note.id: note for note in loaded.notes}
    answers: list[RankedNotes] = []
    for result, scored, (_, limit) in zip(loaded.results, loaded.value, limits, strict=True):
        kept = [s for s in scored if s.note_id in notes]
        lines = best_lines(
            [loaded.lines.get(s.note_id, ()) for s in kept],
            terms,
            result.term_weights,
            words,
            settings.evidence_lines,
            named=result.named,
        )
        hits = by_best_line(
            [
                NoteHit(notes[s.note_id], s.score, s.similarity, s.bm25, quoted)
                for s, quoted in zip(kept, lines, strict=True)
            ]
        )
        answers.append(RankedNotes(hits[:limit], result))
    return answers
