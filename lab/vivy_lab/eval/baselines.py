"""The plain retrievers the long-conversation eval judges the shipped one against.

Each ranks a guild's sessions for a question from the raw conversation text alone, no note:

* ``bm25_raw``: textbook Okapi BM25 (k1 1.2, b 0.75) over windows of the raw chat (the
  evidence windows' shape), a session scored by its best window;
* ``bm25_session``: the same BM25 over each whole conversation as one document;
* ``dense``: the cosine similarity of the question's embedding to each raw window's, with
  the same embedding model as the shipped retriever, a session scored by its best window;
* ``rrf``: reciprocal rank fusion (k 60) of ``bm25_raw`` and ``dense``, the usual hybrid of
  keywords and one embedding.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vivy.llm.port import LLM, EmbeddingTask
from vivy.memory.evidence import WINDOW_SIZE, windows_of
from vivy.text.terms import STOPWORDS
from vivy_lab.eval.longconv_data import LongGuild

__all__ = [
    "RRF_K",
    "Bm25Index",
    "DenseIndex",
    "bm25_index",
    "bm25_sessions",
    "dense_index",
    "dense_sessions",
    "raw_windows",
    "reciprocal_rank_fusion",
]

_TOKEN = re.compile(r"[^\W_]+")
#: Reciprocal rank fusion's constant, as in Cormack, Clarke and Büttcher (2009).
RRF_K = 60


def raw_windows(guild: LongGuild, *, whole: bool = False) -> list[tuple[str, str]]:
    """``(session key, text)`` of a guild's raw chat: evidence-shaped windows, or whole
    sessions."""
    names = {user: name for user, (name, _) in guild.members.items()}
    found: list[tuple[str, str]] = []
    for session in guild.sessions:
        lines = [(mid, names[author], text) for mid, author, _, text in session.messages]
        size = len(lines) if whole else WINDOW_SIZE
        for window in windows_of(lines, size=max(1, size), stride=max(1, size // 2)):
            found.append((session.key, window.text))
    return found


def _bm25_tokens(text: str) -> list[str]:
    """Lower-case words without stop words, as a textbook BM25 indexes them (no stemming)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class Bm25Index:
    """Okapi BM25 over the raw windows of one guild's sessions."""

    windows: tuple[tuple[str, Counter[str], int], ...]
    document_frequency: Mapping[str, int]
    average_length: float


def bm25_index(guild: LongGuild, *, whole: bool = False) -> Bm25Index:
    """The BM25 index of a guild's raw text: evidence-shaped windows, or whole sessions."""
    windows: list[tuple[str, Counter[str], int]] = []
    for key, text in raw_windows(guild, whole=whole):
        tokens = _bm25_tokens(text)
        windows.append((key, Counter(tokens), len(tokens)))
    frequency: Counter[str] = Counter()
    for _, counts, _ in windows:
        frequency.update(counts.keys())
    average = sum(length for _, _, length in windows) / len(windows) if windows else 0.0
    return Bm25Index(tuple(windows), frequency, average)


def bm25_sessions(
    index: Bm25Index, question: str, *, k1: float = 1.2, b: float = 0.75
) -> list[str]:
    """Sessions by their best window's BM25 score for ``question``, best first."""
    terms = list(dict.fromkeys(_bm25_tokens(question)))
    total = len(index.windows)
    best: dict[str, float] = {}
    for session, counts, length in index.windows:
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if not tf:
                continue
            n = index.document_frequency[term]
            idf = math.log(1.0 + (total - n + 0.5) / (n + 0.5))
            norm = tf + k1 * (1 - b + b * length / (index.average_length or 1.0))
            score += idf * tf * (k1 + 1) / norm
        if score > 0 and score > best.get(session, 0.0):
            best[session] = score
    return sorted(best, key=lambda session: (-best[session], session))


@dataclass(frozen=True, slots=True)
class DenseIndex:
    """The embeddings of one guild's raw windows (one row each), with their sessions' keys."""

    keys: tuple[str, ...]
    vectors: npt.NDArray[np.float64]


async def dense_index(llm: LLM, guild: LongGuild) -> DenseIndex:
    """Embed a guild's raw windows (as documents) with ``llm``."""
    windows = raw_windows(guild)
    vectors = await llm.embed([text for _, text in windows], EmbeddingTask.DOCUMENT)
    return DenseIndex(tuple(key for key, _ in windows), np.asarray(vectors, dtype=np.float64))


def dense_sessions(index: DenseIndex, vector: Sequence[float]) -> list[str]:
    """Sessions by their best window's cosine similarity to ``vector``, best first."""
    similarities = index.vectors @ np.asarray(vector, dtype=np.float64)
    best: dict[str, float] = {}
    for key, similarity in zip(index.keys, similarities.tolist(), strict=True):
        if similarity > best.get(key, -math.inf):
            best[key] = similarity
    return sorted(best, key=lambda key: (-best[key], key))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> list[str]:
    """Items by the sum over ``rankings`` of ``1 / (k + rank)`` (rank from 1), best first."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda item: (-score[item], item))
