"""The local embedding model: shipped in a wheel, loaded with no network, meaningful."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, LocalEmbedder, shared_embedder

#: Texts embedded by the wordllama package itself (``WordLlama.load("l2_supercat")`` with
#: the ``tokenizers`` library), before Vivy shipped the model's files in its own wheel.
REFERENCE = json.loads((Path(__file__).parent / "data" / "local_embeddings.json").read_text())


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
    """Chat casing carries no meaning: "SIGNED THE LEASE" embeds as "signed the lease"."""
    loud, quiet = shared_embedder().embed(["SIGNED THE LEASE", "signed the lease"])
    assert loud == quiet


def test_vectors_are_the_ones_wordllama_made() -> None:
    """The shipped files give, bit for bit, the vectors the wordllama package gave for the
    same texts (chat, a note header, emoji and other scripts, special tokens written in a
    message, an empty text, an over-long one)."""
    cases = REFERENCE["cases"]
    vectors = shared_embedder().embed([case["text"] for case in cases])
    for case, vector in zip(cases, vectors, strict=True):
        assert vector == case["vector"], case["text"][:40]


def test_tokens_are_the_ones_the_reference_tokenizer_made() -> None:
    """The SentencePiece tokenizer gives the ids the Hugging Face tokenizer gave, special
    tokens written in a text included."""
    for case in REFERENCE["cases"]:
        if case["token_ids"] is not None:
            assert shared_embedder().tokens(case["text"]) == case["token_ids"], case["text"][:40]


def test_each_embedder_loads_the_same_model() -> None:
    """Two embedders give the very same vectors (one model, loaded twice)."""
    text = ["what does Maya do for a living?"]
    assert LocalEmbedder().embed(text) == shared_embedder().embed(text)


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
"""


def test_model_loads_without_network_or_cache(tmp_path: Path) -> None:
    """In a fresh interpreter whose sockets refuse to connect, whose home and cache folders
    are empty and where no model-hub client can be imported, the model loads from Vivy's
    own package and embeds; it writes nothing there, and gives the vector this process
    computes."""
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
    assert run.stdout.strip() == repr(shared_embedder().embed(["Elden Ring"])[0][:4])
    assert list(tmp_path.iterdir()) == []
