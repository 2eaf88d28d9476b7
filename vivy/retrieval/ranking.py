"""Fusion of vector and keyword matches into one ranking, and the relevance gate (pure).

A candidate note carries up to three raw signals: the cosine similarity of its embedding to
the query's (vector search), its BM25 strength (keyword search, ``-bm25()``, higher is
better) and its term coverage (the idf-weighted share of the searched query terms it contains,
computed by :func:`vivy.retrieval.search.coverage`).

**Order: weighted reciprocal-rank fusion with small bonuses.** With ``rank_v`` and ``rank_k``
the note's 1-based places in the vector list (by similarity) and in the keyword list (by
BM25), a list it is not in adding nothing, and ``K = 10``::

    fused = w_v / (K + rank_v) + w_k / (K + rank_k)          w_v = 1.0, w_k = 1.2
    score = fused * (1 + 0.1 * recency + 0.05 * same_channel) / best_possible

where ``recency = 1 / (1 + age_days / 45)`` (seed 003's decay: 0.5 at 45 days),
``same_channel`` is 1 when the note comes from the channel being answered in, and
``best_possible`` (first in both lists, brand new, same channel) scales scores into [0, 1].
Ranks, not raw scores, are fused, because cosine similarities and BM25 values live on scales
that differ by embedding model and corpus size; the offline eval (``vivy eval``) shows the
fusion beating either list alone. Recency and channel can lift a note a place or two among
neighbours of similar relevance, never from the bottom to the top.

**Gate: absolute evidence.** Ranks say nothing about whether the best match is any good, so
the gate looks at two absolute measures in [0, 1]:

* semantic evidence ``clamp((cos - floor) / (ceiling - floor))``, with the ``floor``
  (unrelated texts) and ``ceiling`` (a clear match) of the embedding model in use
  (:class:`Calibration`: offline hashing and Gemini differ a lot);
* keyword evidence: the note's term coverage. Unlike BM25, whose idf is zero for a term in
  half the notes, it stays meaningful in a guild with only a handful of notes.

A note is kept when either evidence reaches its minimum (:class:`Gate`); recency and channel
never let an irrelevant note in. Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "GEMINI_CALIBRATION",
    "OFFLINE_CALIBRATION",
    "Calibration",
    "Candidate",
    "Gate",
    "Scored",
    "Weights",
    "calibration_for",
    "passes_gate",
    "rank",
    "recency",
    "semantic_evidence",
]

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note found by vector and/or keyword search, with what ranking needs to know of it.

    ``at`` is the note's wall time (end of the conversation); ``similarity`` the cosine
    similarity (None when vector search did not find it); ``bm25`` the BM25 strength, higher
    is better (None when keyword search did not find it); ``coverage`` the idf-weighted share
    of the searched terms the note contains (0 to 1).
    """

    note_id: int
    channel_id: int
    at: float
    similarity: float | None
    bm25: float | None
    coverage: float = 0.0


@dataclass(frozen=True, slots=True)
class Calibration:
    """Cosine similarities of one embedding model: ``floor`` is unrelated, ``ceiling`` clear."""

    floor: float
    ceiling: float


#: The offline hashing embedding: unrelated texts share almost no features (cos 0 to 0.1).
OFFLINE_CALIBRATION = Calibration(floor=0.05, ceiling=0.35)
#: gemini-embedding-001 (768 dims, query against document): unrelated texts still score
#: about 0.5. An estimate; check it on real data with ``vivy eval --provider gemini``.
GEMINI_CALIBRATION = Calibration(floor=0.50, ceiling=0.80)


def calibration_for(embedding_model: str) -> Calibration:
    """The calibration of an embedding model: offline hashing, or Gemini for any other."""
    return OFFLINE_CALIBRATION if embedding_model.startswith("offline") else GEMINI_CALIBRATION


@dataclass(frozen=True, slots=True)
class Weights:
    """The fusion's constants: list weights, RRF's ``K`` and the bonuses' sizes and scales."""

    vector: float = 1.0
    keyword: float = 1.2
    k: float = 10.0
    recency_bonus: float = 0.10
    channel_bonus: float = 0.05
    #: Age in days at which recency is 0.5.
    recency_days: float = 45.0


