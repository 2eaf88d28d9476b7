"""Scoring, gate and diversification of found notes: pure functions, table-driven."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vivy.llm.offline import LOCAL_EMBEDDING_MODEL
from vivy.retrieval.ranking import (
    GEMINI_CALIBRATION,
    LOCAL_CALIBRATION,
    Calibration,
    Gate,
    Weights,
    calibration_for,
    features,
    names_unknown,
    rank,
    recency,
    relevance,
    semantic_evidence,
)
from vivy.storage.search_types import Candidate

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
    window_bm25: float | None = None,
    window_similarity: float | None = None,
    terms: frozenset[str] = frozenset(),
    named: bool = False,
    time_distance_s: float | None = None,
) -> Candidate:
    """A candidate ``age_days`` old."""
    return Candidate(
        note_id,
        channel_id,
        NOW - age_days * DAY,
        similarity,
        bm25,
        coverage,
        window_bm25=window_bm25,
        window_similarity=window_similarity,
        terms=terms,
        named=named,
        time_distance_s=time_distance_s,
    )


def order(candidates: list[Candidate], **options: object) -> list[int]:
    """The note ids :func:`rank` returns, gate off unless given."""
    options.setdefault("gate", None)
    ranked = rank(candidates, now=NOW, channel_id=None, calibration=CAL, **options)  # type: ignore[arg-type]
    return [one.note_id for one in ranked]


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
    [
        (LOCAL_EMBEDDING_MODEL, LOCAL_CALIBRATION),
        ("gemini-embedding-001", GEMINI_CALIBRATION),
    ],
)
def test_calibration_follows_the_embedding_model(model: str, expected: Calibration) -> None:
    """The local model and Gemini have their own similarity scales."""
    assert calibration_for(model) == expected


def test_evidence_match_outranks_a_note_matching_only_in_its_summary_weakly() -> None:
    """A note whose messages match the question, by their words and their meaning, beats one
    whose summary barely does."""
    summary_only = cand(1, bm25=1.0, coverage=0.3, terms=frozenset({"dog"}))
    evidence = cand(
        2,
        bm25=0.5,
        window_bm25=6.0,
        window_similarity=0.45,
        coverage=1.0,
        terms=frozenset({"dog", "name"}),
    )
    assert order([summary_only, evidence]) == [2, 1]


def test_scores_lie_in_the_unit_interval_and_a_perfect_note_scores_near_one() -> None:
    """Scores are weighted means of features in [0, 1]."""
    perfect = cand(
        1,
        similarity=0.9,
        bm25=5.0,
        coverage=1.0,
        age_days=0.0,
        window_bm25=5.0,
        window_similarity=0.9,
        named=True,
        time_distance_s=0.0,
    )
    weak = cand(2, bm25=0.1, coverage=0.1)
    ranked = rank(
        [perfect, weak], now=NOW, channel_id=1, calibration=CAL, gate=None, word_match={1: 0.8}
    )
    assert ranked[0].note_id == 1 and ranked[0].score == pytest.approx(1.0)
    assert all(0.0 <= one.score <= 1.0 for one in ranked)


def test_equal_scores_go_to_the_newer_note_then_the_lower_id() -> None:
    """Ties are broken by recency of the conversation, then by id: the order is stable."""
    weights = Weights(recency=0.0)
    same = [cand(3, bm25=1.0, age_days=5), cand(2, bm25=1.0, age_days=1), cand(1, bm25=1.0)]
    assert order(same, weights=weights) == [1, 2, 3]


def test_a_note_in_the_named_time_outranks_an_equal_note_outside_it() -> None:
    """'What did Maya say last week' prefers last week's conversation."""
    inside = cand(1, bm25=2.0, coverage=0.5, time_distance_s=0.0, age_days=30)
    outside = cand(2, bm25=2.0, coverage=0.5, time_distance_s=20 * DAY, age_days=1)
    assert order([outside, inside], time_span_s=7 * DAY) == [1, 2]


def test_a_note_with_the_named_member_outranks_an_equal_note_without() -> None:
    """'What did Sam name his dog' prefers conversations Sam took part in."""
    assert order([cand(1, bm25=2.0), cand(2, bm25=2.0, named=True)]) == [2, 1]


