"""The plain retrievers the long-conversation eval compares the shipped one with."""

from __future__ import annotations

import numpy as np

from vivy_lab.eval.baselines import DenseIndex, dense_sessions, reciprocal_rank_fusion


def test_dense_scores_a_session_by_its_best_window() -> None:
    """A session with one close window outranks one whose windows are all middling."""
    index = DenseIndex(
        ("a", "a", "b", "b"),
        np.array([[0.0, 1.0], [0.6, 0.8], [0.9, 0.436], [0.8, 0.6]]),
    )
    assert dense_sessions(index, [1.0, 0.0]) == ["b", "a"]
    assert dense_sessions(index, [0.0, 1.0]) == ["a", "b"]


def test_reciprocal_rank_fusion_sums_one_over_k_plus_rank() -> None:
    """An item high in both rankings wins; one found by a single ranking still counts."""
    fused = reciprocal_rank_fusion([["x", "y", "z"], ["y", "x", "w"]], k=60)
    assert fused[:2] == ["x", "y"]  # tied at 1/61 + 1/62: ties go in key order
    assert set(fused) == {"x", "y", "z", "w"}
    assert reciprocal_rank_fusion([["a", "b"], ["b"]]) == ["b", "a"]
