"""Fusion and relevance gate: pure functions, table-driven."""

from __future__ import annotations

import pytest

from vivy.retrieval.ranking import (
    GEMINI_CALIBRATION,
    OFFLINE_CALIBRATION,
    Calibration,
    Candidate,
    Gate,
    Weights,
    calibration_for,
    rank,
    recency,
    semantic_evidence,
)

NOW = 1_000_000_000.0
DAY = 86400.0
CAL = Calibration(floor=0.2, ceiling=0.6)


def cand(
    note_id: int,
    similarity: float | None = None,
    bm25: float | None = None,
    *,
    coverage: float = 0.0,
    age_days: float = 1.0,
    channel_id: int = 1,
) -> Candidate:
    """A candidate ``age_days`` old."""
    return Candidate(note_id, channel_id, NOW - age_days * DAY, similarity, bm25, coverage)


@pytest.mark.parametrize(
    ("similarity", "expected"),
    [(None, 0.0), (0.1, 0.0), (0.2, 0.0), (0.4, 0.5), (0.6, 1.0), (0.95, 1.0)],
)
def test_semantic_evidence_maps_floor_to_ceiling(similarity: float | None, expected: float) -> None:
    """Cosine similarity maps linearly from the model's floor (0) to its ceiling (1)."""
    assert semantic_evidence(similarity, CAL) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("age_days", "expected"), [(0.0, 1.0), (45.0, 0.5), (135.0, 0.25), (-3.0, 1.0)]
)
def test_recency_decays_hyperbolically(age_days: float, expected: float) -> None:
    """Recency is 1 / (1 + age / 45 days); future notes count as new."""
    assert recency(age_days * DAY, 45.0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("model", "expected"),
    [("offline-hash-v1", OFFLINE_CALIBRATION), ("gemini-embedding-001", GEMINI_CALIBRATION)],
)
def test_calibration_follows_the_embedding_model(model: str, expected: Calibration) -> None:
    """The offline hashing model and Gemini have their own similarity scales."""
    assert calibration_for(model) == expected


def ids(candidates: list[Candidate], **options: object) -> list[int]:
    """Note ids in ranked order (no gate unless given)."""
    options.setdefault("gate", None)
    ranked = rank(candidates, now=NOW, channel_id=1, calibration=CAL, **options)  # type: ignore[arg-type]
    return [scored.note_id for scored in ranked]


@pytest.mark.parametrize(
    ("name", "candidates", "expected"),
    [
        (
            "found by both beats found by one",
            [cand(1, 0.9), cand(2, 0.5, 9.0), cand(3, bm25=10.0)],
            [2, 3, 1],
        ),
        (
            "vector order alone",
            [cand(1, 0.3), cand(2, 0.5), cand(3, 0.4)],
            [2, 3, 1],
        ),
        (
            "keyword order alone",
            [cand(1, bm25=1.0), cand(2, bm25=3.0), cand(3, bm25=2.0)],
            [2, 3, 1],
        ),
        (
            "a note in neither list is left out",
            [cand(1), cand(2, bm25=0.0)],
            [2],
        ),
        (
            "recency breaks an exact tie",
            [cand(1, 0.5, age_days=300), cand(2, bm25=4.0, age_days=1)],
            [2, 1],
        ),
        (
            "same channel breaks an exact tie",
            [cand(1, 0.5, channel_id=2), cand(2, bm25=4.0, channel_id=1)],
            [2, 1],
        ),
        (
            "keyword weighs a little more than vector at the same place",
            [cand(1, 0.9), cand(2, bm25=1.0)],
            [2, 1],
        ),
        (
            "a duplicate keeps its first entry",
            [cand(1, 0.5), cand(1, bm25=9.0), cand(2, bm25=1.0)],
            [2, 1],
        ),
    ],
)
def test_fusion_order(name: str, candidates: list[Candidate], expected: list[int]) -> None:
    """Weighted reciprocal-rank fusion orders notes as the module documents."""
    assert ids(candidates) == expected, name


def test_equal_scores_go_to_the_newer_note_then_the_lower_id() -> None:
    """Without bonuses, equal places tie; the tie-break is newer first, then lower id."""
    flat = Weights(keyword=1.0, recency_bonus=0.0)
    candidates = [
        cand(4, 0.5, age_days=1),
        cand(5, bm25=2.0, age_days=0),
        cand(7, 0.4, age_days=1),
        cand(6, bm25=1.0, age_days=1),
    ]
    assert ids(candidates, weights=flat) == [5, 4, 6, 7]


def test_scores_are_scaled_into_unit_interval() -> None:
    """A brand-new same-channel note first in both lists scores exactly 1."""
    [top] = rank(
        [cand(1, 0.9, 20.0, age_days=0.0)], now=NOW, channel_id=1, calibration=CAL, gate=None
    )
    assert top.score == pytest.approx(1.0)
    assert (top.vector_rank, top.keyword_rank, top.same_channel) == (1, 1, True)


def test_recency_lifts_a_new_note_over_an_old_neighbour_only() -> None:
    """A bonus of at most 10% lifts a new note one place over a very old one, not two."""
    old_first = cand(1, 0.9, age_days=3000)
    assert ids([old_first, cand(2, 0.89, age_days=0)]) == [2, 1]
    old_second = cand(2, 0.8, age_days=3000)
    assert ids([old_first, old_second, cand(3, 0.5, age_days=0)]) == [1, 3, 2]
    assert ids([old_first, old_second, cand(3, 0.5, age_days=3000)]) == [1, 2, 3]


@pytest.mark.parametrize(
    ("name", "candidate", "kept"),
    [
        ("strong semantic", cand(1, 0.5), True),
        ("semantic just above the minimum", cand(1, 0.31), True),
        ("weak semantic", cand(1, 0.29), False),
        ("full keyword coverage", cand(1, bm25=0.1, coverage=1.0), True),
        ("keyword coverage at the minimum", cand(1, bm25=0.1, coverage=0.35), True),
        ("weak keyword coverage", cand(1, bm25=9.0, coverage=0.3), False),
        ("coverage without a keyword match", cand(1, 0.1, coverage=1.0), False),
        ("weak both", cand(1, 0.25, 1.0, coverage=0.2), False),
        ("weak semantic, strong keyword", cand(1, 0.21, 9.0, coverage=0.8), True),
        ("fresh, same channel, but irrelevant", cand(1, 0.1, age_days=0), False),
    ],
)
def test_gate(name: str, candidate: Candidate, kept: bool) -> None:
    """A note passes on semantic evidence >= 0.25 or keyword coverage >= 0.35 alone."""
    found = rank([candidate], now=NOW, channel_id=1, calibration=CAL, gate=Gate())
    assert bool(found) is kept, name


def test_gate_drops_weak_matches_but_keeps_order_and_limit() -> None:
    """Gating removes weak notes from anywhere in the list; ``limit`` cuts after gating."""
    candidates = [
        cand(1, 0.59),
        cand(2, 0.21),
        cand(3, 0.55),
        cand(4, bm25=12.0, coverage=0.9),
        cand(5, 0.5),
    ]
    assert ids(candidates, gate=Gate()) == [4, 1, 3, 5]
    assert ids(candidates, gate=Gate(), limit=2) == [4, 1]
    assert ids([], gate=Gate()) == []
