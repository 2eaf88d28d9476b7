"""The offline embedding: a static sentence-embedding model shipped inside a PyPI wheel.

`wordllama <https://github.com/dleemiller/WordLlama>`_ ships its ``l2_supercat`` model in its
wheel: one 256-dimension vector per token of Llama 2's 32,000-token vocabulary, trained so
that the mean of a text's token vectors embeds the text. Embedding is a tokenizer run and
an average, so a query embeds in well under a millisecond on one core and needs no network:
the weights and the tokenizer are read from the installed package, and wordllama is told
never to download (``docs/benchmarks.md`` compares it with the other candidates measured).

Texts are lower-cased first: the Llama tokenizer is case-sensitive, and the casing of chat
("LOL", "SIGNED THE LEASE") says little about what a message means.

:class:`LocalEmbedder` is the reusable piece: the offline provider embeds with it, and any
provider without embeddings of its own can too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vivy.errors import LLMError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["LOCAL_EMBEDDING_DIMENSION", "LOCAL_EMBEDDING_MODEL", "Embedder", "LocalEmbedder"]

#: The name stored with vectors the local model made (``meta.embedding_model``).
LOCAL_EMBEDDING_MODEL = "wordllama-l2-supercat-256"
#: The length of its vectors.
LOCAL_EMBEDDING_DIMENSION = 256

#: Texts embedded per tokenizer call; a batch pads to its longest text.
_BATCH = 64
#: Characters of a text that are embedded: a mean over more words moves little, and the cap
#: bounds the work and memory of one pathological message.
_MAX_CHARS = 4000


class Embedder(Protocol):
    """What a provider needs of an embedding model: its name, its vectors' length, and
    L2-normalised vectors of texts (synchronous CPU work)."""

    model: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, ``dimension`` long."""
        ...


class LocalEmbedder:
    """Embeds texts with the static model shipped in the ``wordllama`` wheel, offline.

    The model (about 33 MB of float32 weights in memory) is loaded on first use, once per
    embedder, under a lock; :meth:`embed` is synchronous CPU work and safe to call from any
    thread.
    """

    model = LOCAL_EMBEDDING_MODEL
    dimension = LOCAL_EMBEDDING_DIMENSION

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inference: Any = None

    def _loaded(self) -> Any:
        """wordllama's inference object, loaded from the installed package alone."""
        with self._lock:
            if self._inference is None:
                try:
                    import wordllama
                    from wordllama import WordLlama
                except ImportError as exc:  # pragma: no cover - a dependency of Vivy
                    raise LLMError(
                        "the offline embedding model needs the wordllama package;"
                        " reinstall Vivy (pip install -e .)"
                    ) from exc
                folder = Path(wordllama.__file__).parent
                try:
                    self._inference = WordLlama.load(
                        config="l2_supercat",
                        cache_dir=folder,
                        dim=LOCAL_EMBEDDING_DIMENSION,
                        disable_download=True,
                    )
                except (OSError, ValueError) as exc:
                    raise LLMError(
                        f"cannot load the offline embedding model from {folder} ({exc});"
                        " reinstall the wordllama package"
                    ) from exc
            return self._inference

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """L2-normalised embeddings of ``texts``, one row each; an empty text embeds as the
        placeholder ``<empty>``, so every row has a direction."""
        import numpy as np

        inference = self._loaded()
        prepared = [(text[:_MAX_CHARS].lower().strip() or "<empty>") for text in texts]
        if not prepared:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors: npt.NDArray[np.float32] = np.asarray(
            inference.embed(prepared, norm=True, batch_size=_BATCH), dtype=np.float32
        )
        if vectors.shape != (len(prepared), self.dimension) or not np.isfinite(vectors).all():
            raise LLMError("the offline embedding model returned unusable vectors")
        return vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised embeddings of ``texts`` as plain floats, one list each."""
        rows: list[list[float]] = self.embed_array(texts).tolist()
        return rows
