"""The offline embedding: a static sentence-embedding model shipped inside Vivy's own wheel.

The model is `wordllama <https://github.com/dleemiller/WordLlama>`_'s ``l2_supercat``: one
256-dimension vector per token of Llama 2's 32,000-token vocabulary, trained so that the mean
of a text's token vectors embeds the text. Embedding is a tokenizer run and an average, so a
query embeds in well under a millisecond on one core and needs no network. Its weights (a
safetensors file, copied unchanged from the wordllama wheel) and its tokenizer (the same Llama
2 tokenizer, as a SentencePiece model) lie in ``vivy/data/local_model/`` with their licence
and provenance, made by ``scripts/build_local_model.py``; they are read with the
``safetensors`` and ``sentencepiece`` packages, which need nothing else, where the wordllama
package would bring the Hugging Face hub client and its downloader (``docs/llm.md``).

Texts are lower-cased first: the Llama tokenizer is case-sensitive, and the casing of chat
("LOL", "SIGNED THE LEASE") says little about what a message means.

:class:`LocalEmbedder` is the reusable piece: the offline provider embeds with it, and any
provider without embeddings of its own can too.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from vivy.errors import LLMError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "LOCAL_EMBEDDING_DIMENSION",
    "LOCAL_EMBEDDING_MODEL",
    "Embedder",
    "LocalEmbedder",
    "token_ids",
]

#: The name stored with vectors the local model made (``meta.embedding_model``).
LOCAL_EMBEDDING_MODEL = "wordllama-l2-supercat-256"
#: The length of its vectors.
LOCAL_EMBEDDING_DIMENSION = 256

#: The model's files, inside the package.
_FOLDER = "local_model"
_WEIGHTS = "l2_supercat_256.safetensors"
_TOKENIZER = "l2_supercat_tokenizer.model"
_TENSOR = "embedding.weight"

#: Texts embedded per batch; a batch pads to its longest text.
_BATCH = 64
#: Characters of a text that are embedded: a mean over more words moves little, and the cap
#: bounds the work and memory of one pathological message.
_MAX_CHARS = 4000

#: The tokenizer's special tokens and their ids. Written in a text, each is that token, and
#: the text on either side of it is tokenised on its own (as the model's tokenizer did when
#: it was trained).
_SPECIAL = {"<unk>": 0, "<s>": 1, "</s>": 2}
_SPECIAL_SPLIT = re.compile("(" + "|".join(re.escape(token) for token in _SPECIAL) + ")")


def token_ids(tokenizer: Any, text: str) -> list[int]:
    """The token ids of ``text`` by the SentencePiece ``tokenizer``, special tokens written in
    it included."""
    ids: list[int] = []
    for part in _SPECIAL_SPLIT.split(text):
        if part in _SPECIAL:
            ids.append(_SPECIAL[part])
        elif part:
            ids.extend(tokenizer.encode(part))
    return ids


def _prepared(text: str) -> str:
    """``text`` as it is tokenised: cut to :data:`_MAX_CHARS`, lower-cased, stripped, and
    ``<empty>`` when nothing is left."""
    return text[:_MAX_CHARS].lower().strip() or "<empty>"


class Embedder(Protocol):
    """What a provider needs of an embedding model: its name, its vectors' length, and
    L2-normalised vectors of texts (synchronous CPU work)."""

    model: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, ``dimension`` long."""
        ...


class LocalEmbedder:
    """Embeds texts with the static model shipped in Vivy's wheel, offline.

    The model (about 33 MB of float32 weights in memory) is loaded on first use, once per
    embedder, under a lock; :meth:`embed` is synchronous CPU work and safe to call from any
    thread.
    """

    model = LOCAL_EMBEDDING_MODEL
    dimension = LOCAL_EMBEDDING_DIMENSION

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[Any, npt.NDArray[np.float32]] | None = None

    def _model(self) -> tuple[Any, npt.NDArray[np.float32]]:
        """The tokenizer and the token vectors, read from the package's files alone."""
        with self._lock:
            if self._loaded is None:
                import numpy as np
                from safetensors.numpy import load_file
                from sentencepiece import SentencePieceProcessor

                folder = resources.files("vivy") / "data" / _FOLDER
                try:
                    with resources.as_file(folder / _WEIGHTS) as weights:
                        vectors = load_file(str(weights))[_TENSOR]
                    with resources.as_file(folder / _TOKENIZER) as tokenizer:
                        processor = SentencePieceProcessor(model_file=str(tokenizer))
                except (OSError, KeyError, RuntimeError) as exc:
                    raise LLMError(
                        f"cannot load the offline embedding model from {folder} ({exc});"
                        " reinstall Vivy"
                    ) from exc
                self._loaded = (processor, np.ascontiguousarray(vectors, dtype=np.float32))
            return self._loaded

    def tokens(self, text: str) -> list[int]:
        """The ids of the tokens whose vectors :meth:`embed` averages for ``text``."""
        tokenizer, _ = self._model()
        return token_ids(tokenizer, _prepared(text))

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """L2-normalised embeddings of ``texts``, one row each; an empty text embeds as the
        placeholder ``<empty>``, so every row has a direction."""
        import numpy as np

        tokenizer, table = self._model()
        prepared = [_prepared(text) for text in texts]
        vectors = np.empty((len(prepared), self.dimension), dtype=np.float32)
        for start in range(0, len(prepared), _BATCH):
            ids = [token_ids(tokenizer, text) for text in prepared[start : start + _BATCH]]
            width = max(len(one) for one in ids)
            padded = np.zeros((len(ids), width), dtype=np.int32)
            mask = np.zeros((len(ids), width), dtype=np.float32)
            for row, one in enumerate(ids):
                padded[row, : len(one)] = one
                mask[row, : len(one)] = 1.0
            # The mean of the text's token vectors, computed as wordllama computes it (the
            # same float32 operations in the same order), so the vectors are its vectors.
            counts = np.maximum(mask.sum(axis=1, keepdims=True), 1.0).astype(np.float32)
            pooled = np.sum(table[padded] * mask[..., np.newaxis], axis=1, dtype=np.float32)
            pooled /= counts
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors[start : start + len(ids)] = pooled
        if not np.isfinite(vectors).all():
            raise LLMError("the offline embedding model returned unusable vectors")
        return vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised embeddings of ``texts`` as plain floats, one list each."""
        rows: list[list[float]] = self.embed_array(texts).tolist()
        return rows
