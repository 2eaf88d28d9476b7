"""Learning the fusion's weights from searched questions, and judging them by cross-validation.

Ranking (:func:`vivy.retrieval.ranking.rank`) scores a note by a weighted mean of features in
[0, 1]; with no diversity bonus that order is the order of the features' weighted sum (the
weights bent as :meth:`~vivy.retrieval.ranking.Weights.supported` bends them where the
candidates hold few of the question's terms), which this module computes with numpy over every
question's candidates at once; the diversity bonus is then taken greedily for the first places,
as ranking does, over each candidate's matched terms. Coordinate ascent (:func:`ascend`)
changes one weight at a time by a factor and keeps a change that raises the mean of session
recall at 1, 5 and 10.

:func:`cross_validate` holds out one conversation (guild) at a time, learns on the others and
ranks the held-out one with what it learned: the figures it gives are what the weights do on
conversations they were not fit to, the only figures worth reporting. The shipped weights are
learned the same way on every conversation (:func:`ascend` on all rows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vivy.retrieval.query import asks_when
from vivy.retrieval.ranked import best_line_order
from vivy.retrieval.ranking import (
    EVIDENCE_FEATURES,
    KEYWORD_FEATURES,
    LOCAL_CALIBRATION,
    MEANING_FEATURES,
    Calibration,
    Weights,
    features,
)
from vivy.retrieval.settings import DEFAULT_SETTINGS
from vivy_lab.eval.longconv import Searched, session_recall
from vivy_lab.eval.notes import NoteEvalSearches, fused_shortfall

__all__ = [
    "LEARNED",
    "LINE_WEIGHTS",
    "QuestionRows",
    "ascend",
    "cross_validate",
    "fusion_holds",
    "line_weight_of",
    "question_rows",
    "ranked_keys",
    "weights_from",
    "with_line_weight",
]

#: The weights learned (fields of :class:`~vivy.retrieval.ranking.Weights`), in matrix order.
LEARNED: tuple[str, ...] = (
    "note_keyword",
    "evidence_keyword",
    "note_vector",
    "evidence_vector",
    "coverage",
    "word_match",
    "time",
    "recency",
)
#: The factors one step of coordinate ascent tries on a weight.
FACTORS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.5, 2.0, 3.0)
#: What a zero weight is raised to when a step tries to grow it.
REVIVE = 0.1
#: The weights of a note's best quoted line tried when the first notes are ordered again by
#: it (:func:`vivy.retrieval.ranked.by_best_line`).
LINE_WEIGHTS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
#: What the slots after :data:`LEARNED`'s hold when a vector stops short of them: no
#: meaning boost, no diversity bonus, the evidence's factor for when 1, no best line.
_ABSENT_EXTRAS: tuple[float, ...] = (0.0, 0.0, 1.0, 0.0)


def _extras(vector: Sequence[float] | npt.NDArray[np.float64]) -> list[float]:
    """The slots of ``vector`` after :data:`LEARNED`'s (the meaning boost, the diversity
    bonus, the evidence's factor for a question asking when, the best line's weight), those
    it lacks at their absent values."""
    given = [float(v) for v in vector[len(LEARNED) :]]
    return given + list(_ABSENT_EXTRAS[len(given) :])


@dataclass(frozen=True, slots=True)
class QuestionRows:
    """One question's candidates: their sessions, their features (one row each, columns
    in :data:`LEARNED` order), the question's conversation and kind, and its answers."""

    group: str
    kind: str
    answers: Mapping[int, str]
    keys: tuple[str, ...]
    matrix: npt.NDArray[np.float64]
    #: How few of the question's terms its candidates hold (0: enough; 1: none), which
    #: bends the weights (:meth:`~vivy.retrieval.ranking.Weights.supported`).
    lack: float = 0.0
    #: Which of the question's terms each candidate holds (one row each, a column a term),
    #: and each term's share of the question's term weight: the diversity bonus's gains.
    holds_terms: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros((0, 0), bool))
    term_shares: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    #: Whether the question asks when something happened (its evidence weights are then
    #: multiplied by :attr:`~vivy.retrieval.ranking.Weights.when_evidence`).
    when: bool = False
    #: Each candidate's best quoted line's score (NaN: it quotes none), by which the first
    #: notes are ordered again; whether the question names a time, and the weights of the
    #: features not learned that its score's mean counts (names, channel): with the learned
    #: ones they scale a weighted sum into ranking's score, which the line weighs beside.
    best_line: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    has_time: bool = True
    fixed_total: float = 0.0


