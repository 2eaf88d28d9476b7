"""Hashing embeddings: stemmed word unigrams and bigrams hashed into a signed vector.

Embedding is on the import's hot path (every note and every evidence window), so the
per-word and per-feature work is memoised and only the buckets a text touches are normalised; the
vectors are exactly those of :func:`vivy.llm.port.l2_normalise` over the dense vector.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from functools import lru_cache
from itertools import pairwise

from vivy.llm.offline.text import STOPWORDS, WORD

__all__ = ["hash_embedding"]


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light suffix strip so "games"/"game" and "learning"/"learn" share a feature."""
    for suffix, replacement, keep in (("ies", "y", 3), ("ing", "", 4), ("ed", "", 4), ("s", "", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + replacement
    return word


@lru_cache(maxsize=1 << 16)
def _feature_index(feature: str, dimension: int) -> tuple[int, float]:
    """A stable bucket and sign for ``feature`` (blake2b, never Python's salted hash)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    sign = -1.0 if digest >> 63 else 1.0
    return digest % dimension, sign


@lru_cache(maxsize=1 << 16)
def _word_form(raw: str) -> tuple[str, bool] | None:
    """The feature form of a word as written (lower case, stemmed) and whether it is a
    stopword; None when nothing but punctuation is left."""
    word = raw.lower().strip("'’-_")
    if not word:
        return None
    return _stem(word), word in STOPWORDS


def hash_embedding(text: str, dimension: int = 768) -> list[float]:
    """A deterministic, L2-normalised feature-hashing embedding of ``text``.

    Features are stemmed word unigrams (weight 1) and bigrams (weight 0.7) with sublinear
    term frequency; stopwords are dropped unless nothing else is left. Each feature adds its
    weight, with a hashed sign, to one of ``dimension`` buckets: all unigrams, then all
    bigrams, each in order of first appearance.
    """
    forms = [form for form in map(_word_form, WORD.findall(text)) if form is not None]
    content = [stem for stem, stopword in forms if not stopword]
    if not content:
        content = [stem for stem, _ in forms]
    buckets: dict[int, float] = {}
    for word, count in Counter(content).items():
        index, sign = _feature_index(f"u:{word}", dimension)
        buckets[index] = buckets.get(index, 0.0) + sign * (1.0 + math.log(count))
    for (first, second), count in Counter(pairwise(content)).items():
        index, sign = _feature_index(f"b:{first} {second}", dimension)
        buckets[index] = buckets.get(index, 0.0) + sign * (0.7 * (1.0 + math.log(count)))
    # Untouched buckets add nothing to the exactly rounded sum of squares, and stay 0.0.
    norm = math.sqrt(math.fsum(value * value for value in buckets.values()))
    vector = [0.0] * dimension
    if norm == 0.0 or not math.isfinite(norm):
        index, sign = _feature_index("<empty>", dimension)
        vector[index] = sign
        return vector
    for index, value in buckets.items():
        vector[index] = value / norm
    return vector
