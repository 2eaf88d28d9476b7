"""Which of a found note's evidence lines a reply quotes: the ones that answer the question.

A window's embedding averages four lines, so the line that answers ("I play the violin!") is
diluted by its neighbours, and a question in other words ("which instrument did Maya
learn?") shares no keyword with it. Lines are therefore scored by *late interaction* over
static word vectors: each content word of the question is matched to the most similar word
of the line (the cosine of their word vectors; 1 for a word the line contains, as the
porter-stemmed evidence index would match it), and a line scores the idf-weighted mean of
those best matches. A question word no note holds weighs as much as the rarest one that
does: words of other phrasings are the ones this is for.

Word vectors come from the local embedding model and a word table distilled from a sentence
model (:func:`local_word_vectors`), whatever provider embeds the notes: they choose
lines among the few notes already chosen, and score the candidate notes' own texts the same
way for ranking (:func:`word_matches`). Without them (the model cannot load) texts are
scored by the question words they contain.

Choosing a note's quoted lines weighs two things the words cannot show: who said a line (a
question that names Sam is answered by what Sam said, and Sam's lines rarely hold Sam's name)
and whether it says anything (so that, where the question's words match nothing well, a line
with content comes before "ok, night").

Scoring is pure given the vectors; :class:`WordVectors` keeps the vectors of the words seen
and the words of recent texts, so that a search splits and embeds only what it has not seen.
"""

from __future__ import annotations

import bisect
import string
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from vivy.errors import LLMError
from vivy.memory.evidence import EvidenceLine, ScoredLine
from vivy.memory.guards import looks_like_instruction
from vivy.storage.search_types import Candidate
from vivy.text.markup import strip_markup
from vivy.text.terms import PIECE, STOPWORDS, TermMatcher

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "ANSWER_SHARE",
    "NAMED_AUTHOR",
    "SUBSTANCE",
    "SUBSTANTIAL_WORDS",
    "WordVectors",
    "best_lines",
    "content_words",
    "line_scores",
    "local_word_vectors",
    "word_matches",
]

#: Word tokens as the keyword indexes see them (letters and digits).
#: The bytes of lower-cased ASCII words: ``PIECE``'s characters in such text.
_WORD_CHARS = (string.ascii_lowercase + string.digits).encode()
#: Each byte but a word's as a space: lower-cased ASCII text split on whitespace after this
#: translation gives ``PIECE``'s tokens, quicker than a regex.
_ASCII_SPACES = bytes(byte if byte in _WORD_CHARS else ord(" ") for byte in range(256))

#: New words put in their sorted place one by one; more are sorted in at once.
_INSERTED = 64

#: An ASCII word of at most this many letters and digits is looked up by its bytes (zero-padded
#: to this length, read as two 64-bit numbers); a longer one by its text.
_KEY_BYTES = 16
#: Whether each byte is a word's (a lower-case ASCII letter or digit): 1, or 0.
_WORD_BYTES = np.zeros(256, dtype=np.uint8)
_WORD_BYTES[list(_WORD_CHARS)] = 1
#: Slots of the table that finds a short ASCII word's number by its bytes, as a power of two
#: (a few times the words a vocabulary holds, so that few words share a slot).
_SLOT_BITS = 16
#: The same for a vocabulary made for one search (matching words without vectors).
_SEARCH_SLOT_BITS = 10
#: An odd constant of Fibonacci hashing: a word's slot is the top bits of its bytes times it.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)
#: The code of a word not looked up yet (real codes are a number, or -1 for no meaning).
_UNSEEN = -2

Embed = Callable[[Sequence[str]], "npt.NDArray[np.float32]"]


def _tokens(text: str) -> list[str]:
    """The words of ``text``, lower-cased, in order and with repeats, markup dropped."""
    if "<" in text or "http" in text:
        text = strip_markup(text)
    lowered = text.lower()
    if lowered.isascii():
        return lowered.encode().translate(_ASCII_SPACES).decode().split()
    return PIECE.findall(lowered)


def _carries_meaning(word: str) -> bool:
    """Whether ``word`` can carry meaning: not a stop word nor a single letter."""
    return word not in STOPWORDS and (len(word) > 1 or word.isdigit())


def content_words(text: str) -> list[str]:
    """The distinct words of ``text`` that can carry meaning, lower-cased, in order: markup,
    stop words and single letters dropped (digits kept)."""
    return [word for word in dict.fromkeys(_tokens(text)) if _carries_meaning(word)]