def question_rows(
    searched: Sequence[Searched], calibration_of: Callable[[Searched], Calibration]
) -> list[QuestionRows]:
    """Every question's feature matrix, its similarities read on ``calibration_of(question)``."""
    rows: list[QuestionRows] = []
    for one in searched:
        candidates = [c for c in one.found.candidates if c.note_id in one.sessions]
        found = features(
            candidates,
            now=one.question.asked_at,
            channel_id=None,
            calibration=calibration_of(one),
            time_span_s=one.time_span_s,
            word_match=one.word_match,
        )
        matrix = np.asarray(
            [[getattr(found[c.note_id], name) for name in LEARNED] for c in candidates],
            dtype=np.float64,
        ).reshape(len(candidates), len(LEARNED))
        held = len(frozenset().union(*(c.terms for c in candidates))) if candidates else 0
        shipped = Weights()
        term_weights = dict(one.found.term_weights)
        total = sum(term_weights.values())
        shares = np.asarray(
            [w / total if total > 0 else 0.0 for w in term_weights.values()], dtype=np.float64
        )
        holds_terms = np.asarray(
            [[term in c.terms for term in term_weights] for c in candidates], dtype=bool
        ).reshape(len(candidates), len(term_weights))
        rows.append(
            QuestionRows(
                group=one.question.id.split("/")[0],
                kind=one.question.kind,
                answers=one.answers,
                keys=tuple(one.sessions[c.note_id] for c in candidates),
                matrix=matrix,
                lack=shipped.lack(held) if any(one.word_match.values()) else 0.0,
                holds_terms=holds_terms,
                term_shares=shares,
                when=asks_when(one.question.question),
                best_line=np.asarray(
                    [one.best_line.get(c.note_id, np.nan) for c in candidates], dtype=np.float64
                ),
                has_time=any(c.time_distance_s is not None for c in candidates),
                fixed_total=shipped.channel
                + (shipped.name if any(c.named for c in candidates) else 0.0),
            )
        )
    return rows


#: The places the diversity bonus is taken for (ranking takes it for every place; recall is
#: measured up to 10).
DIVERSE_PLACES = 10


#: Where ranking's groups of features that its weights bend sit in :data:`LEARNED`.
_MEANING = [LEARNED.index(name) for name in MEANING_FEATURES]
_KEYWORD = [LEARNED.index(name) for name in KEYWORD_FEATURES]
_EVIDENCE = [LEARNED.index(name) for name in EVIDENCE_FEATURES]


def ranked_keys(row: QuestionRows, weights: npt.NDArray[np.float64]) -> list[str]:
    """The question's sessions by the weighted sum of their features, best first (ties in
    candidate order). The weights past :data:`LEARNED`'s are the meaning boost, the
    diversity bonus (taken greedily for the first :data:`DIVERSE_PLACES` places), the
    evidence's factor for a question asking when, then the weight of the best quoted line
    by which the first notes are ordered again (:func:`_by_best_line`)."""
    if not row.keys:
        return []
    boost, diversity, when, line_weight = _extras(weights)[:4]
    used = _supported(weights[: len(LEARNED)], boost, row.lack)
    if row.when:
        used[_EVIDENCE] *= when
    scores = row.matrix @ used
    order = np.lexsort((np.arange(len(row.keys)), -scores))
    if diversity > 0 and row.term_shares.size:
        order = _diversified(order, scores, row.holds_terms, row.term_shares, diversity)
    if line_weight > 0 and row.best_line.size:
        total = used.sum() + row.fixed_total
        if not row.has_time:
            total -= used[LEARNED.index("time")]
        order = _by_best_line(order, scores / max(total, 1e-12), row.best_line, line_weight)
    return list(dict.fromkeys(row.keys[int(i)] for i in order))


