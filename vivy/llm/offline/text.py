"""Text the offline provider's writers share: the offline label, words, stopwords and
sentences.

Small helpers (clipping, comparison keys, content words, prose lists of names) and the
sentence splitter that knows abbreviations; Discord markup is :mod:`vivy.text.markup`'s.
The functions a note calls on every line are memoised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from vivy.text import terms

__all__ = [
    "ABBREVIATIONS",
    "OFFLINE_LABEL",
    "STOPWORDS",
    "capitalise",
    "clip",
    "compare_key",
    "content_words",
    "join_words",
    "name_list",
    "split_sentences",
    "squash",
    "unique",
]

#: The prefix of offline note and cluster summaries.
OFFLINE_LABEL = "(offline extract)"

#: What the writers skip when they pick topics and phrases: the stop words and chat filler.
STOPWORDS = terms.STOPWORDS | terms.CHAT_FILLER


# --- small text helpers ----------------------------------------------------------------


def squash(text: str) -> str:
    """``text`` with runs of whitespace collapsed to single spaces."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, marked with "…"."""
    text = squash(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return (cut or text[: limit - 1]) + "…"


@lru_cache(maxsize=1 << 14)
def compare_key(text: str) -> str:
    """A comparison key: lower case, word characters only, single spaces."""
    return " ".join(terms.compounds(text))


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that are not stopwords."""
    return set(terms.compounds(text)) - STOPWORDS


def join_words(items: Sequence[str]) -> str:
    """``["a", "b", "c"]`` as ``"a, b and c"``."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def capitalise(text: str) -> str:
    """``text`` with its first character upper-cased (the rest untouched)."""
    return text[:1].upper() + text[1:]


def name_list(names: Sequence[str], limit: int = 6) -> str:
    """``names`` joined for prose, the tail counted once there are more than ``limit``."""
    if len(names) > limit:
        shown = [*names[: limit - 1], f"{len(names) - limit + 1} others"]
        return join_words(shown)
    return join_words(list(names))


def unique(items: Iterable[str]) -> list[str]:
    """``items`` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


# --- sentences and message markup ----------------------------------------------------------

#: Words whose trailing period does not end a sentence ("St. David's", "e.g. Rust").
ABBREVIATIONS = frozenset(
    "st dr mr mrs ms mx prof sr jr vs approx dept mt ft fig vol e.g i.e cf etc".split()
)
_SENTENCE_END = re.compile(r"[.!?…]+(?=[\s\"'“”‘’)\]]|$)|\n")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def _ends_abbreviation(text: str, dot: int) -> bool:
    """Whether the period at ``text[dot]`` closes an abbreviation rather than a sentence."""
    match = _WORD_BEFORE.search(text[max(0, dot - 12) : dot])
    if match is None:
        return False
    word = match.group(1)
    if len(word) == 1 and word.isupper():
        return True  # an initial, as in "J. R. R. Tolkien"
    if word.lower() not in ABBREVIATIONS:
        return False
    if word.lower() == "etc":
        following = text[dot + 1 :].lstrip()
        return not following[:1].isupper()
    return True


def split_sentences(text: str) -> list[str]:
    """``text`` split into sentences, each keeping its end punctuation.

    A period ends a sentence only before whitespace, a quote or the end of the text, and
    not after an abbreviation ("St.", "Dr.", "e.g.", "etc." unless a capital follows), so
    "fly.io" and "a nurse at St. David's" stay whole.
    """
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.group() == "." and _ends_abbreviation(text, match.start()):
            continue
        piece = text[start : match.end()].strip()
        if piece:
            sentences.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
