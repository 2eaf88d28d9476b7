"""A guild's similarity scale measured from a sample of its own vectors."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from vivy.memory.scales import SampledNote, ScaleSample
from vivy.retrieval.scale import (
    CEILING_SPREADS,
    FLOOR_SPREADS,
    MIN_NOTES,
    PARTNERS,
    measure_scale,
)

DIM = 32
NOW = 1772409600.0


def unit(values: list[float]) -> tuple[float, ...]:
    """``values`` scaled to unit length."""
    norm = math.sqrt(math.fsum(v * v for v in values))
    return tuple(v / norm for v in values)


def sample(notes: int, *, meaning: float, shared: float = 0.5, seed: int = 1) -> ScaleSample:
    """Notes whose windows lean towards their own note by ``meaning`` (0: no meaning), all
    sharing a common direction by ``shared``, as embeddings of one guild's chat do."""
    rng = random.Random(seed)
    common = [rng.gauss(0, 1) for _ in range(DIM)]

    def noise() -> list[float]:
        return [rng.gauss(0, 1) for _ in range(DIM)]

    found = []
    for number in range(notes):
        topic = noise()
        note = unit([shared * c + t for c, t in zip(common, topic, strict=True)])
        windows = tuple(
            unit(
                [
                    shared * c + meaning * t + n
                    for c, t, n in zip(common, topic, noise(), strict=True)
                ]
            )
            for _ in range(4)
        )
        found.append(SampledNote(number, note, windows))
    return ScaleSample(guild_id=1, notes=tuple(found))


def test_related_windows_put_the_ceiling_above_the_floor() -> None:
    """With windows closer to their own note, the scale is measured from every pair, its
    floor below the unrelated pairs' and its ceiling above it."""
    scale = measure_scale(sample(40, meaning=1.5), NOW)
    assert scale is not None
    assert scale.notes == 40
    assert scale.pairs == 40 * 4 * (1 + PARTNERS)
    assert scale.measured_at == NOW
    assert scale.floor < 0.2 < scale.ceiling


def test_definition_in_spreads_of_the_unrelated_pairs() -> None:
    """Floor and ceiling sit the set number of interquartile ranges of the unrelated pairs
    below the unrelated and the related medians."""
    # Note i points along axis i; its window leans to it by own[i] and to every other note's
    # axis by cross[i], so its related pair scores own[i] and any unrelated pair cross[i].
    own = [0.9, 0.8, 0.85, 0.7, 0.95, 0.75, 0.88, 0.82, 0.78, 0.9]
    cross = [0.01, 0.03, 0.02, 0.025, 0.005, 0.015, 0.035, 0.012, 0.022, 0.018]
    size = len(own) + 1
    notes = []
    for i, (a, b) in enumerate(zip(own, cross, strict=True)):
        window = [b] * len(own) + [0.0]
        window[i] = a
        window[-1] = math.sqrt(1 - math.fsum(v * v for v in window))
        axis = tuple(1.0 if j == i else 0.0 for j in range(size))
        notes.append(SampledNote(i, axis, (tuple(window),)))
    measured = measure_scale(ScaleSample(1, tuple(notes)), NOW)
    assert measured is not None
    # Each window meets PARTNERS unrelated notes, each pair scoring its note's cross value.
    unrelated = [b for b in cross for _ in range(PARTNERS)]
    low, middle, high = statistics.quantiles(unrelated, n=4, method="inclusive")
    assert middle == statistics.median(cross)
    spread = high - low
    assert measured.floor == pytest.approx(middle - FLOOR_SPREADS * spread)
    assert measured.ceiling == pytest.approx(statistics.median(own) - CEILING_SPREADS * spread)
    assert (measured.notes, measured.pairs) == (10, 10 * (1 + PARTNERS))


def test_no_separation_measures_nothing() -> None:
    """Windows exactly as close to other notes as to their own give no scale."""
    same = tuple(SampledNote(i, (1.0, 0.0), ((0.8, 0.6),)) for i in range(MIN_NOTES))
    assert measure_scale(ScaleSample(1, same), NOW) is None


def test_shifted_and_stretched_similarities_score_the_same() -> None:
    """A model whose similarities are an affine copy of another's gets the scale moved the
    same way, so every similarity maps onto the same place between floor and ceiling."""
    first = sample(30, meaning=1.2, seed=3)
    base = measure_scale(first, NOW)
    assert base is not None
    # Appending a constant dimension to every unit vector and normalising again turns each
    # similarity s into (s + c^2) / (1 + c^2).
    c = 1.3

    def lifted(vector: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(v / math.sqrt(1 + c * c) for v in (*vector, c))

    second = ScaleSample(
        1,
        tuple(
            SampledNote(n.note_id, lifted(n.vector), tuple(lifted(w) for w in n.windows))
            for n in first.notes
        ),
    )
    moved = measure_scale(second, NOW)
    assert moved is not None

    def placed(s: float, floor: float, ceiling: float) -> float:
        return (s - floor) / (ceiling - floor)

    for s in (0.1, 0.3, 0.6):
        assert placed((s + c * c) / (1 + c * c), moved.floor, moved.ceiling) == pytest.approx(
            placed(s, base.floor, base.ceiling)
        )


def test_too_few_notes_or_no_meaning_keep_the_default() -> None:
    """Fewer than the minimum of notes with windows, or windows no closer to their own note
    than to others (vectors that carry no meaning), measure nothing."""
    assert measure_scale(sample(MIN_NOTES - 1, meaning=1.5), NOW) is None
    assert measure_scale(sample(40, meaning=0.0), NOW) is None
    without = ScaleSample(1, tuple(SampledNote(i, (1.0, 0.0), ()) for i in range(40)))
    assert measure_scale(without, NOW) is None


def test_zero_vectors_measure_nothing() -> None:
    """A sample holding a zero vector gives no scale rather than a scale of NaNs."""
    notes = sample(20, meaning=1.5).notes
    broken = ScaleSample(1, (SampledNote(99, (0.0,) * DIM, notes[0].windows), *notes))
    assert measure_scale(broken, NOW) is None
