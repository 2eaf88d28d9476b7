"""Evidence windows: each line embedded once, a window's vector pooled from its lines."""

from __future__ import annotations

import math

import pytest

from vivy.memory.evidence import NOTE_CONTEXT, pooled_windows, window_lines, windows_of

LINES = [
    (1, "Sam", "got a puppy"),
    (2, "Maya", "what breed?"),
    (3, "Sam", "a corgi"),
    (4, "Maya", "cute"),
    (5, "Sam", "he chewed my shoe"),
    (6, "Maya", "classic"),
]


def test_overlapping_windows_embed_each_line_once() -> None:
    """Windows share lines; the lines to embed are each said once, in order."""
    texts = [w.text for w in windows_of(LINES)]
    assert len(texts) == 2
    assert window_lines(texts) == [f"{a}: {t}" for _, a, t in LINES]


def test_a_window_is_the_normalised_mean_of_its_lines() -> None:
    """Without a note vector, a window's vector is the unit mean of its lines' unit vectors,
    whatever their length."""
    texts = ["Sam: a\nMaya: b", "Maya: b\nSam: c"]
    lines = window_lines(texts)
    vectors = [[2.0, 0.0, 0.0, 0.0], [0.0, 5.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.0]]
    first, second = pooled_windows(texts, lines, vectors, [None, None])
    half = 1 / math.sqrt(2)
    assert first == pytest.approx([half, half, 0.0, 0.0])
    assert second == pytest.approx([0.0, half, half, 0.0])


def test_a_window_leans_toward_its_note() -> None:
    """The note's unit vector joins the lines' mean at NOTE_CONTEXT, giving each window the
    note's context; a note vector of another length (another model) is left out."""
    texts = ["Sam: a\nMaya: b"]
    lines = window_lines(texts)
    vectors = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    (leaning,) = pooled_windows(texts, lines, vectors, [[0.0, 0.0, 3.0]])
    expected = [0.5, 0.5, NOTE_CONTEXT]
    size = math.sqrt(sum(x * x for x in expected))
    assert leaning == pytest.approx([x / size for x in expected])
    (alone,) = pooled_windows(texts, lines, vectors, [[1.0] * 384])
    assert alone == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2), 0.0])


def test_pooling_refuses_vectors_that_do_not_match_the_lines() -> None:
    """A model that returns fewer vectors than lines is an error, not a shifted pooling."""
    with pytest.raises(ValueError, match="2 vectors for 3 lines"):
        pooled_windows(["a\nb\nc"], ["a", "b", "c"], [[1.0], [1.0]], [None])
