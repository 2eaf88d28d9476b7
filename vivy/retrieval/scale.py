"""A guild's similarity scale, measured from its own vectors (pure: no I/O, no clock read).

Ranking maps a cosine similarity onto [0, 1] between a floor (what an unrelated note scores)
and a ceiling (a clear match), and each embedding model reads differently (unrelated texts
score far higher with some models than with others). The nightly job measures the scale of
each guild from a sample of its notes (:class:`~vivy.memory.scales.ScaleSample`): each
sampled evidence window is compared with its own note's vector (a *related* pair) and with
the vectors of :data:`PARTNERS` other sampled notes drawn at random (*unrelated* pairs), and

* ``u`` is the median similarity of the unrelated pairs, ``s`` their interquartile range,
  and ``r`` the median similarity of the related pairs;
* ``floor = u - FLOOR_SPREADS * s`` and ``ceiling = r - CEILING_SPREADS * s``.

A question is shorter than a window and carries no header, so it sits lower against notes
than windows do: the two constants say how far, in spreads of the unrelated similarities.
They were measured once, on the long-conversation eval set's training guilds with the local
model, as the constants that give the scale its questions measure there
(``scripts/learn_fusion_weights.py`` prints them; ``vivy eval`` prints both scales). The
definition is affine-equivariant: a model whose similarities are a shifted and stretched
copy of another's gets the same scores after mapping, which is what a scale is for, so
Gemini's and any other model's vectors are measured the same way.

A guild with fewer than :data:`MIN_NOTES` sampled notes, or whose related pairs do not stand
clearly above its unrelated ones (vectors that carry no meaning), keeps the model's default.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from vivy.memory.scales import ScaleSample, SimilarityScale

__all__ = [
    "CEILING_SPREADS",
    "FLOOR_SPREADS",
    "MIN_NOTES",
    "MIN_SEPARATION",
    "PARTNERS",
    "SAMPLE_NOTES",
    "SAMPLE_WINDOWS",
    "ScaleStatistics",
    "measure_scale",
    "scale_statistics",
]

#: The floor's and the ceiling's distance below the unrelated and related medians, in
#: interquartile ranges of the unrelated similarities.
FLOOR_SPREADS = 2.65
CEILING_SPREADS = 1.05
#: Notes (the guild's newest with embedded evidence) and windows per note sampled, and the
#: unrelated notes each window is compared with, so the work is bounded whatever the guild's
#: size.
SAMPLE_NOTES = 200
SAMPLE_WINDOWS = 8
PARTNERS = 8
#: Fewer sampled notes than this: the guild keeps the model's default scale.
MIN_NOTES = 10
#: The related median must stand this many spreads above the unrelated one.
MIN_SEPARATION = 0.5


@dataclass(frozen=True, slots=True)
class ScaleStatistics:
    """What a sample's pairs show: the unrelated pairs' median and interquartile range, the
    related pairs' median, and how much they were measured on."""

    unrelated: float
    spread: float
    related: float
    notes: int
    pairs: int


def scale_statistics(sample: ScaleSample) -> ScaleStatistics | None:
    """The statistics of ``sample``'s pairs (see the module docstring), or None when it has
    fewer than :data:`MIN_NOTES` notes with windows or a vector without a direction."""
    import numpy as np

    notes = [note for note in sample.notes if note.windows]
    if len(notes) < MIN_NOTES:
        return None
    related: list[float] = []
    unrelated: list[float] = []
    # Each window against its own note, and against other notes drawn at random (seeded by
    # the sample, so a measurement can be repeated), never its own. A zero vector gives NaN,
    # refused below.
    draw = random.Random(len(notes))
    with np.errstate(invalid="ignore", divide="ignore"):
        vectors = np.asarray([note.vector for note in notes], dtype=np.float64)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for index, note in enumerate(notes):
            windows = np.asarray(note.windows, dtype=np.float64)
            windows /= np.linalg.norm(windows, axis=1, keepdims=True)
            related.extend((windows @ vectors[index]).tolist())
            for _ in range(PARTNERS):
                others = [
                    (index + 1 + draw.randrange(len(notes) - 1)) % len(notes) for _ in windows
                ]
                unrelated.extend(np.einsum("ij,ij->i", windows, vectors[others]).tolist())
    low, middle, high = (float(x) for x in np.quantile(unrelated, [0.25, 0.5, 0.75]))
    clear = float(np.median(related))
    if not np.isfinite([low, middle, high, clear]).all():
        return None
    return ScaleStatistics(middle, high - low, clear, len(notes), len(related) + len(unrelated))


def measure_scale(sample: ScaleSample, now: float) -> SimilarityScale | None:
    """The guild's scale measured on ``sample`` at ``now`` (see the module docstring), or
    None when the sample is too small or shows no meaning."""
    found = scale_statistics(sample)
    if found is None or found.related - found.unrelated <= MIN_SEPARATION * found.spread:
        return None
    return SimilarityScale(
        floor=found.unrelated - FLOOR_SPREADS * found.spread,
        ceiling=found.related - CEILING_SPREADS * found.spread,
        notes=found.notes,
        pairs=found.pairs,
        measured_at=now,
    )
