"""A deterministic test double of an embedding model: words hashed into signed buckets.

Tests that need a *second* embedding model (a model change, ``vivy reembed``, a vector of
another dimension) embed with it; everything else embeds with the shipped local model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION

__all__ = ["HashingEmbedder", "hash_embedding"]

_WORD = re.compile(r"[^\W_]+")


def hash_embedding(text: str, dimension: int = LOCAL_EMBEDDING_DIMENSION) -> list[float]:
    """The unit vector of ``text``'s lower-cased words, each adding a hashed sign to one of
    ``dimension`` buckets (blake2b, so the same in every process)."""
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()) or ["<empty>"]:
        digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vector[digest % dimension] += -1.0 if digest >> 63 else 1.0
    norm = math.sqrt(math.fsum(v * v for v in vector))
    if norm == 0.0:  # words cancelled out: fall back to one bucket
        vector[0], norm = 1.0, 1.0
    return [v / norm for v in vector]


class HashingEmbedder:
    """An embedder (as :class:`vivy.llm.offline.LocalEmbedder`) that hashes words."""

    def __init__(
        self, *, dimension: int = LOCAL_EMBEDDING_DIMENSION, model: str = "test-hash"
    ) -> None:
        self.dimension = dimension
        self.model = model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One hashed vector per text."""
        return [hash_embedding(text, self.dimension) for text in texts]