def test_a_note_matching_the_question_word_by_word_outranks_an_equal_note() -> None:
    """The word-by-word match, spread between the least and the best candidate's, weighs like
    any feature; a note missing from the matches counts 0."""
    weights = Weights(word_match=1.0)
    notes = [cand(1, bm25=2.0), cand(2, bm25=2.0), cand(3, bm25=2.0)]
    matches = {1: 0.2, 2: 0.4}
    assert order(notes, weights=weights, word_match=matches) == [2, 1, 3]
    ranked = rank(notes, now=NOW, channel_id=None, calibration=CAL, word_match=matches, gate=None)
    assert [one.features.word_match for one in ranked] == pytest.approx([1.0, 0.5, 0.0])
    assert order(notes, weights=Weights(word_match=0.0), word_match=matches) == [1, 2, 3]


def test_the_word_match_is_spread_between_the_least_and_the_best_candidate() -> None:
    """What every candidate matches says nothing: the least match counts 0, the best 1, and
    candidates that all match alike count 1."""
    notes = [cand(1, bm25=2.0), cand(2, bm25=2.0), cand(3, bm25=2.0)]
    ranked = rank(
        notes,
        now=NOW,
        channel_id=None,
        calibration=CAL,
        word_match={1: 0.6, 2: 0.7, 3: 0.8},
        gate=None,
    )
    assert {one.note_id: one.features.word_match for one in ranked} == pytest.approx(
        {1: 0.0, 2: 0.5, 3: 1.0}
    )
    alike = rank(
        notes,
        now=NOW,
        channel_id=None,
        calibration=CAL,
        word_match={1: 0.5, 2: 0.5, 3: 0.5},
        gate=None,
    )
    assert [one.features.word_match for one in alike] == [1.0, 1.0, 1.0]


def test_meaning_weighs_more_and_keywords_less_where_few_terms_are_held() -> None:
    """A question in other words than the conversation's leans on the word match and the
    embeddings, its keyword matches fading with the terms missing; one whose terms the notes
    hold leans on its keywords."""
    weights = Weights(
        note_keyword=1.0, evidence_keyword=0.5, note_vector=0.25, evidence_vector=0.5,
        coverage=0.2, word_match=0.5, name=0.0, time=0.0, recency=0.0, channel=0.0,
        diversity=0.0, meaning_boost=2.0, support_terms=3,
    )  # fmt: skip
    none_held = weights.supported(0)
    assert (none_held.word_match, none_held.note_vector, none_held.evidence_vector) == (
        pytest.approx(1.5),
        pytest.approx(0.75),
        pytest.approx(1.5),
    )
    assert (none_held.note_keyword, none_held.evidence_keyword, none_held.coverage) == (0, 0, 0)
    one_held = weights.supported(1)
    assert one_held.word_match == pytest.approx(0.5 * (1 + 2 * 2 / 3))
    assert one_held.evidence_vector == pytest.approx(0.5 * (1 + 2 * 2 / 3))
    assert one_held.note_keyword == pytest.approx(1 / 3)
    assert one_held.coverage == pytest.approx(0.2 / 3)
    assert weights.supported(3) == weights and weights.supported(7) == weights
    matches = {1: 0.1, 2: 0.9}
    unsupported = [cand(1, bm25=2.0), cand(2, bm25=0.8)]
    assert order(unsupported, weights=weights, word_match=matches) == [2, 1]
    common = frozenset({"work"})
    by_word = [cand(1, 0.3, bm25=2.0, terms=common), cand(2, 0.55)]
    assert order(by_word, weights=weights, word_match={1: 0.5, 2: 0.5}) == [2, 1]
    held = frozenset({"hiring", "process", "work"})
    supported = [cand(1, bm25=2.0, terms=held), cand(2, bm25=0.8, terms=held)]
    assert order(supported, weights=weights, word_match=matches) == [1, 2]


def test_a_note_without_evidence_windows_is_its_own_evidence_on_the_vector_side() -> None:
    """A topic cluster or a note older than its evidence has no window to compare: its own
    similarity stands in, so the evidence vector's weight still reads its meaning; a note
    with windows is read by its best window."""
    found = features(
        [cand(1, 0.6), cand(2, 0.6, window_similarity=0.3), cand(3)],
        now=NOW,
        channel_id=None,
        calibration=CAL,
    )
    assert [found[n].evidence_vector for n in (1, 2, 3)] == [1.0, pytest.approx(0.25), 0.0]
    evidence_only = Weights(
        note_keyword=0.0, evidence_keyword=1.0, note_vector=0.0, evidence_vector=1.0,
        coverage=0.0, word_match=0.0, name=0.0, time=0.0, recency=0.0, channel=0.0,
        diversity=0.0,
    )  # fmt: skip
    assert order([cand(1, 0.3), cand(2, 0.55)], weights=evidence_only) == [2, 1]


