"""Which of a found note's evidence lines a reply quotes: the ones that answer the question.

A window's embedding averages four lines, so the line that answers ("I play the violin!") is
diluted by its neighbours, and a question in other words ("which instrument did Maya
learn?") shares no keyword with it. Lines are therefore scored by *late interaction* over
static word vectors: each content word of the question is matched to the most similar word
of the line (the cosine of their word vectors; 1 for a word the line contains, as the
porter-stemmed evidence index would match it), and a line scores the idf-weighted mean of
those best matches. A question word no note holds weighs as much as the rarest one that
does: words of other phrasings are the ones this is for.

Word vectors come from the local embedding model (:class:`WordVectors`, a word embedded on
its own is the mean of its token vectors), whatever provider embeds the notes: they only
choose lines among the few notes already chosen, so they never change which notes are found.
Without them (the model cannot load) lines are scored by the question words they contain.

Scoring is pure given the vectors; :class:`WordVectors` keeps the vectors of recent words so
that a search embeds only the words it has not seen.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from vivy.errors import LLMError
from vivy.memory.evidence import EvidenceLine
from vivy.memory.guards import looks_like_instruction
from vivy.retrieval.search import STOPWORDS, strip_markup
from vivy.storage.search_types import Candidate, TermMatcher

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "WordVectors",
    "best_lines",
    "content_words",
    "line_scores",
    "local_word_vectors",
    "word_matches",
]

#: Word tokens as the keyword indexes see them (letters and digits).
_TOKEN = re.compile(r"[^\W_]+")

Embed = Callable[[Sequence[str]], "npt.NDArray[np.float32]"]


def content_words(text: str) -> list[str]:
    """The distinct words of ``text`` that can carry meaning, lower-cased, in order: markup,
    stop words and single letters dropped (digits kept)."""
    if "<" in text or "http" in text:
        text = strip_markup(text)
    return [
        word
        for word in dict.fromkeys(_TOKEN.findall(text.lower()))
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit())
    ]


class WordVectors:
    """Unit vectors of single words from ``embed`` (texts to unit rows), the most recently
    used ``size`` kept; safe to share between threads."""

    def __init__(self, embed: Embed, *, size: int = 10_000) -> None:
        self._embed = embed
        self._size = size
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, words: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit row per word of ``words``; the words not cached are embedded in one call.

        Raises :class:`~vivy.errors.LLMError` when the model cannot embed.
        """
        with self._lock:
            cache = self._cache
            missing = [word for word in dict.fromkeys(words) if word not in cache]
            if missing:
                for word, row in zip(missing, self._embed(missing), strict=True):
                    cache[word] = row
            rows = []
            for word in words:
                rows.append(cache[word])
                cache.move_to_end(word)
            while len(cache) > self._size:
                cache.popitem(last=False)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(rows)


_LOCAL: list[WordVectors] = []
_LOCAL_LOCK = threading.Lock()


def local_word_vectors() -> WordVectors:
    """The process's word vectors from the local embedding model (loaded on first use, and
    shared with the offline provider's embeddings)."""
    with _LOCAL_LOCK:
        if not _LOCAL:
            from vivy.llm.offline.provider import shared_embedder

            _LOCAL.append(WordVectors(shared_embedder().embed_array))
        return _LOCAL[0]


def line_scores(
    texts: Sequence[str],
    terms: Sequence[str],
    weights: Mapping[str, float],
    vectors: WordVectors | None,
) -> list[float]:
    """How well each of ``texts`` answers a question of ``terms``: the mean over the terms,
    weighted by their idf (``weights``; a term without one weighs as the heaviest), of the
    term's best match among the text's words (see the module docstring). With ``vectors``
    None, a term matches only a word it starts (by its stem, as :class:`TermMatcher` does). A
    text without a content word, or a question without terms, scores 0."""
    words = [content_words(text) for text in texts]
    with_words = [index for index, found in enumerate(words) if found]
    if not terms or not with_words:
        return [0.0] * len(texts)
    heaviest = max(weights.values(), default=1.0)
    weight = np.array([weights.get(term, heaviest) for term in terms], dtype=np.float32)
    unique = list(dict.fromkeys(word for found in words for word in found))
    if vectors is not None:
        similarity = vectors.of(list(terms)) @ vectors.of(unique).T
    else:
        similarity = np.zeros((len(terms), len(unique)), dtype=np.float32)
    row = {term: index for index, term in enumerate(terms)}
    alphabetical = sorted(unique)
    position = {word: index for index, word in enumerate(unique)}
    for stem, stemmed in TermMatcher.of(terms).terms_of.items():
        columns = []
        at = bisect.bisect_left(alphabetical, stem)
        while at < len(alphabetical) and alphabetical[at].startswith(stem):
            columns.append(position[alphabetical[at]])
            at += 1
        for term in stemmed:
            similarity[row[term], columns] = 1.0
    flat = [position[word] for index in with_words for word in words[index]]
    starts = np.cumsum([0] + [len(words[index]) for index in with_words[:-1]])
    best = np.zeros((len(terms), len(texts)), dtype=np.float32)
    best[:, with_words] = np.maximum.reduceat(similarity[:, flat], starts, axis=1)
    scores: npt.NDArray[np.float32] = weight @ best / float(weight.sum())
    return [float(score) for score in scores]


def word_matches(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    weights: Mapping[str, float],
    vectors: WordVectors | None,
) -> dict[int, float]:
    """How well each candidate note's own text answers a question of ``terms``, by note id:
    :func:`line_scores` of the notes' texts, which ranking weighs as a feature. Falls back to
    matching words alone when the word vectors cannot be made."""
    texts = [candidate.text for candidate in candidates]
    try:
        scores = line_scores(texts, terms, weights, vectors)
    except LLMError:
        scores = line_scores(texts, terms, weights, None)
    return {c.note_id: score for c, score in zip(candidates, scores, strict=True)}


def best_lines(
    notes: Sequence[Sequence[EvidenceLine]],
    terms: Sequence[str],
    weights: Mapping[str, float],
    vectors: WordVectors | None,
    limit: int,
) -> list[tuple[EvidenceLine, ...]]:
    """For each note's ``lines`` (of ``notes``), up to ``limit`` that best answer the
    question, best first (:func:`line_scores`, all notes' lines scored at once; ties to the
    earlier line). A line that reads as an instruction to the bot is never chosen; lines are
    checked only until ``limit`` are, as the check is the costliest step of choosing.

    Falls back to matching words alone when the word vectors cannot be made.
    """
    unique = [list({line.message_id: line for line in lines}.values()) for lines in notes]
    texts = [line.text for lines in unique for line in lines]
    try:
        scores = line_scores(texts, terms, weights, vectors)
    except LLMError:
        scores = line_scores(texts, terms, weights, None)
    chosen: list[tuple[EvidenceLine, ...]] = []
    offset = 0
    for lines in unique:
        own = scores[offset : offset + len(lines)]
        offset += len(lines)
        order = sorted(range(len(lines)), key=lambda index: (-own[index], index))
        picked: list[EvidenceLine] = []
        for index in order:
            if len(picked) == limit:
                break
            if not looks_like_instruction(lines[index].text):
                picked.append(lines[index])  # seed 003: never quote orders to the bot
        chosen.append(tuple(picked))
    return chosen
