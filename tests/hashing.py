"""A deterministic test double of an embedding model: words hashed into signed buckets.

In-process tests embed sentences with it (:class:`HashedSentences`, see ``tests/conftest.py``)
unless they are about the shipped local model's meaning (``pytest.mark.sentence_model``);
tests that need a *second* embedding model (a model change, ``vivy reembed``, a vector of
another dimension) embed with :class:`HashingEmbedder` under a name of its own.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, LocalEmbedder, provider

if TYPE_CHECKING:
    import pytest

#: The process's one local embedder, whatever ``provider.shared_embedder`` is patched to.
local_model = provider.shared_embedder

__all__ = [
    "HashedSentences",
    "HashingEmbedder",
    "hash_embedding",
    "hashed_sentences",
    "install_hashed_sentences",
    "local_model",
    "remembered_sentence_model",
    "sentence_model",
]

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

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The hashed vectors of ``texts``, one row each."""
        return np.array(self.embed(texts), dtype=np.float32).reshape(len(texts), self.dimension)


class HashedSentences(HashingEmbedder):
    """The tests' stand-in for the shared local embedder: sentences hashed (a fraction of a
    millisecond each, where the sentence model takes tens), single words through the local
    model's word vectors (a table lookup) as retrieval's line scoring reads them."""

    def __init__(self, words: LocalEmbedder) -> None:
        super().__init__(model="test-hash-sentences")
        self._words = words

    def word_array(self, words: Sequence[str]) -> npt.NDArray[np.float32]:
        """The local model's vectors of single ``words``."""
        return self._words.word_array(words)


_HASHED: list[HashedSentences] = []


def hashed_sentences() -> HashedSentences:
    """The process's one :class:`HashedSentences`, in place of ``provider.shared_embedder``."""
    if not _HASHED:
        _HASHED.append(HashedSentences(local_model()))
    return _HASHED[0]


def install_hashed_sentences(patch: pytest.MonkeyPatch) -> None:
    """Embed sentences with :func:`hashed_sentences` wherever this process would load the
    local sentence model: the offline provider's shared embedder, which the lab's synthetic
    guilds embed with too (their vectors are a realistic spread for benchmarks, not meaning
    tests read)."""
    patch.setattr(provider, "shared_embedder", hashed_sentences)


@contextmanager
def sentence_model() -> Iterator[None]:
    """Within the block, in-process offline providers embed with the local sentence model:
    for tests (and their fixtures) about retrieval quality or the model itself."""
    import pytest

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(provider, "shared_embedder", local_model)
        yield


class RememberedSentences:
    """The local sentence model, each text's vector kept for the session once embedded: the
    lab eval's quality reports embed the same notes and sessions again (the small subset is
    part of the whole set, and runs on SQLite and on PostgreSQL), and the model gives a text
    the same vector each time (to float rounding, which moves with the batch)."""

    def __init__(self, model: LocalEmbedder) -> None:
        self.dimension = model.dimension
        self.model = model.model
        self._model = model
        self._known: dict[str, npt.NDArray[np.float32]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The model's vectors of ``texts``, embedding only those not seen before."""
        new = [text for text in dict.fromkeys(texts) if text not in self._known]
        if new:
            self._known.update(zip(new, self._model.embed_array(new), strict=True))
        return [self._known[text].tolist() for text in texts]

    def word_array(self, words: Sequence[str]) -> npt.NDArray[np.float32]:
        """The local model's vectors of single ``words``."""
        return self._model.word_array(words)


_REMEMBERED: list[RememberedSentences] = []


@contextmanager
def remembered_sentence_model() -> Iterator[None]:
    """As :func:`sentence_model`, through the session's one :class:`RememberedSentences`: for
    the lab eval's reports, which embed the bundled long conversations more than once."""
    import pytest

    if not _REMEMBERED:
        _REMEMBERED.append(RememberedSentences(local_model()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(provider, "shared_embedder", lambda: _REMEMBERED[0])
        yield