def test_diversity_takes_a_note_covering_the_rest_of_the_question_second() -> None:
    """A question needing two conversations gets both, not two copies of one."""
    first = cand(1, window_bm25=5.0, coverage=0.5, terms=frozenset({"job"}))
    copy = cand(2, window_bm25=4.9, coverage=0.5, terms=frozenset({"job"}))
    other = cand(3, window_bm25=4.5, coverage=0.5, terms=frozenset({"city"}))
    weights = {"job": 1.0, "city": 1.0}
    diverse = Weights(diversity=5.0)
    assert order([first, copy, other], term_weights=weights, weights=diverse) == [1, 3, 2]
    assert order([first, copy, other], term_weights=weights, weights=Weights(diversity=0.0)) == [
        1,
        2,
        3,
    ]


GATE = Gate(min_relevance=0.55, keyword_share=0.5)


@pytest.mark.parametrize(
    ("name", "candidate", "kept"),
    [
        (
            "a strong match",
            cand(1, similarity=0.6, bm25=5.0, coverage=1.0, window_bm25=5.0, window_similarity=0.6),
            True,
        ),
        ("close in meaning, few words", cand(1, window_similarity=0.6, coverage=0.2), True),
        ("half the evidence, in the named time", cand(1, coverage=0.6, time_distance_s=0.0), True),
        ("half the evidence, no time", cand(1, coverage=0.6), False),
        ("in the named time, nothing else", cand(1, time_distance_s=0.0), False),
        ("a weak keyword match", cand(1, bm25=0.1, coverage=0.1), False),
        ("every term of the question, no meaning", cand(1, bm25=0.1, coverage=0.95), True),
        ("weak both", cand(1, similarity=0.25, bm25=0.1, coverage=0.1), False),
    ],
)
def test_gate(name: str, candidate: Candidate, kept: bool) -> None:
    """A note is kept on its absolute evidence (keyword coverage and semantic match), or on
    half of it when it lies in the time the question names."""
    strong = cand(99, 0.6, bm25=5.0, coverage=1.0, window_bm25=5.0, terms=frozenset({"x"}))
    found = order([candidate, strong], gate=GATE)
    assert (1 in found) is kept, name


def test_a_note_that_passes_brings_the_notes_beside_it() -> None:
    """Once one note passes the gate the question is about this memory, so a note with three
    quarters of the needed evidence comes along; alone it is kept out, and a note with less
    than that share never comes."""
    strong = cand(99, 0.6, bm25=5.0, coverage=1.0, window_bm25=5.0, terms=frozenset({"x"}))
    beside = cand(1, 0.2, coverage=0.85)  # relevance 0.425: under 0.55, over 0.75 of it
    weaker = cand(2, 0.2, coverage=0.7)  # relevance 0.35
    assert sorted(order([strong, beside, weaker], gate=GATE)) == [1, 99]
    assert order([beside, weaker], gate=GATE) == []
    assert order([strong, beside, weaker], gate=replace(GATE, companion=1.0)) == [99]


def test_the_best_of_weak_matches_is_not_kept() -> None:
    """A question memory holds nothing about gets no note: the best keyword match of its
    candidates scores high among them, but holds little of the question."""
    best_of_weak = cand(1, 0.3, bm25=4.0, coverage=0.2, window_bm25=4.0, terms=frozenset({"b"}))
    weaker = cand(2, similarity=0.21, bm25=0.5, coverage=0.1)
    ranked = rank([best_of_weak, weaker], now=NOW, channel_id=None, calibration=CAL, gate=None)
    assert [one.note_id for one in ranked] == [1, 2]
    assert ranked[0].score > ranked[1].score
    assert order([best_of_weak, weaker], gate=GATE) == []


def test_without_an_embedding_the_keyword_coverage_decides() -> None:
    """The keyword-only path (the question could not be embedded) keeps a note holding the
    gate's keyword-only share of the question's terms."""
    held = cand(1, bm25=2.0, coverage=0.4, terms=frozenset({"b"}))
    little = cand(2, bm25=1.0, coverage=0.1, terms=frozenset({"c"}))
    assert order([held, little], gate=GATE) == [1]


