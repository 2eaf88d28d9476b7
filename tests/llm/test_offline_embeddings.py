"""The local embedding models: shipped in a wheel, loaded with no network, meaningful."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

import vivy
from vivy.errors import LLMError
from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, LocalEmbedder, shared_embedder
from vivy.llm.offline.embeddings import (
    WORD_MODEL_DIMENSION,
    WORD_VECTOR_DIMENSION,
    _WordTable,
)
from vivy.llm.offline.sentence_model import (
    _GROUP_COST,
    _PASS_TOKENS,
    SentenceModel,
    WordPiece,
    _groups,
    _softmax,
)

#: Every test here is about the shipped models themselves.
pytestmark = pytest.mark.sentence_model

#: The shipped word table's and sentence model's folders.
WORD_TABLE = Path(vivy.__file__).parent / "data" / "word_vectors"
SENTENCE_MODEL = Path(vivy.__file__).parent / "data" / "sentence_model"

#: Texts embedded by the wordllama package itself (``WordLlama.load("l2_supercat")`` with
#: the ``tokenizers`` library), before Vivy shipped the model's files in its own wheel.
REFERENCE = json.loads((Path(__file__).parent / "data" / "local_embeddings.json").read_text())
#: Texts embedded by sentence-transformers with PyTorch from all-MiniLM-L6-v2's float32
#: weights, with the token ids of the model's own tokenizer.
SENTENCE_REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "sentence_embeddings.json").read_text(encoding="utf-8")
)


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two unit vectors."""
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_normalised_and_sized() -> None:
    """Every vector is unit length with the model's dimension, even for empty text."""
    texts = ["Elden Ring builds", "", "the and of", "🐾🐾", "x" * 10_000]
    vectors = shared_embedder().embed(texts)
    assert len(vectors) == len(texts)
    for vector in vectors:
        assert len(vector) == LOCAL_EMBEDDING_DIMENSION
        assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-5)
    assert shared_embedder().embed([]) == []


def test_meaning_is_closer_than_words_alone_would_say() -> None:
    """A question and the message that answers it, sharing no word, are closer than the
    question and a message about something else."""
    question, answer, other = shared_embedder().embed(
        [
            "What animal did Sam adopt?",
            "we brought the puppy home yesterday, I have a dog now",
            "the new apartment has a huge kitchen window",
        ]
    )
    assert cosine(question, answer) > cosine(question, other) + 0.1


def test_casing_does_not_change_a_vector() -> None:
    """Chat casing carries no meaning: "SIGNED THE LEASE" embeds as "signed the lease" (to
    float rounding, which differs with the BLAS thread count and the batch)."""
    loud, quiet = shared_embedder().embed(["SIGNED THE LEASE", "signed the lease"])
    np.testing.assert_allclose(loud, quiet, rtol=0, atol=1e-6)


def test_vectors_are_the_reference_model_s() -> None:
    """The numpy encoder on the int8 weights gives, within a cosine of 0.99, the vectors
    sentence-transformers gave from the float32 model (chat, a note header, emoji and other
    scripts, an empty text, an over-long one), from the same token ids."""
    model = shared_embedder()
    texts = [case["text"] for case in SENTENCE_REFERENCE["cases"]]
    vectors = model.embed_array(texts)
    tokenizer = SentenceModel.load().tokenizer
    for case, vector in zip(SENTENCE_REFERENCE["cases"], vectors, strict=True):
        assert tokenizer.encode(case["text"]) == case["token_ids"], case["text"][:40]
        assert float(vector @ np.array(case["vector"])) > 0.99, case["text"][:40]


def test_a_text_embeds_alike_alone_and_in_a_padded_batch() -> None:
    """Padding is masked out: a short text batched with longer ones embeds as it does
    alone."""
    texts = ["hi", "the flight back was delayed nine hours, we slept at the gate", "ok"]
    batched = shared_embedder().embed_array(texts)
    for text, vector in zip(texts, batched, strict=True):
        assert np.allclose(shared_embedder().embed_array([text])[0], vector, atol=1e-5)


def test_attention_groups_are_cut_at_the_least_padding_cost() -> None:
    """Rows sorted by length are cut into attention groups at the least cost (a fixed cost
    per group plus its rows times its longest row's square): the cut equals the best of
    every possible cut, and a group holds at most 32 rows."""
    rng = random.Random(7)

    def cost(cuts: list[tuple[int, int]], lengths: list[int]) -> int:
        return sum(_GROUP_COST + (end - start) * lengths[end - 1] ** 2 for start, end in cuts)

    for _ in range(200):
        lengths = sorted(rng.randint(3, 256) for _ in range(rng.randint(1, 8)))
        cuts = _groups(lengths)
        assert [i for start, end in cuts for i in range(start, end)] == list(range(len(lengths)))
        every = []
        for mask in range(2 ** (len(lengths) - 1)):
            edges = [0, *[i + 1 for i in range(len(lengths) - 1) if mask >> i & 1], len(lengths)]
            every.append(cost(list(itertools.pairwise(edges)), lengths))
        assert cost(cuts, lengths) == min(every)
    assert _groups([]) == []
    assert max(end - start for start, end in _groups([10] * 70)) <= 32
    assert _groups([20, 24, 100, 250]) == [(0, 2), (2, 3), (3, 4)]