class _Vocabulary:
    """Words numbered as first seen (kept sorted too, to find the words a stem starts), the
    content words of up to ``texts`` recent texts by number, so that a text is split once,
    and a table of the short ASCII words seen by their bytes, so that the texts a search has
    not seen are split and looked up all at once by numpy rather than word by word as
    strings. Not thread-safe: :class:`WordVectors` locks around it.

    ``slot_bits`` sizes the table (2 to that power slots, 24 bytes each): a vocabulary made for
    one search needs only a small one."""

    def __init__(self, texts: int, slot_bits: int = _SLOT_BITS) -> None:
        self.words: list[str] = []
        self._number: dict[str, int] = {}
        self._sorted: list[str] = []
        self._unsorted: list[str] = []
        self._texts: dict[str, npt.NDArray[np.intp]] = {}
        self._text_size = texts
        # Every word of a text seen: its number, or -1 when it carries no meaning.
        self._code: dict[str, int] = {}
        # The same for short ASCII words, by their bytes: a word's two 64-bit halves and its
        # code in the word's slot, each slot holding the first word seen of those that share
        # it; a free slot's halves are zero, as no word's are.
        self._slot_bits = slot_bits
        self._slot_low = np.zeros(1 << slot_bits, dtype=np.uint64)
        self._slot_high = np.zeros(1 << slot_bits, dtype=np.uint64)
        self._slot_code = np.full(1 << slot_bits, _UNSEEN, dtype=np.intp)

    def numbers(self, words: Sequence[str]) -> list[int]:
        """The number of each of ``words``, new words numbered after the known ones."""
        number = self._number
        for word in words:
            if word not in number:
                number[word] = len(self.words)
                self.words.append(word)
                self._unsorted.append(word)
        return [number[word] for word in words]

    def of_texts(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """The numbers of the content words of ``texts``, text after text and each in order,
        a word as often as it occurs, and how many each text holds (the kept texts are
        forgotten all at once when there are too many)."""
        kept = self._texts
        found = [kept.get(text) for text in texts]
        unseen = [index for index, codes in enumerate(found) if codes is None]
        if unseen:
            if len(kept) + len(unseen) > self._text_size:
                kept.clear()
            codes, counts = self._split([texts[index] for index in unseen])
            ends = np.cumsum(counts).tolist()
            for index, start, end in zip(unseen, [0, *ends[:-1]], ends, strict=True):
                found[index] = kept[texts[index]] = codes[start:end]
            if len(unseen) == len(texts):  # all new: the split is the answer
                return codes, counts
        flat = [codes for codes in found if codes is not None]
        counts = np.array([len(codes) for codes in flat], dtype=np.intp)
        return (np.concatenate(flat) if flat else np.zeros(0, dtype=np.intp)), counts

    def _split(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """:meth:`of_texts` of texts not seen before. The ASCII ones (nearly all) are split
        and looked up together, by numpy over their bytes: a search's new texts hold thousands
        of words, and making each a Python string looked up in a dictionary costs about twice
        as much. Other texts are split by ``PIECE``, as :func:`_tokens` splits them."""
        lowered: list[str] = []
        at: list[int] = []
        others: list[tuple[int, list[int]]] = []
        for index, text in enumerate(texts):
            if "<" in text or "http" in text:
                text = strip_markup(text)
            text = text.lower()
            if text.isascii():
                lowered.append(text)
                at.append(index)
            else:
                others.append((index, [self._code_of(word) for word in PIECE.findall(text)]))
        codes, of_text = self._ascii_codes(lowered)
        if at:
            of_text = np.array(at, dtype=np.intp)[of_text]
        if others:
            codes = np.concatenate([codes, *(np.array(found, np.intp) for _, found in others)])
            of_text = np.concatenate(
                [of_text, *(np.full(len(found), index, np.intp) for index, found in others)]
            )
            order = np.argsort(of_text, kind="stable")
            codes, of_text = codes[order], of_text[order]
        meaningful = codes >= 0
        counts = np.bincount(of_text[meaningful], minlength=len(texts)).astype(np.intp)
        return codes[meaningful], counts

    def _ascii_codes(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """Each word of the lower-cased ASCII ``texts`` in order: its code (number, or -1 when
        it carries no meaning) and the index of its text. A word is a run of letters and
        digits, as :func:`_tokens` splits."""
        joined = "\n".join(texts).encode()
        # Zeros after the last text: every word ends, and each one's key bytes can be read.
        data = np.frombuffer(joined + bytes(_KEY_BYTES), dtype=np.uint8)
        word = _WORD_BYTES[data]
        starts = np.flatnonzero(np.diff(word, prepend=np.uint8(0)).view(np.int8) == 1)
        ends = np.flatnonzero(np.diff(word, append=np.uint8(0)).view(np.int8) == -1) + 1
        text_starts = np.cumsum([0] + [len(text) + 1 for text in texts[:-1]])
        of_text = np.searchsorted(text_starts, starts, side="right") - 1
        lengths = ends - starts
        keys = sliding_window_view(data, _KEY_BYTES)[starts]
        keys *= np.arange(_KEY_BYTES) < lengths[:, np.newaxis]
        halves = keys.view(np.uint64)
        low, high = halves[:, 0], halves[:, 1]
        mixed = (low ^ high * _SPREAD) * _SPREAD
        slots = (mixed >> np.uint64(64 - self._slot_bits)).astype(np.intp)
        known = (self._slot_low[slots] == low) & (self._slot_high[slots] == high)
        known &= lengths <= _KEY_BYTES
        codes = np.where(known, self._slot_code[slots], _UNSEEN)
        # The others by their text, in order (so that new words are numbered as first seen);
        # a short one takes its slot if free (the first of those that share it).
        unknown = np.flatnonzero(~known)
        codes[unknown] = [
            self._code_of(joined[start:end].decode())
            for start, end in zip(starts[unknown].tolist(), ends[unknown].tolist(), strict=True)
        ]
        free = unknown[
            (lengths[unknown] <= _KEY_BYTES) & (self._slot_code[slots[unknown]] == _UNSEEN)
        ]
        taken, first = np.unique(slots[free], return_index=True)
        self._slot_low[taken] = low[free[first]]
        self._slot_high[taken] = high[free[first]]
        self._slot_code[taken] = codes[free[first]]
        return codes, of_text.astype(np.intp)

    def _code_of(self, word: str) -> int:
        """The number of a word of a text, or -1 when it carries no meaning."""
        code = self._code.get(word)
        if code is None:
            code = self.numbers([word])[0] if _carries_meaning(word) else -1
            self._code[word] = code
        return code

    def starting(self, stem: str) -> list[int]:
        """The numbers of the known words that start with ``stem``."""
        ordered = self._sorted
        if len(self._unsorted) > _INSERTED:
            ordered.extend(self._unsorted)
            ordered.sort()
        else:
            for word in self._unsorted:
                bisect.insort(ordered, word)
        self._unsorted.clear()
        at = bisect.bisect_left(ordered, stem)
        found = []
        while at < len(ordered) and ordered[at].startswith(stem):
            found.append(self._number[ordered[at]])
            at += 1
        return found


@dataclass(frozen=True, slots=True)
class _Lookup:
    """One search's words as numbers: ``words`` (the distinct words of its texts, ascending),
    ``columns`` (each text's words as indexes into ``words``, a word as often as the text
    holds it, text after text), ``starts``
    (where each text with words begins in ``columns``), ``texts`` (which texts have words),
    ``terms`` (the terms' numbers) and ``held`` (for each term, the indexes into ``words`` of
    the words its stem starts)."""

    words: npt.NDArray[np.intp]
    columns: npt.NDArray[np.intp]
    starts: npt.NDArray[np.intp]
    texts: list[int]
    terms: npt.NDArray[np.intp]
    held: dict[int, npt.NDArray[np.intp]]


def _look_up(vocabulary: _Vocabulary, texts: Sequence[str], terms: Sequence[str]) -> _Lookup:
    """``texts`` and ``terms`` as numbers of ``vocabulary`` (see :class:`_Lookup`)."""
    flat, counts = vocabulary.of_texts(texts)
    with_words = np.flatnonzero(counts)
    term_numbers = np.array(vocabulary.numbers(terms), dtype=np.intp)
    present = np.zeros(len(vocabulary.words), dtype=bool)
    present[flat] = True
    words = np.flatnonzero(present)
    position = np.cumsum(present) - 1
    row = {term: index for index, term in enumerate(terms)}
    held: dict[int, npt.NDArray[np.intp]] = {}
    for stem, stemmed in TermMatcher.of(terms).terms_of.items():
        starting = np.array(vocabulary.starting(stem), dtype=np.intp)
        columns = position[starting[present[starting]]]
        for term in stemmed:
            held[row[term]] = columns
    starts = np.concatenate(([0], np.cumsum(counts[with_words[:-1]]))).astype(np.intp)
    return _Lookup(words, position[flat], starts, with_words.tolist(), term_numbers, held)


class WordVectors:
    """Unit vectors of single words from ``embed`` (texts to unit rows), with the content
    words of recent texts, so that a search splits and embeds only what it has not seen;
    safe to share between threads.

    Words are rows of one matrix, numbered in the order first seen. Once more than ``size``
    words are known, all is forgotten and the next search starts over (new words are rare
    once a guild's notes have been searched, and a matrix keeps no order of use).
    """

    def __init__(self, embed: Embed, *, size: int = 10_000, texts: int = 20_000) -> None:
        self._embed = embed
        self._size = size
        self._texts = texts
        self._lock = threading.Lock()
        self._vocabulary = _Vocabulary(texts)
        self._rows = np.zeros((0, 0), dtype=np.float32)
        self._embedded = 0

    def similarity(
        self, texts: Sequence[str], terms: Sequence[str]
    ) -> tuple[_Lookup, npt.NDArray[np.float32]]:
        """The search's words (:class:`_Lookup`) and the cosine of each term's vector with
        each of its words' (terms by words); the words not seen before are embedded in one
        call.

        Raises :class:`~vivy.errors.LLMError` when the model cannot embed.
        """
        with self._lock:
            if len(self._vocabulary.words) > self._size:
                self._vocabulary = _Vocabulary(self._texts)
                self._embedded = 0
            found = _look_up(self._vocabulary, texts, terms)
            self._embed_new()
            term_rows = self._rows[found.terms]
            word_rows = self._rows[found.words]
        # numpy's own loop, not BLAS: a BLAS product of this size wakes the library's threads,
        # which then spin on the cores the rest of the search needs.
        similarity: npt.NDArray[np.float32] = np.einsum("td,wd->tw", term_rows, word_rows)
        return found, similarity

    def _embed_new(self) -> None:
        """Embeds the words numbered since the last call into their rows."""
        new = self._vocabulary.words[self._embedded :]
        if not new:
            return
        rows = self._embed(new)
        end = self._embedded + len(new)
        if end > len(self._rows):
            grown = np.zeros((max(2 * end, 1024), rows.shape[1]), dtype=np.float32)
            if self._embedded:
                grown[: self._embedded] = self._rows[: self._embedded]
            self._rows = grown
        self._rows[self._embedded : end] = rows
        self._embedded = end


_LOCAL: list[WordVectors] = []
_LOCAL_LOCK = threading.Lock()


def local_word_vectors() -> WordVectors:
    """The process's word vectors from the local model's word tables
    (:func:`vivy.llm.local_word_array`, through the LLM port; shared with the offline
    provider's embeddings)."""
    with _LOCAL_LOCK:
        if not _LOCAL:
            from vivy.llm import local_word_array

            _LOCAL.append(WordVectors(local_word_array))
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
    text without a content word, or a question without terms, scores 0.

    The search's distinct words are compared with the terms once, in one matrix, and each
    text takes its maxima from their columns."""
    scores, _ = _scored(texts, terms, weights, vectors)
    return [float(score) for score in scores]


def _scored(
    texts: Sequence[str],
    terms: Sequence[str],
    weights: Mapping[str, float],
    vectors: WordVectors | None,
) -> tuple[npt.NDArray[np.float32], _Lookup | None]:
    """:func:`line_scores` of ``texts``, with their words as looked up (None without texts
    or terms)."""
    scores = np.zeros(len(texts), dtype=np.float32)
    if not texts or not terms:
        return scores, None
    if vectors is None:
        found = _look_up(_Vocabulary(len(texts), _SEARCH_SLOT_BITS), texts, terms)
        similarity = np.zeros((len(terms), len(found.words)), dtype=np.float32)
    else:
        found, similarity = vectors.similarity(texts, terms)
    if not found.texts:
        return scores, found
    for row, columns in found.held.items():
        similarity[row, columns] = 1.0
    heaviest = max(weights.values(), default=1.0)
    weight = np.array([weights.get(term, heaviest) for term in terms], dtype=np.float32)
    best = np.zeros((len(terms), len(texts)), dtype=np.float32)
    best[:, found.texts] = np.maximum.reduceat(similarity[:, found.columns], found.starts, axis=1)
    scores = weight @ best / float(weight.sum())
    return scores, found


def _sizes(texts: Sequence[str], found: _Lookup | None) -> npt.NDArray[np.intp]:
    """How many distinct content words each of ``texts`` holds, counted among ``found``
    (their words as :func:`_scored` looked them up), or split afresh without it."""
    if found is None:
        return np.array([len(content_words(text)) for text in texts], dtype=np.intp)
    sizes = np.zeros(len(texts), dtype=np.intp)
    if found.texts:
        # A text lists a word as often as it occurs: mark each text's words once.
        held = np.zeros((len(found.texts), len(found.words)), dtype=bool)
        lengths = np.diff(found.starts, append=len(found.columns))
        held[np.repeat(np.arange(len(found.texts)), lengths), found.columns] = True
        sizes[found.texts] = np.count_nonzero(held, axis=1)
    return sizes


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


#: What a line said by a member the question names adds to its score: a question about Sam
#: is answered by what Sam said, and Sam's own lines rarely hold Sam's name.
NAMED_AUTHOR = 0.2
#: What a line's substance adds at most: a line with :data:`SUBSTANTIAL_WORDS` content words
#: or more adds all of it, a shorter one its share, so that where the question's words match
#: nothing well, lines that say something come before "ok, night".
SUBSTANCE = 0.05
SUBSTANTIAL_WORDS = 5
#: The share of a question's score that the line answering it takes: a line that follows
#: another member's line asking something ("What are their names?" then "Luna and Oliver!")
#: often answers without the question's words. Chosen held out, conversation by conversation,
#: on the real dev conversations (``scripts/learn_fusion_weights.py``).
ANSWER_SHARE = 0.3


def best_lines(
    notes: Sequence[Sequence[EvidenceLine]],
    terms: Sequence[str],
    weights: Mapping[str, float],
    vectors: WordVectors | None,
    limit: int,
    *,
    named: Collection[int] = frozenset(),
    answer_share: float = ANSWER_SHARE,
) -> list[tuple[ScoredLine, ...]]:
    """For each note's ``lines`` (of ``notes``, oldest first), up to ``limit`` that best
    answer the question, best first (ties to the earlier line), each with its score: by
    :func:`line_scores`, all notes' lines scored at once (so scores compare across notes),
    plus :data:`NAMED_AUTHOR` for a line said by one of the members the question names
    (``named``, user ids), up to :data:`SUBSTANCE` for what the line says, and
    ``answer_share`` of the score of the line before it when that line is another member's
    question (:func:`_answers`).
    A line that reads as an instruction to the bot is never chosen; lines are checked only
    until ``limit`` are, as the check is the costliest step of choosing.

    Falls back to matching words alone when the word vectors cannot be made.
    """
    unique = [list({line.message_id: line for line in lines}.values()) for lines in notes]
    said = [line for lines in unique for line in lines]
    texts = [line.text for line in said]
    try:
        scores, found = _scored(texts, terms, weights, vectors)
    except LLMError:
        scores, found = _scored(texts, terms, weights, None)
    sizes = _sizes(texts, found)
    total = scores + SUBSTANCE / SUBSTANTIAL_WORDS * np.minimum(sizes, SUBSTANTIAL_WORDS)
    if named:
        total += NAMED_AUTHOR * np.fromiter(
            (line.author_id in named for line in said), dtype=bool, count=len(said)
        )
    if answer_share:
        answered = _answers(unique)
        total[answered + 1] += answer_share * total[answered]
    chosen: list[tuple[ScoredLine, ...]] = []
    offset = 0
    for lines in unique:
        own = total[offset : offset + len(lines)].tolist()
        offset += len(lines)
        order = sorted(range(len(lines)), key=lambda index: (-own[index], index))
        picked: list[ScoredLine] = []
        for index in order:
            if len(picked) == limit:
                break
            if not looks_like_instruction(lines[index].text):
                picked.append(ScoredLine(lines[index], own[index]))
        chosen.append(tuple(picked))
    return chosen


def _answers(notes: Sequence[Sequence[EvidenceLine]]) -> npt.NDArray[np.intp]:
    """The places, among all of ``notes``' lines one after another, of each line that asks
    something ("?") and is followed in its note by another member's line, its answer."""
    places: list[int] = []
    offset = 0
    for lines in notes:
        places.extend(
            offset + index
            for index in range(len(lines) - 1)
            if "?" in lines[index].text and lines[index + 1].author_id != lines[index].author_id
        )
        offset += len(lines)
    return np.asarray(places, dtype=np.intp)