def _supported(
    learned: npt.NDArray[np.float64], boost: float, lack: float
) -> npt.NDArray[np.float64]:
    """``learned`` as :meth:`~vivy.retrieval.ranking.Weights.supported` bends them for a
    question whose candidates lack ``lack`` of the terms it needs (0: none lacking)."""
    used = learned.copy()
    if lack > 0:
        used[_MEANING] *= 1.0 + boost * lack
        used[_KEYWORD] *= 1.0 - lack
    return used


def _by_best_line(
    order: npt.NDArray[np.intp],
    scores: npt.NDArray[np.float64],
    best_line: npt.NDArray[np.float64],
    line_weight: float,
) -> npt.NDArray[np.intp]:
    """``order`` as :func:`vivy.retrieval.ranked.best_line_order` orders notes again."""
    lines = [None if np.isnan(best_line[i]) else float(best_line[i]) for i in order]
    again = best_line_order([float(scores[i]) for i in order], lines, line_weight)
    return order[np.asarray(again, dtype=np.intp)]


def _diversified(
    order: npt.NDArray[np.intp],
    scores: npt.NDArray[np.float64],
    holds_terms: npt.NDArray[np.bool_],
    shares: npt.NDArray[np.float64],
    diversity: float,
) -> npt.NDArray[np.intp]:
    """``order`` (best first by score) with its first places taken greedily by score plus
    ``diversity`` times the share of the question's term weight a candidate adds, as
    :func:`vivy.retrieval.ranking.rank` takes them; ties to the better score."""
    value = scores[order]
    held = holds_terms[order].astype(np.float64)
    free = np.ones(len(order), dtype=bool)
    uncovered = shares.copy()
    taken: list[int] = []
    for _ in range(min(DIVERSE_PLACES, len(order))):
        gains = np.where(free, value + diversity * (held @ uncovered), -np.inf)
        best = int(np.argmax(gains))
        taken.append(best)
        free[best] = False
        uncovered[holds_terms[order[best]]] = 0.0
    rest = [i for i in range(len(order)) if free[i]]
    return order[np.asarray(taken + rest, dtype=np.intp)]


def _objective(rows: Sequence[QuestionRows], weights: npt.NDArray[np.float64]) -> float:
    """The mean over questions of session recall at 1, 5 and 10, added."""
    total = 0.0
    for row in rows:
        ranked = ranked_keys(row, weights)
        total += sum(session_recall(ranked, row.answers, k) for k in (1, 5, 10))
    return total / max(1, len(rows))


def ascend(
    rows: Sequence[QuestionRows],
    start: Sequence[float],
    *,
    rounds: int = 3,
    holds: Callable[[npt.NDArray[np.float64]], bool] | None = None,
) -> npt.NDArray[np.float64]:
    """Coordinate ascent from ``start``: each weight in turn multiplied by each of
    :data:`FACTORS`, a change kept when it raises the objective and ``holds`` (a constraint
    the weights must meet, when given) accepts it."""
    best = np.asarray(start, dtype=np.float64)
    best_value = _objective(rows, best)
    for _ in range(rounds):
        improved = False
        for index in range(len(best)):
            for factor in FACTORS:
                trial = best.copy()
                trial[index] = best[index] * factor if best[index] > 0 else REVIVE * factor
                if trial[index] == best[index]:
                    continue
                value = _objective(rows, trial)
                if value > best_value + 1e-9 and (holds is None or holds(trial)):
                    best, best_value, improved = trial, value, True
        if not improved:
            break
    return best


def with_line_weight(
    rows: Sequence[QuestionRows],
    weights: npt.NDArray[np.float64],
    holds: Callable[[npt.NDArray[np.float64]], bool] | None = None,
) -> npt.NDArray[np.float64]:
    """``weights`` (their slots up to the evidence's factor for when, as
    :func:`weights_from` reads them) with the weight of :data:`LINE_WEIGHTS` that ranks
    ``rows`` best among those ``holds`` accepts (ties to the smaller), appended."""
    base = [*(float(v) for v in weights[: len(LEARNED)]), *_extras(weights)[:3]]
    tried = [np.asarray([*base, line_weight], dtype=np.float64) for line_weight in LINE_WEIGHTS]
    allowed = [vector for vector in tried if holds is None or holds(vector)] or tried[:1]
    return max(allowed, key=lambda vector: (_objective(rows, vector), -vector[-1]))