def test_texts_embed_alike_in_one_pass_and_in_several() -> None:
    """Texts past one pass's tokens are embedded in several passes, each text as in one."""
    texts = [f"message number {n} about the trip to {'Lisbon ' * (n % 40)}" for n in range(200)]
    model = shared_embedder()._sentence_model()
    ids = [model.tokenizer.encode(text) for text in texts]
    assert sum(map(len, ids)) > _PASS_TOKENS
    whole = shared_embedder().embed_array(texts)
    for start in range(0, len(texts), 40):
        part = model.encode(ids[start : start + 40])
        assert np.allclose(part, whole[start : start + 40], atol=1e-5)


def test_attention_softmax_is_exact_for_rows_far_below_the_largest_score() -> None:
    """The attention's softmax subtracts one constant for the whole batch; a row whose
    scores all lie far below it (where the exponentials would vanish) is redone with its
    own largest score, so every row gives each row's own softmax."""
    scores = np.array(
        [[[0.0, 1.0, 2.0], [-300.0, -299.0, -301.0]], [[-70.0, -69.0, -1e9], [5.0, 5.0, 5.0]]],
        dtype=np.float32,
    )
    expected = np.exp(scores - scores.max(axis=-1, keepdims=True))
    expected /= expected.sum(axis=-1, keepdims=True)
    weights = _softmax(scores.copy())
    assert np.isfinite(weights).all()
    assert np.allclose(weights, expected, rtol=1e-5, atol=1e-7)
    ordinary = scores[:1, :1]
    assert np.allclose(_softmax(ordinary.copy()), expected[:1, :1], rtol=1e-6)


def test_word_vectors_are_the_ones_wordllama_made() -> None:
    """The shipped wordllama files give, bit for bit, the vectors the wordllama package gave
    for the same texts (chat, a note header, emoji and other scripts, special tokens written
    in a message, an empty text, an over-long one)."""
    cases = REFERENCE["cases"]
    vectors = shared_embedder().word_model_array([case["text"] for case in cases])
    for case, vector in zip(cases, vectors.tolist(), strict=True):
        assert vector == case["vector"], case["text"][:40]


def test_tokens_are_the_ones_the_reference_tokenizer_made() -> None:
    """The SentencePiece tokenizer gives the ids the Hugging Face tokenizer gave, special
    tokens written in a text included."""
    for case in REFERENCE["cases"]:
        if case["token_ids"] is not None:
            assert shared_embedder().tokens(case["text"]) == case["token_ids"], case["text"][:40]


def test_ascii_texts_split_as_every_text_does() -> None:
    """An ASCII text takes a shortcut to its words (a regular expression); it splits as the
    general path splits the same text with a non-ASCII word after it, over every ASCII
    character: controls dropped, tab and line ends as spaces, punctuation words of its own."""
    rng = random.Random(26)
    characters = [chr(code) for code in range(128)]
    texts = ["Sam's new job: nights @ the hospital (since May 3rd)!", "a\x0bb\x1fc\td\re"]
    texts += ["".join(rng.choices(characters, k=rng.randint(0, 40))) for _ in range(3000)]
    for text in texts:
        assert WordPiece.words(text + " é") == [*WordPiece.words(text), "e"], repr(text)
    assert WordPiece.words("a\x0bb\x1fc\td\re") == ["abc", "d", "e"]


def assert_notice_digests(folder: Path, names: list[str]) -> None:
    """The NOTICE in ``folder`` records a SHA-256 digest for exactly ``names``, and each
    file there has the digest recorded."""
    notice = (folder / "NOTICE").read_text(encoding="utf-8")
    recorded = dict(
        (name, digest) for digest, name in re.findall(r"SHA-256 ([0-9a-f]{64})  (\S+)", notice)
    )
    assert sorted(recorded) == names
    for name, digest in recorded.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


def test_shipped_sentence_model_is_the_one_its_notice_names() -> None:
    """The sentence model's files have the digests their NOTICE records, under the model's
    Apache-2.0 licence."""
    assert_notice_digests(SENTENCE_MODEL, ["all_minilm_l6_v2_int8.safetensors", "vocab.txt"])
    licence = (SENTENCE_MODEL / "LICENSE").read_text(encoding="utf-8")
    assert licence.split()[:4] == ["Apache", "License", "Version", "2.0,"]


def test_each_embedder_loads_the_same_model() -> None:
    """Two embedders give the very same vectors (one model, loaded twice)."""
    text = ["what does Maya do for a living?"]
    assert LocalEmbedder().embed(text) == shared_embedder().embed(text)


