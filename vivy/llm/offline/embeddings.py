"""The offline embedding: a sentence-embedding model shipped inside Vivy's own wheel.

Texts are embedded by all-MiniLM-L6-v2, a six-layer transformer run with numpy
(:mod:`.sentence_model`; its int8 weights and vocabulary lie in ``vivy/data/sentence_model/``,
made by ``scripts/build_sentence_model.py``): it reads a text's words in context, so a
question finds the message that answers it in other words. It needs no network and no
runtime beyond numpy.

The word match that ranks notes and chooses their quoted lines compares single words, which
a sentence model embeds poorly and slowly one at a time. Its word vectors join two static
tables: `wordllama <https://github.com/dleemiller/WordLlama>`_'s ``l2_supercat`` (one
256-dimension vector per token of Llama 2's vocabulary; a word is the mean of its tokens'
vectors, lower-cased first), shipped in ``vivy/data/local_model/`` by
``scripts/build_local_model.py`` and read with ``safetensors`` and ``sentencepiece``, and a
table distilled from all-MiniLM-L6-v2 for 50,000 frequent words (``vivy/data/word_vectors/``,
made by ``scripts/build_word_vectors.py``): :meth:`LocalEmbedder.word_array` joins a word's
two vectors, so that the cosine of two words of the table is the mean of the two tables'
cosines, and a word outside it keeps its wordllama vector alone.

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
from vivy.llm.offline.sentence_model import SENTENCE_DIMENSION, SentenceModel, packaged_files

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    import numpy as np
    import numpy.typing as npt

__all__ = [
    "LOCAL_EMBEDDING_DIMENSION",
    "LOCAL_EMBEDDING_MODEL",
    "WORD_MODEL_DIMENSION",
    "WORD_VECTOR_DIMENSION",
    "Embedder",
    "LocalEmbedder",
    "token_ids",
]

#: The name stored with vectors the local model made (``meta.embedding_model``).
LOCAL_EMBEDDING_MODEL = "all-minilm-l6-v2-int8"
#: The length of its vectors.
LOCAL_EMBEDDING_DIMENSION = SENTENCE_DIMENSION

#: The word model's files (wordllama), inside the package, and its vectors' length.
_FOLDER = "local_model"
_WEIGHTS = "l2_supercat_256.safetensors"
_TOKENIZER = "l2_supercat_tokenizer.model"
_TENSOR = "embedding.weight"
#: The length of wordllama's vectors.
WORD_MODEL_DIMENSION = 256

#: The distilled word table's files, inside the package.
_WORD_FOLDER = "word_vectors"
_WORD_TABLE = "minilm_words.safetensors"
_WORD_LIST = "words.txt"
#: The length of the table's rows.
_TABLE_DIMENSION = 256
#: The length of :meth:`LocalEmbedder.word_array`'s rows: a wordllama vector, then a table
#: row.
WORD_VECTOR_DIMENSION = WORD_MODEL_DIMENSION + _TABLE_DIMENSION

#: Texts whose word vectors are averaged in one batch at most; a batch pads to its longest.
_BATCH = 32
#: Characters of a text that are tokenised: the sentence model reads at most 256 tokens, and
#: the cap bounds the tokenizer's work on one pathological message.
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
    """Embeds texts with the sentence model shipped in Vivy's wheel, and single words with
    its static word tables, offline.

    Each model is loaded on first use, once per embedder, under a lock (the sentence model
    keeps its int8 weights as stored); the methods are synchronous CPU work and safe to call
    from any thread.
    """

    model = LOCAL_EMBEDDING_MODEL
    dimension = LOCAL_EMBEDDING_DIMENSION

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sentences: SentenceModel | None = None
        self._loaded: tuple[Any, npt.NDArray[np.float32]] | None = None
        self._words: _WordTable | None = None

    def _sentence_model(self) -> SentenceModel:
        """The sentence model, read from the package's files alone."""
        with self._lock:
            if self._sentences is None:
                self._sentences = SentenceModel.load()
            return self._sentences

    def _word_model(self) -> tuple[Any, npt.NDArray[np.float32]]:
        """wordllama's tokenizer and token vectors, read from the package's files alone."""
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
                        f"cannot load the offline word model from {folder} ({exc}); reinstall Vivy"
                    ) from exc
                self._loaded = (processor, np.ascontiguousarray(vectors, dtype=np.float32))
            return self._loaded

    def _word_table(self) -> _WordTable:
        """The distilled word table, read from the package's files alone."""
        with self._lock:
            if self._words is None:
                self._words = _WordTable.load()
            return self._words

    def word_array(self, words: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors of single lower-case ``words`` for the word match,
        :data:`WORD_VECTOR_DIMENSION` long: a word of the distilled table is its wordllama
        vector and its table row, each scaled by the square root of one half, so that the
        cosine of two such words is the mean of the two cosines; any other word is its
        wordllama vector followed by zeros (scaled by that root against a word of the
        table)."""
        import numpy as np

        local = self.word_model_array(words)
        table = self._word_table()
        vectors = np.zeros((len(words), WORD_VECTOR_DIMENSION), dtype=np.float32)
        vectors[:, :WORD_MODEL_DIMENSION] = local
        found = [(row, table.index[word]) for row, word in enumerate(words) if word in table.index]
        if found:
            rows, entries = (np.array(column, dtype=np.intp) for column in zip(*found, strict=True))
            half = np.float32(np.sqrt(0.5))
            vectors[rows, :WORD_MODEL_DIMENSION] *= half
            vectors[rows, WORD_MODEL_DIMENSION:] = table.rows(entries) * half
        return vectors

    def tokens(self, text: str) -> list[int]:
        """The ids of the wordllama tokens whose vectors :meth:`word_model_array` averages
        for ``text``."""
        tokenizer, _ = self._word_model()
        return token_ids(tokenizer, _prepared(text))

    def word_model_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """wordllama's L2-normalised embeddings of ``texts`` (the mean of their token
        vectors), one row each; an empty text embeds as the placeholder ``<empty>``."""
        import numpy as np

        tokenizer, table = self._word_model()
        prepared = [_prepared(text) for text in texts]
        vectors = np.empty((len(prepared), WORD_MODEL_DIMENSION), dtype=np.float32)
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
        return vectors

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The sentence model's L2-normalised embeddings of ``texts``, one row each.

        Texts are cut to :data:`_MAX_CHARS`; an empty text embeds as its [CLS] and [SEP]
        tokens alone.
        """
        import numpy as np

        model = self._sentence_model()
        vectors = model.encode([model.tokenizer.encode(text[:_MAX_CHARS]) for text in texts])
        if not np.isfinite(vectors).all():
            raise LLMError("the offline embedding model returned unusable vectors")
        return vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised embeddings of ``texts`` as plain floats, one list each."""
        rows: list[list[float]] = self.embed_array(texts).tolist()
        return rows


class _WordTable:
    """The distilled word table: its words' row numbers and its int8 rows, kept as stored
    (a quarter of float32's memory) and normalised as they are looked up."""

    def __init__(self, index: dict[str, int], stored: npt.NDArray[np.int8]) -> None:
        import numpy as np

        self.index = index
        self._stored = stored
        self._norms = np.linalg.norm(stored.astype(np.float32), axis=1)

    @classmethod
    def load(cls, folder: Traversable | None = None) -> _WordTable:
        """The table read from ``folder`` (the package's ``vivy/data/word_vectors/``).

        Raises :class:`~vivy.errors.LLMError` when its files are missing or do not agree.
        """
        if folder is None:
            folder = resources.files("vivy") / "data" / _WORD_FOLDER
        tensors, words = packaged_files(folder, _WORD_TABLE, _WORD_LIST, "the word vectors")
        stored = tensors.get("vectors")
        if stored is None:
            raise LLMError(f"the word vectors in {folder} have no table; reinstall Vivy")
        if stored.shape != (len(words), _TABLE_DIMENSION) or len(set(words)) != len(words):
            raise LLMError(
                f"the word vectors in {folder} do not match their {len(words)} words"
                f" (shape {stored.shape}); reinstall Vivy"
            )
        return cls({word: number for number, word in enumerate(words)}, stored)

    def rows(self, entries: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
        """The unit rows of the table's ``entries``."""
        import numpy as np

        rows: npt.NDArray[np.float32] = self._stored[entries].astype(np.float32)
        rows /= self._norms[entries, np.newaxis]
        return rows
