"""Learning the fusion: the rows model ranks as ranking does (diversity included), and the
constraints it learns under refuse what they should."""

from __future__ import annotations

import numpy as np

from vivy.retrieval.ranking import Weights
from vivy_lab.eval.learning import (
    LEARNED,
    QuestionRows,
    line_weight_of,
    ranked_keys,
    recall_holds,
    recall_of,
    weights_from,
    with_line_weight,
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
    """Every feature weighted 1, no meaning boost, and ``diversity``."""
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
    """The vector's slots after the weights are the meaning boost, the diversity bonus, the
    evidence's factor for when and the best line's weight; a vector without them leaves
    them off."""
    full = weights_from([*([0.5] * len(LEARNED)), 2.0, 3.0], Weights())
    assert (full.coverage, full.meaning_boost, full.diversity) == (0.5, 2.0, 3.0)
    bare = weights_from([0.5] * len(LEARNED), Weights())
    assert (bare.meaning_boost, bare.diversity, bare.when_evidence) == (0.0, 0.0, 1.0)
    when = weights_from([*([0.5] * len(LEARNED)), 2.0, 3.0, 4.0], Weights())
    assert when.when_evidence == 4.0
    assert line_weight_of([*([0.5] * len(LEARNED)), 2.0, 3.0, 4.0, 0.75]) == 0.75
    assert line_weight_of([*([0.5] * len(LEARNED)), 2.0, 3.0, 4.0]) == 0.0


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


def test_the_first_notes_are_ordered_again_by_their_best_line_as_replies_order_them() -> None:
    """Note ``a`` scores best, ``b`` quotes the better line: with the line's weight (the slot
    after the factor for when) ``b`` leads where the line outweighs the gap in the scores'
    mean, as :func:`vivy.retrieval.ranked.best_line_order` orders hits; a note quoting no
    line keeps its place; the chosen weight ranks the rows best."""
    matrix = np.zeros((3, len(LEARNED)))
    matrix[:, LEARNED.index("coverage")] = [1.0, 0.6, 0.5]
    one = QuestionRows(
        "g",
        "single-hop",
        {1: "b"},
        ("a", "b", "c"),
        matrix,
        best_line=np.array([0.1, 0.9, np.nan]),
        has_time=False,
    )
    vector = np.array([1.0] * len(LEARNED) + [0.0, 0.0, 1.0])
    assert ranked_keys(one, vector) == ["a", "b", "c"]
    # Scores are the weighted sum over the mean's total (the time weight left out): the
    # gap 0.4 / 7 is outweighed by 0.25 x 0.8, not by 0.01 x 0.8.
    assert ranked_keys(one, np.append(vector, 0.25)) == ["b", "a", "c"]
    assert ranked_keys(one, np.append(vector, 0.01)) == ["a", "b", "c"]
    chosen = with_line_weight([one], vector)
    assert chosen[-1] > 0 and ranked_keys(one, chosen)[0] == "b"
