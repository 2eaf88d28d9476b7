"""Learning the fusion: the rows model ranks as ranking does (diversity included), and the
constraints it learns under refuse what they should."""

from __future__ import annotations

import numpy as np

from vivy.retrieval.ranking import Weights
from vivy_lab.eval.learning import (
    LEARNED,
    QuestionRows,
    ranked_keys,
    recall_holds,
    recall_of,
    weights_from,
)


def row(kind: str = "single-hop") -> QuestionRows:
    """Three candidates of a two-term question ("dog", "walk"): ``a`` and ``b`` hold "dog"
    and score best, ``c`` holds only "walk" and scores a little lower; the answer is ``c``."""
    matrix = np.zeros((3, len(LEARNED)))
    coverage = LEARNED.index("coverage")
    matrix[:, coverage] = [1.0, 0.99, 0.95]
    return QuestionRows(
        group="g",
        kind=kind,
        answers={1: "c"},
        keys=("a", "b", "c"),
        matrix=matrix,
        holds_terms=np.array([[True, False], [True, False], [False, True]]),
        term_shares=np.array([0.5, 0.5]),
    )


def weights(diversity: float) -> np.ndarray:
    """Every feature weighted 1, no word-match boost, and ``diversity``."""
    return np.array([1.0] * len(LEARNED) + [0.0, diversity])


def test_without_diversity_candidates_rank_by_their_weighted_sum() -> None:
    """The plain weighted sum puts the two "dog" notes first."""
    assert ranked_keys(row(), weights(0.0)) == ["a", "b", "c"]


def test_diversity_lifts_the_candidate_that_covers_a_new_term() -> None:
    """Once "dog" is covered, the note holding "walk" gains half the question's weight times
    the bonus and takes second place, as ranking's greedy diversification does."""
    assert ranked_keys(row(), weights(0.5)) == ["a", "c", "b"]


def test_recall_of_reads_one_kind_or_all_and_floors_hold_on_it() -> None:
    """Recall@2 of the rows, of one kind or (None) of all: the diversified ranking reaches the
    answer by the second place, the plain one does not; floors on it refuse the plain one."""
    rows = [row(), row("paraphrase")]
    assert recall_of(rows, weights(0.0), None, 2) == 0.0
    assert recall_of(rows, weights(0.5), "paraphrase", 2) == 1.0
    assert recall_of(rows, weights(0.5), None, 2) == 1.0
    holds = recall_holds(rows, {(None, 2): 1.0, ("paraphrase", 2): 1.0})
    assert holds(weights(0.5)) and not holds(weights(0.0))


def test_learned_vectors_become_weights_with_the_boost_and_diversity() -> None:
    """The vector's last two entries are the word-match boost and the diversity bonus; a
    vector without them leaves both off."""
    full = weights_from([*([0.5] * len(LEARNED)), 2.0, 3.0], Weights())
    assert (full.coverage, full.word_match_boost, full.diversity) == (0.5, 2.0, 3.0)
    bare = weights_from([0.5] * len(LEARNED), Weights())
    assert (bare.word_match_boost, bare.diversity, bare.when_evidence) == (0.0, 0.0, 1.0)
    when = weights_from([*([0.5] * len(LEARNED)), 2.0, 3.0, 4.0], Weights())
    assert when.when_evidence == 4.0


def test_a_question_asking_when_weighs_the_evidence_by_its_factor() -> None:
    """Note ``a`` matches by its summary, ``b`` by its evidence lines: plain, ``a`` leads;
    asking when, with the evidence weighing three times, ``b`` does, as ranking would."""
    matrix = np.zeros((2, len(LEARNED)))
    matrix[:, LEARNED.index("note_vector")] = [1.0, 0.0]
    matrix[:, LEARNED.index("evidence_vector")] = [0.0, 0.5]
    plain = QuestionRows("g", "temporal", {1: "b"}, ("a", "b"), matrix)
    asking = QuestionRows("g", "temporal", {1: "b"}, ("a", "b"), matrix, when=True)
    vector = np.array([1.0] * len(LEARNED) + [0.0, 0.0, 3.0])
    assert ranked_keys(plain, vector) == ["a", "b"]
    assert ranked_keys(asking, vector) == ["b", "a"]
    assert ranked_keys(asking, vector[:-1]) == ["a", "b"]