@dataclass(frozen=True, slots=True)
class Gate:
    """The relevance gate: the evidence a note needs, semantic or keyword, to be kept."""

    min_semantic: float = 0.25
    min_keyword: float = 0.35


@dataclass(frozen=True, slots=True)
class Scored:
    """A ranked note: its score, its places in both lists and the evidence behind it."""

    note_id: int
    score: float
    similarity: float | None
    bm25: float | None
    vector_rank: int | None
    keyword_rank: int | None
    semantic: float
    keyword: float
    recency: float
    same_channel: bool


def semantic_evidence(similarity: float | None, calibration: Calibration) -> float:
    """``similarity`` mapped linearly from [floor, ceiling] onto [0, 1] (0 when missing)."""
    if similarity is None:
        return 0.0
    span = calibration.ceiling - calibration.floor
    if span <= 0:
        return 1.0 if similarity >= calibration.ceiling else 0.0
    return min(1.0, max(0.0, (similarity - calibration.floor) / span))


def recency(age_s: float, days: float) -> float:
    """``1 / (1 + age_days / days)``; a note from the future counts as new."""
    return 1.0 / (1.0 + max(0.0, age_s) / DAY_S / days)


def passes_gate(scored: Scored, gate: Gate) -> bool:
    """Whether the match is strong enough on its own, semantically or by keywords."""
    return scored.semantic >= gate.min_semantic or scored.keyword >= gate.min_keyword


def _places(candidates: list[Candidate]) -> tuple[dict[int, int], dict[int, int]]:
    """1-based places of the notes in the vector list and in the keyword list."""
    by_vector = sorted(
        (c for c in candidates if c.similarity is not None),
        key=lambda c: (-(c.similarity or 0.0), c.note_id),
    )
    by_keyword = sorted(
        (c for c in candidates if c.bm25 is not None),
        key=lambda c: (-(c.bm25 or 0.0), c.note_id),
    )
    return (
        {c.note_id: place for place, c in enumerate(by_vector, 1)},
        {c.note_id: place for place, c in enumerate(by_keyword, 1)},
    )


def rank(
    candidates: Iterable[Candidate],
    *,
    now: float,
    channel_id: int | None,
    calibration: Calibration,
    weights: Weights = Weights(),
    gate: Gate | None = Gate(),
    limit: int | None = None,
) -> list[Scored]:
    """Candidates fused, gated (unless ``gate`` is None) and sorted best first.

    Ties go to the newer note, then the lower id, so the order is deterministic. A note
    listed twice keeps its first entry; a note in neither list is left out.
    """
    unique: dict[int, Candidate] = {}
    for candidate in candidates:
        unique.setdefault(candidate.note_id, candidate)
    vector_places, keyword_places = _places(list(unique.values()))
    best = (weights.vector + weights.keyword) / (weights.k + 1)
    best *= 1 + weights.recency_bonus + weights.channel_bonus
    ranked: list[tuple[Scored, float]] = []
    for candidate in unique.values():
        v_place = vector_places.get(candidate.note_id)
        k_place = keyword_places.get(candidate.note_id)
        if v_place is None and k_place is None:
            continue
        fused = 0.0
        if v_place is not None:
            fused += weights.vector / (weights.k + v_place)
        if k_place is not None:
            fused += weights.keyword / (weights.k + k_place)
        fresh = recency(now - candidate.at, weights.recency_days)
        same = channel_id is not None and candidate.channel_id == channel_id
        bonus = 1 + weights.recency_bonus * fresh + (weights.channel_bonus if same else 0.0)
        one = Scored(
            note_id=candidate.note_id,
            score=fused * bonus / best,
            similarity=candidate.similarity,
            bm25=candidate.bm25,
            vector_rank=v_place,
            keyword_rank=k_place,
            semantic=semantic_evidence(candidate.similarity, calibration),
            keyword=candidate.coverage if candidate.bm25 is not None else 0.0,
            recency=fresh,
            same_channel=same,
        )
        if gate is None or passes_gate(one, gate):
            ranked.append((one, candidate.at))
    ranked.sort(key=lambda pair: (-pair[0].score, -pair[1], pair[0].note_id))
    found = [one for one, _ in ranked]
    return found if limit is None else found[:limit]
