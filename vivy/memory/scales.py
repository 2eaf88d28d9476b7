"""A guild's similarity scale: how its embedding model's cosine similarities read in its data.

The nightly job reads a sample of the guild's note vectors with some of their evidence
windows' vectors (:class:`ScaleSample`), measures from it what an unrelated note and a
clear match score (:func:`vivy.retrieval.scale.measure_scale`), and stores the result
(:class:`SimilarityScale`) per guild and embedding model among the database's facts (the
``meta`` table, under :func:`scale_key`, as :meth:`SimilarityScale.encode` writes it, so that
``vivy db copy`` keeps it); the retriever reads it back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

__all__ = ["SampledNote", "ScaleSample", "SimilarityScale", "scale_key"]


@dataclass(frozen=True, slots=True)
class SampledNote:
    """One note of a sample: its vector and the vectors of some of its evidence windows."""

    note_id: int
    vector: tuple[float, ...]
    windows: tuple[tuple[float, ...], ...]


@dataclass(frozen=True, slots=True)
class ScaleSample:
    """A guild's newest conversation notes that have embedded evidence, newest first."""

    guild_id: int
    notes: tuple[SampledNote, ...]


@dataclass(frozen=True, slots=True)
class SimilarityScale:
    """A guild's measured scale for one embedding model: ``floor`` is what an unrelated note
    scores, ``ceiling`` a clear match; measured on ``notes`` notes and ``pairs`` window-note
    pairs at ``measured_at`` (UTC epoch seconds)."""

    floor: float
    ceiling: float
    notes: int
    pairs: int
    measured_at: float

    def encode(self) -> str:
        """The stored form: JSON of the fields."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> SimilarityScale:
        """The scale :meth:`encode` stored; ValueError (or TypeError) when it is not one."""
        fields = json.loads(text)
        return cls(
            floor=float(fields["floor"]),
            ceiling=float(fields["ceiling"]),
            notes=int(fields["notes"]),
            pairs=int(fields["pairs"]),
            measured_at=float(fields["measured_at"]),
        )


def scale_key(guild_id: int, embedding_model: str, dimension: int) -> str:
    """The key a guild's scale for an embedding model is stored under."""
    return f"similarity_scale:{guild_id}:{embedding_model}:{dimension}"