def test_a_guessed_scale_leaves_the_gate_to_keywords() -> None:
    """On a model's guessed similarity scale (not measured), the gate judges by keyword
    coverage as the keyword-only path does, however the similarities read on it."""
    held = cand(1, 0.1, bm25=2.0, coverage=0.4, terms=frozenset({"b"}))
    little = cand(2, 0.9, bm25=1.0, coverage=0.1, terms=frozenset({"c"}))
    guessed = Calibration(floor=0.2, ceiling=0.6, measured=False)
    ranked = rank([held, little], now=NOW, channel_id=None, calibration=guessed, gate=GATE)
    assert [one.note_id for one in ranked] == [1]
    assert order([held, little], gate=GATE) == [2]


def test_the_gate_counts_the_words_no_note_holds() -> None:
    """A note holding every searched term of a question whose other words no note holds is
    judged on its share of the whole question: "what did Caroline research?" in a guild
    that never heard of Caroline is not answered by a note about research, though the
    ranking's own coverage (of the searched terms) is whole."""
    partial = replace(
        cand(1, bm25=2.0, coverage=1.0, terms=frozenset({"research"})), question_coverage=0.2
    )
    ranked = rank([partial], now=NOW, channel_id=None, calibration=CAL, gate=None)
    assert ranked[0].features.coverage == 1.0
    assert ranked[0].features.question_coverage == 0.2
    assert order([partial], gate=GATE) == []
    assert order([replace(partial, question_coverage=None)], gate=GATE) == [1]


def test_a_question_naming_only_strangers_gets_nothing_through_the_gate() -> None:
    """ "What did Melanie paint?" in a guild whose notes hold painting but never a Melanie is
    someone else's memory: the gate lets nothing through. A note holding the name, a note of
    a member the question names, or a name too common to be searched keeps the gate as it was;
    a note holding the name only as the start of a longer word ("Tim" in "time") does not,
    nor does a capitalised stop word ("IT")."""
    weights = {"melanie": 3.0, "paint": 1.0, "it": 0.5}
    painting = cand(1, 0.9, bm25=2.0, coverage=0.25, terms=frozenset({"paint"}))

    def kept(candidate: Candidate, names: tuple[str, ...], searched: dict[str, float]) -> list[int]:
        return order([candidate], gate=Gate(min_relevance=0.0), term_weights=searched, names=names)

    assert kept(painting, ("melanie",), weights) == []
    assert kept(painting, ("melanie", "it"), weights) == []
    held = replace(painting, terms=frozenset({"paint", "melanie"}))
    assert kept(held, ("melanie",), weights) == []
    assert kept(replace(held, whole_terms=frozenset({"melanie"})), ("melanie",), weights) == [1]
    assert kept(replace(painting, named=True), ("melanie",), weights) == [1]
    assert kept(painting, ("melanie",), {"paint": 1.0}) == [1]
    assert kept(painting, (), weights) == [1]
    assert names_unknown([painting], ("melanie",), weights)
    assert order([painting], gate=None, term_weights=weights, names=("melanie",)) == [1]


def test_a_question_asking_when_prefers_the_note_whose_lines_tell_the_event() -> None:
    """Asking when, the evidence's match weighs ``when_evidence`` times as much: the note
    whose lines tell the event overtakes the one whose summary mentions it in passing."""
    summary = cand(1, 0.6, window_similarity=0.3)
    lines = cand(2, 0.35, window_similarity=0.6)
    plain = Weights(note_vector=2.0, evidence_vector=1.5, when_evidence=1.0)
    weights = replace(plain, when_evidence=4.0)
    assert order([summary, lines], weights=weights) == [1, 2]
    assert order([summary, lines], weights=weights, asks_when=True) == [2, 1]
    assert order([summary, lines], weights=plain, asks_when=True) == [1, 2]


def test_relevance_weighs_coverage_and_the_stronger_semantic_match() -> None:
    """Relevance is the gate's mix of coverage and max(note, window) semantic evidence."""
    found = features(
        [cand(1, similarity=0.4, window_similarity=0.6, coverage=0.5)],
        now=NOW,
        channel_id=None,
        calibration=CAL,
    )[1]
    assert relevance(found, GATE) == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert relevance(found, Gate(keyword_share=1.0)) == pytest.approx(0.5)


def test_limit_and_duplicates() -> None:
    """A note listed twice keeps its first entry; ``limit`` cuts the ranking."""
    listed = [cand(1, bm25=3.0), cand(1, bm25=0.1), cand(2, bm25=2.0), cand(3, bm25=1.0)]
    assert order(listed, limit=2) == [1, 2]
