"""What a word and a search term are: the one home of Vivy's text rules.

A word is a run of letters and digits, joined through an inner apostrophe, so a contraction
("don't") or a possessive ("Sam's") stays one word (:data:`WORD`, :func:`words`); its pieces
are the runs of letters and digits, which FTS5's unicode61 tokenizer indexes (:data:`PIECE`).
A question's terms are the pieces of its words less stop words and single letters
(:func:`query_terms`); a stop word is dropped whole ("don't" gives no "don"). A text holds a
term when a word of it starts with the term's light stem (:func:`stem`), diacritics folded
away (:func:`fold`), as the porter-stemmed evidence index would match it
(:class:`TermMatcher`). Sets of words are compared by :func:`inflection_key`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vivy.text.markup import strip_markup

__all__ = [
    "CHAT_FILLER",
    "COMPOUND",
    "MAX_TERMS",
    "PIECE",
    "STOPWORDS",
    "WORD",
    "TermMatcher",
    "compounds",
    "fold",
    "inflection_key",
    "query_terms",
    "stem",
    "words",
]

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren't around as at be
    because been before being below between both but by can can't cannot could couldn't did
    didn't do does doesn't doing don't done down during each else even ever every few for from
    further get got had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it
    it's its itself just know let let's like me more most much my myself no nor not now of
    off on once only or other ought our ours ourselves out over own really remember said same
    say she she'd she'll she's should shouldn't so some someone something such tell than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've thing things think this those through to too under until up us very was
    wasn't we we'd we'll we're we've were weren't what what's whatever when when's where
    where's which while who who's whom why why's will with won't would wouldn't you you'd
    you'll you're you've your yours yourself yourselves yeah yes ok okay hey hi lol pls please
    vivy again anyone anybody somebody ever still
"""
#: The stop words: too common to search for, to count as what a fact says, or to name a
#: topic. Keyword queries, line choice, the grounding guard and the offline writers drop them.
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_FILLER_TEXT = """
    actually ah ahh almost although always another anything anyway anyways away back best
    better btw come cool either enough everyone everything feel gets getting go goes going
    gonna good gotta great guys haha hahaha hmm however huh idk imo it'd it'll kind kinda
    likely lmao look lot lots made make many may maybe might mine must nah need needs never
    new nice nobody nope nothing oh omg one others otherwise pretty probably quite rather
    right says see seems shall since sometimes soon sounds stuff sure take tbh thank thanks
    though thus today together tomorrow took totally toward tried try trying upon use used
    using via wait wanna want way well went whether whose within without ya yah yep yet yup
"""
#: Words of chat that name no topic ("cool", "gonna", "stuff"): the offline writers skip them
#: beside the stop words when they pick a note's topics and phrases, while a question may
#: still search for one ("what did she cook today?").
CHAT_FILLER = frozenset(_FILLER_TEXT.split())

#: A run of letters and digits: what FTS5's unicode61 tokenizer indexes as one token, and so
#: what search, line choice and question dates split text into.
PIECE = re.compile(r"[^\W_]+")
#: A word: pieces joined through inner apostrophes ("don't", "Sam’s"), so that a stop word
#: or a contraction is recognised whole.
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: A compound: words joined by hyphens or underscores ("self-driving", "max_age"), or by a
#: dot before a letter ("node.js"): the unit the offline writers count, compare and pick
#: phrases by.
COMPOUND = re.compile(rf"{WORD.pattern}(?:[-_]+{WORD.pattern}|\.(?=[^\W\d_]){WORD.pattern})*")
#: Longest keyword query, in distinct terms.
MAX_TERMS = 16


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, typographic apostrophes made plain ("don’t" is
    "don't"), in order and with repeats."""
    return WORD.findall(_plain_apostrophes(text.lower()))


def compounds(text: str) -> list[str]:
    """The compounds of ``text``, lower-cased and with plain apostrophes, as :func:`words`."""
    return COMPOUND.findall(_plain_apostrophes(text.lower()))


def _plain_apostrophes(text: str) -> str:
    """``text`` with typographic apostrophes made plain, as the stop-word list spells them."""
    return text.replace("’", "'")


def query_terms(text: str) -> list[str]:
    """The distinct searchable pieces of ``text``'s words, lower-cased, in order of appearance.

    Mentions, custom emoji and URLs are removed first; stop words (whole words, or pieces)
    and single characters (except digits, which may be codes) are dropped.
    """
    seen: list[str] = []
    for word in words(strip_markup(text)):
        if word in STOPWORDS:
            continue
        for raw in PIECE.findall(word):
            if raw in STOPWORDS or (len(raw) < 2 and not raw.isdigit()) or raw in seen:
                continue
            seen.append(raw)
            if len(seen) == MAX_TERMS:
                return seen
    return seen


def fold(text: str) -> str:
    """Lower case without diacritics, as FTS5's ``unicode61 remove_diacritics 2`` sees it."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def stem(word: str) -> str:
    """A light English stem: the word without a plural, past or -ing ending."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            if suffix == "es" and word[-3] not in "sxz" and not word.endswith(("ches", "shes")):
                return word[:-1]
            return word[: len(word) - len(suffix)] + keep
    return word


def inflection_key(word: str) -> str:
    """A crude key under which a word's inflections meet, for comparing sets of words:
    "lives", "lived", "living" and "live" all become "liv"."""
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("s", "")):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


@dataclass(frozen=True, slots=True)
class TermMatcher:
    """Finds which search terms a text contains, as the porter-stemmed evidence index would:
    a word of the text that starts with a term's stem counts ("named" for "name", "dogs" for
    "dog"). Each stem is looked for with ``str.find`` (a search has a handful of terms),
    which is several times faster than one regular expression of them all."""

    terms_of: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, terms: Iterable[str]) -> TermMatcher:
        """The matcher of ``terms``."""
        stems: dict[str, list[str]] = {}
        for term in terms:
            stems.setdefault(stem(fold(term)), []).append(term)
        return cls({stem: tuple(found) for stem, found in stems.items() if stem})

    def found(self, text: str) -> frozenset[str]:
        """The terms whose stem starts a word of ``text``."""
        return self.held(text)[0]

    def held(self, text: str) -> tuple[frozenset[str], frozenset[str]]:
        """The terms whose stem starts a word of ``text``, and those of them that are a whole
        word of it ("tim" in "Tim's", not in "time"): a name is held only as itself."""
        folded = fold(text)
        hits = [
            term
            for stem, terms in self.terms_of.items()
            if _starts_a_word(folded, stem)
            for term in terms
        ]
        whole = (term for term in hits if _starts_a_word(folded, fold(term), whole=True))
        return frozenset(hits), frozenset(whole)


def _starts_a_word(text: str, stem: str, *, whole: bool = False) -> bool:
    """Whether ``stem`` occurs in ``text`` where no letter or digit precedes it (nor, when
    ``whole``, follows it)."""
    at = text.find(stem)
    while at >= 0:
        end = at + len(stem)
        if (at == 0 or not text[at - 1].isalnum()) and (
            not whole or end == len(text) or not text[end].isalnum()
        ):
            return True
        at = text.find(stem, at + 1)
    return False