def test_shipped_word_table_is_the_one_its_notice_names() -> None:
    """The word table's files have the digests their NOTICE records, one int8 row of 256
    dimensions per word, and distinct lower-case words as the word match splits text."""
    assert_notice_digests(WORD_TABLE, ["minilm_words.safetensors", "words.txt"])
    words = (WORD_TABLE / "words.txt").read_text(encoding="utf-8").split("\n")[:-1]
    stored = load_file(str(WORD_TABLE / "minilm_words.safetensors"))["vectors"]
    assert stored.dtype == np.int8
    assert stored.shape == (len(words), WORD_VECTOR_DIMENSION - WORD_MODEL_DIMENSION)
    assert len(set(words)) == len(words) == 50_000
    assert all(re.fullmatch(r"[a-z0-9]+", word) for word in words)
    licence = (WORD_TABLE / "LICENSE").read_text(encoding="utf-8")
    assert licence.split()[:4] == ["Apache", "License", "Version", "2.0,"]


def test_related_words_are_closer_with_the_word_table() -> None:
    """Pairs of words that mean the same are closer by the word vectors than by wordllama's
    vectors of the words alone, and an unrelated pair stays far apart."""
    pairs = [("holiday", "vacation"), ("sofa", "couch"), ("rubbish", "trash")]
    words = sorted({word for pair in pairs for word in pair} | {"doctor", "banana"})
    alone = dict(zip(words, shared_embedder().word_model_array(words), strict=True))
    joined = dict(zip(words, shared_embedder().word_array(words), strict=True))
    for first, second in pairs:
        assert joined[first] @ joined[second] > alone[first] @ alone[second] + 0.1
        assert joined[first] @ joined[second] > joined["doctor"] @ joined["banana"] + 0.3


def test_a_word_outside_the_table_keeps_its_local_vector() -> None:
    """A word the table lacks is its wordllama vector followed by zeros; a word of the
    table starts with its wordllama vector scaled by the root of one half, and both are
    unit vectors."""
    words = ["zxqvvy", "doctor"]
    alone = shared_embedder().word_model_array(words)
    joined = shared_embedder().word_array(words)
    assert joined.shape == (2, WORD_VECTOR_DIMENSION)
    assert np.array_equal(joined[0, :WORD_MODEL_DIMENSION], alone[0])
    assert not joined[0, WORD_MODEL_DIMENSION:].any()
    assert np.allclose(joined[1, :WORD_MODEL_DIMENSION], alone[1] * math.sqrt(0.5))
    assert joined[1, WORD_MODEL_DIMENSION:].any()
    assert np.allclose(np.linalg.norm(joined, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("shipped", "tensors", "lines", "load", "name", "loaded", "mismatch"),
    [
        (
            WORD_TABLE,
            "minilm_words.safetensors",
            "words.txt",
            _WordTable.load,
            "the word vectors",
            lambda table: len(table.index) == 50_000,
            "do not match their 49999 words",
        ),
        (
            SENTENCE_MODEL,
            "all_minilm_l6_v2_int8.safetensors",
            "vocab.txt",
            SentenceModel.load,
            "the offline sentence model",
            lambda model: model.encode([[101, 102]]).shape == (1, LOCAL_EMBEDDING_DIMENSION),
            "does not match its vocabulary",
        ),
    ],
    ids=["word table", "sentence model"],
)
def test_broken_model_files_are_a_clear_error(
    tmp_path: Path,
    shipped: Path,
    tensors: str,
    lines: str,
    load: Callable[[Path], object],
    name: str,
    loaded: Callable[[Any], bool],
    mismatch: str,
) -> None:
    """Model files that are missing, unreadable or do not match their word list raise a
    one-line error that says to reinstall, never a half-loaded model; intact copies load."""
    folder = tmp_path / shipped.name
    with pytest.raises(LLMError, match=rf"cannot load {name} .*reinstall Vivy"):
        load(folder)
    folder.mkdir()
    text = (shipped / lines).read_text(encoding="utf-8")
    (folder / lines).write_text(text, encoding="utf-8")
    (folder / tensors).write_bytes(b"not a tensor file")
    with pytest.raises(LLMError, match=f"cannot load {name}"):
        load(folder)
    (folder / tensors).write_bytes((shipped / tensors).read_bytes())
    assert loaded(load(folder))
    (folder / lines).write_text(text.split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(LLMError, match=mismatch):
        load(folder)


BLOCKED = """
import socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access attempted")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
for hub in ("huggingface_hub", "tokenizers", "wordllama"):
    sys.modules[hub] = None
from vivy.llm.offline import LocalEmbedder
print(repr(LocalEmbedder().embed(["Elden Ring"])[0][:4]))
print(repr(LocalEmbedder().word_array(["apartment"])[0][-4:].tolist()))
"""


def test_model_loads_without_network_or_cache(tmp_path: Path) -> None:
    """In a fresh interpreter whose sockets refuse to connect, whose home and cache folders
    are empty and where no model-hub client can be imported, the model and the word table
    load from Vivy's own package; it writes nothing there, and gives the vectors this
    process computes."""
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HF_HOME": str(tmp_path / "hf"),
        "PYTHONHASHSEED": "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2",
    }
    run = subprocess.run(
        [sys.executable, "-c", BLOCKED], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.split("\n")[:2] == [
        repr(shared_embedder().embed(["Elden Ring"])[0][:4]),
        repr(shared_embedder().word_array(["apartment"])[0][-4:].tolist()),
    ]
    assert list(tmp_path.iterdir()) == []