def cross_validate(
    rows: Sequence[QuestionRows],
    start: Sequence[float],
    *,
    rounds: int = 3,
    extra: Sequence[QuestionRows] = (),
    holds: Callable[[npt.NDArray[np.float64]], bool] | None = None,
) -> tuple[list[list[str]], dict[str, npt.NDArray[np.float64]]]:
    """Leave one conversation out: each group's questions ranked by weights learned on the
    other groups (and on ``extra``, questions never held out: the generated eval set), the
    best line's weight then chosen on them too (:func:`with_line_weight`). Returns the
    rankings (in ``rows`` order) and each fold's weights."""
    ranked: list[list[str]] = [[] for _ in rows]
    learned: dict[str, npt.NDArray[np.float64]] = {}
    for group in sorted({row.group for row in rows}):
        training = [row for row in rows if row.group != group] + list(extra)
        weights = with_line_weight(
            training, ascend(training, start, rounds=rounds, holds=holds), holds
        )
        learned[group] = weights
        for index, row in enumerate(rows):
            if row.group == group:
                ranked[index] = ranked_keys(row, weights)
    return ranked, learned


def line_weight_of(vector: Sequence[float] | npt.NDArray[np.float64]) -> float:
    """The weight of the best quoted line in ``vector`` (its last slot, after the evidence's
    factor for when; 0 when it stops short of it): what :func:`with_line_weight` chose."""
    return _extras(vector)[3]


def weights_from(vector: Sequence[float] | npt.NDArray[np.float64], base: Weights) -> Weights:
    """``base`` with the learned weights of ``vector`` (in :data:`LEARNED` order, then the
    meaning boost, the diversity bonus and the evidence's factor for a question asking
    when, if given; absent, they are 0, 0 and 1): the ranking they were learned for."""
    learned: dict[str, Any] = {
        name: round(float(v), 4) for name, v in zip(LEARNED, vector[: len(LEARNED)], strict=True)
    }
    extra = [round(v, 4) for v in _extras(vector)]
    return replace(
        base, **learned, meaning_boost=extra[0], diversity=extra[1], when_evidence=extra[2]
    )


def fusion_holds(
    searches: NoteEvalSearches, base: Weights
) -> Callable[[npt.NDArray[np.float64]], bool]:
    """The constraint that the note eval's fused recall@5 stays at or above its better single
    search (vector or keyword alone) with the weights: what ``vivy eval --check`` demands."""
    scale = LOCAL_CALIBRATION

    def holds(vector: npt.NDArray[np.float64]) -> bool:
        settings = replace(DEFAULT_SETTINGS, weights=weights_from([float(v) for v in vector], base))
        return fused_shortfall(searches, scale, settings) <= 0.0

    return holds


def recall_of(
    rows: Sequence[QuestionRows], weights: npt.NDArray[np.float64], kind: str | None, k: int
) -> float:
    """Mean session recall at ``k`` of ``rows`` (those of ``kind`` only, when given)."""
    chosen = [row for row in rows if kind is None or row.kind == kind]
    return float(
        np.mean([session_recall(ranked_keys(row, weights), row.answers, k) for row in chosen])
    )


def recall_holds(
    rows: Sequence[QuestionRows], floors: Mapping[tuple[str | None, int], float]
) -> Callable[[npt.NDArray[np.float64]], bool]:
    """The constraint that ``rows``' recall stays at or above each floor (by question kind,
    None for all, and k): the generated set's best baseline in every cell, which
    ``vivy eval --check`` demands."""

    def holds(vector: npt.NDArray[np.float64]) -> bool:
        ranked = [ranked_keys(row, vector) for row in rows]
        for (kind, k), floor in floors.items():
            chosen = [i for i, row in enumerate(rows) if kind is None or row.kind == kind]
            recall = np.mean([session_recall(ranked[i], rows[i].answers, k) for i in chosen])
            if float(recall) < floor:
                return False
        return True

    return holds
