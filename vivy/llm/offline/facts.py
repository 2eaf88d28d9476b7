"""Profile facts: first-person statements read into facts, by rules and without a model.

Rules turn "I live in Austin" into "Lives in Austin" (:func:`read_statements`); a fact that
fills a slot (a home, an employer, a stance on one thing) carries its slot's key, and
:func:`slot_of_fact` reads the slot of a stored fact, so that a newer statement can supersede
it. Statements that mention secrets or address the bot are dropped whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from vivy.llm.offline.text import clip, compare_key, content_words, split_sentences, squash
from vivy.llm.offline.words import PETS
from vivy.llm.schemas import NoteView
from vivy.memory.facts import ProfileSection

__all__ = ["Statement", "read_statements", "slot_of_fact"]

_OBJECT = r"(?P<x>[^,;:()\[\]\"“”]+)"
_ADVERBS = r"(?:(?:really|absolutely|totally|also|just|still|actually|kind of|kinda|so|truly) )*"
_KIN = r"wife|husband|partner|girlfriend|boyfriend|brother|sister|son|daughter|fiancee?|roommate"
_JOBS = (
    r"engineer|developer|programmer|designer|teacher|student|nurse|doctor|artist|writer|"
    r"scientist|manager|researcher|lawyer|accountant|chef|musician|photographer|analyst|"
    r"consultant|architect|electrician|mechanic|pilot|professor|barista|streamer|editor"
)
_OBJECT_STOP = re.compile(
    r"\s+(?:but|because|since|which|so|though|although|while|when|where|who|whatever|if|lol|"
    r"haha|tbh|btw|by the way|right now|these days|nowadays|anymore|at the moment|for now|now|"
    r"too|as well|and (?:that|this|it|it's|there|then|he|she|they|we|you|i)\b)\b.*$",
    re.IGNORECASE,
)
_PERIOD = r"(?:week|month|year|night|weekend|summer|winter|spring|fall|autumn|semester|term)"
#: Time phrases that trail an object ("Denver last month") and say nothing about it.
_OBJECT_TAIL = re.compile(
    r"(?:\s+(?:more|honestly|lately|recently|currently|anyway|again|a lot|so much|very much|"
    r"yesterday|today|ago|the other day|every day|all day|daily|for (?:a while|years)|"
    r"(?:last|this|next) " + _PERIOD + r"|"
    r"(?:a|an|one|two|three|a few|a couple of|few|\d+) (?:days?|weeks?|months?|years?) ago))+$",
    re.IGNORECASE,
)
#: Where the second term of a preference ends: "Linux over Windows| for anything dev related".
_COMPARISON_END = re.compile(
    r"\s+(?:for|in|at|on|with|when|because|since|as|if|unless|except|by|during|while|once|"
    r"whatever|whenever|any day|every time|honestly|anyway|personally)\b.*$",
    re.IGNORECASE,
)
#: Statements that must never become facts: secrets and instructions aimed at the bot.
_UNSAFE = re.compile(
    r"password|passcode|passphrase|api[ _-]?key|token|secret|ssn|social security|credit card|"
    r"\bpin\b|ignore (?:all |any |the )?(?:previous|prior|above)|system prompt|instructions?\b|"
    r"\bvivy\b|\byou (?:must|should|will|are)\b",
    re.IGNORECASE,
)
_VAGUE_TEXT = (
    "it that this them those these you him her your yours everything nothing anything "
    "something stuff things one how what when where why if whether which who"
)
_VAGUE = frozenset(_VAGUE_TEXT.split())
#: Sections whose facts list things (hobbies, skills, stances), so that two can join into one.
_LIST_SECTIONS = frozenset({"interests", "skills", "opinions"})


@dataclass(frozen=True, slots=True)
class _Rule:
    """A first-person statement pattern and the third-person fact it yields."""

    pattern: re.Pattern[str]
    section: ProfileSection
    render: Callable[[re.Match[str], str], str]
    slot: str | None = None


def _rule(
    pattern: str,
    section: ProfileSection,
    render: Callable[[re.Match[str], str], str],
    slot: str | None = None,
) -> _Rule:
    """A :class:`_Rule` with its pattern compiled case-insensitively."""
    return _Rule(re.compile(pattern, re.IGNORECASE), section, render, slot)


def _article(noun: str) -> str:
    """``noun`` with "a" or "an" in front."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


_LIKE_VERBS = {"love": "Loves", "like": "Likes", "enjoy": "Enjoys", "adore": "Loves"}

_RULES: tuple[_Rule, ...] = (
    _rule(
        r"\bi(?:'ve| have)? (?:just |recently |finally |now )?(?:moved|relocated) (?:to|into) "
        + _OBJECT,
        "bio",
        lambda m, x: f"Lives in {x}",
        "residence",
    ),
    _rule(
        r"\bi(?: currently| now| still)? (?:live|am living|'m living|am based|'m based|reside) "
        r"in " + _OBJECT,
        "bio",
        lambda m, x: f"Lives in {x}",
        "residence",
    ),
    _rule(r"\bi(?:'m| am) (?:originally )?from " + _OBJECT, "bio", lambda m, x: f"Is from {x}"),
    _rule(
        r"\bi(?: currently| now| still)? work (?P<prep>at|for) " + _OBJECT,
        "bio",
        lambda m, x: f"Works {m['prep'].lower()} {x}",
        "employer",
    ),
    _rule(
        r"\bi(?: currently| now| still)? work as (?:an? )?" + _OBJECT,
        "bio",
        lambda m, x: f"Works as {_article(x)}",
        "occupation",
    ),
    _rule(
        r"\bi(?:'m| am) (?:an? )(?P<x>(?:[\w-]+ ){0,3}(?:" + _JOBS + r"))\b",
        "bio",
        lambda m, x: f"Is {_article(x)}",
        "occupation",
    ),
    _rule(
        r"\bi(?:'m| am)(?: currently| now| still)? (?:learning|studying) " + _OBJECT,
        "skills",
        lambda m, x: f"Is learning {x}",
    ),
    _rule(
        r"\bi (?:mostly |mainly |usually |always |only )?(?:use|code in|program in) " + _OBJECT,
        "skills",
        lambda m, x: f"Uses {x}",
    ),
    _rule(r"\bi (?:currently |now )?study " + _OBJECT, "bio", lambda m, x: f"Studies {x}"),
    _rule(
        r"\bi(?: currently| now| still)? work (?P<x>(?:the )?(?:night|day|early|late|weekend|"
        r"double|graveyard) shifts?\b[^,;:()\[\]\"“”]*)",
        "bio",
        lambda m, x: f"Works {x}",
    ),
    _rule(
        r"\bi(?:'m| am) (?:an? )?(?:strict |mostly |fully )?(?P<x>vegetarian|vegan|pescatarian)\b",
        "other",
        lambda m, x: f"Is {x.lower()}",
    ),
    _rule(
        r"\bi (?:also |often |usually |sometimes |regularly )?go (?P<x>[a-z]+ing)\b",
        "interests",
        lambda m, x: f"Goes {x}",
    ),
    _rule(
        r"\bi (?:mostly |mainly |usually )?main " + _OBJECT, "interests", lambda m, x: f"Mains {x}"
    ),
    _rule(
        r"\bi " + _ADVERBS + r"prefer (?P<x>.+?) (?:over|to|instead of) (?P<y>[^,;:()]+)",
        "opinions",
        lambda m, x: f"Prefers {x} over {_clean_object(_COMPARISON_END.sub('', m['y']))}",
    ),
    _rule(r"\bi " + _ADVERBS + r"prefer " + _OBJECT, "opinions", lambda m, x: f"Prefers {x}"),
    _rule(
        r"\bi (?:do not|don't|dont) " + _ADVERBS + r"(?:like|enjoy|love) " + _OBJECT,
        "opinions",
        lambda m, x: f"Dislikes {x}",
        "preference",
    ),
    _rule(
        r"\bi " + _ADVERBS + r"(?:hate|dislike|detest|can't stand|cannot stand) " + _OBJECT,
        "opinions",
        lambda m, x: f"Dislikes {x}",
        "preference",
    ),
    _rule(
        r"\bi " + _ADVERBS + r"(?P<verb>love|like|enjoy|adore) " + _OBJECT,
        "interests",
        lambda m, x: f"{_LIKE_VERBS[m['verb'].lower()]} {x}",
        "preference",
    ),
    _rule(r"\bi " + _ADVERBS + r"play " + _OBJECT, "interests", lambda m, x: f"Plays {x}"),
    _rule(
        r"\bmy (?P<kind>" + PETS + r")(?:'s name is| is named| is called| named| called|,)? "
        r"(?P<x>(?-i:[A-Z])[\w'-]*)",
        "relationships",
        lambda m, x: f"Has {_article(m['kind'].lower())} named {x}",
    ),
    _rule(
        r"\bi (?:also )?(?:have|own) (?:an?|one) (?P<kind>" + PETS + r") (?:named|called) "
        r"(?P<x>(?-i:[A-Z])[\w'-]*)",
        "relationships",
        lambda m, x: f"Has {_article(m['kind'].lower())} named {x}",
    ),
    _rule(
        r"\bmy (?P<kind>" + _KIN + r")(?:'s name is| is named| is called| named| called|,)? "
        r"(?P<x>(?-i:[A-Z])[\w'-]*)",
        "relationships",
        lambda m, x: f"Has {_article(m['kind'].lower())} named {x}",
    ),
)

#: What every rule's match contains: each pattern opens with the word "I" or "my" (followed
#: by an apostrophe or a space), so a clause without either word cannot match any rule.
_FIRST_PERSON = re.compile(r"\b(?:i|my)\b", re.IGNORECASE)

#: Patterns that read a stored fact back into its slot, so new facts can supersede it.
_SLOT_OF_FACT: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?:lives|is living|is based|resides) in (?P<x>.+)$", re.I), "residence"),
    (re.compile(r"^moved to (?P<x>.+)$", re.I), "residence"),
    (re.compile(r"^works (?:at|for) (?P<x>.+)$", re.I), "employer"),
    (
        re.compile(r"^(?:works as|is) an? (?P<x>(?:[\w-]+ ){0,3}(?:" + _JOBS + r"))$", re.I),
        "occupation",
    ),
    (re.compile(r"^(?:likes|loves|enjoys|dislikes|hates) (?P<x>.+)$", re.I), "preference"),
)

_FIRST_TO_THIRD = {
    "my": "their",
    "mine": "theirs",
    "me": "them",
    "myself": "themselves",
    "i": "they",
    "i'm": "they're",
    "i've": "they've",
}


#: Characters that are pictures, not words: emoji, their modifiers and joiners.
_PICTURE_CATEGORIES = frozenset({"So", "Sk", "Cs", "Co"})
_PICTURE_MARKS = frozenset("\u200d\ufe0e\ufe0f\u20e3")


def _without_pictures(text: str) -> str:
    """``text`` without emoji and other pictographs."""
    return "".join(
        char
        for char in text
        if char not in _PICTURE_MARKS and unicodedata.category(char) not in _PICTURE_CATEGORIES
    )


def _clean_object(text: str) -> str:
    """The object of a statement, cut at its clause end and moved to the third person.

    Emoji, trailing punctuation and trailing time phrases ("last month", "recently") go, as
    often as they stack: "Denver last month 😅" becomes "Denver".
    """
    text = squash(_without_pictures(text))
    previous = None
    while text != previous:
        previous = text
        text = _OBJECT_STOP.sub("", text).strip(" .!?,;:…-–—'’\"")
        text = _OBJECT_TAIL.sub("", text)
    words = [_FIRST_TO_THIRD.get(word.lower(), word) for word in text.split()]
    return " ".join(words)


def _slot_key(slot: str | None, text: str) -> tuple[str, str] | None:
    """The conflict key of a fact: one residence, one employer, one stance per object."""
    if slot is None:
        return None
    if slot == "preference":
        match = _SLOT_OF_FACT[-1][0].match(text)
        return (slot, compare_key(match["x"]) if match else compare_key(text))
    return (slot, "")


@lru_cache(maxsize=1 << 14)
def slot_of_fact(text: str) -> tuple[str, str] | None:
    """The conflict key of a stored fact's text, if it has one."""
    for pattern, slot in _SLOT_OF_FACT:
        if pattern.match(text.strip()):
            return _slot_key(slot, text.strip())
    return None


@dataclass(frozen=True, slots=True)
class Statement:
    """A fact read from one of the user's sentences.

    ``predicate`` and ``obj`` split a list-like fact ("Loves" and "hiking"), so that in a full
    profile it can join a fact with the same predicate instead of pushing another one out.
    """

    section: ProfileSection
    text: str
    slot: tuple[str, str] | None
    note_id: int
    evidence: str
    predicate: str | None = None
    obj: str = ""


_CLAUSE_BREAK = re.compile(
    r"(?:\s*,\s*(?:(?:and|but|so|also|plus|then)\s+)?|\s+(?:and|but|so|also|plus|then)\s+)"
    r"(?=(?:i|i'm|i've|my)\b)",
    re.IGNORECASE,
)


def _clauses(sentence: str) -> list[str]:
    """``sentence`` split where a new first-person clause starts ("…, and I work at …")."""
    parts = _CLAUSE_BREAK.split(sentence)
    return [part.strip() for part in parts if part and part.strip()]


def read_statements(user_id: int, notes: Sequence[NoteView]) -> list[Statement]:
    """First-person facts the user stated in ``notes``, in conversation order."""
    found: list[Statement] = []
    lines = sorted(
        (
            (line.at, note.id, index, line)
            for note in notes
            for index, line in enumerate(note.lines)
            if line.author_id == user_id
        ),
        key=lambda item: (item[0], item[1], item[2]),
    )
    for _, note_id, _, line in lines:
        for sentence in split_sentences(line.text.replace("’", "'")):
            if sentence.rstrip().endswith("?"):
                continue
            for clause in _clauses(sentence):
                statement = _read_clause(clause, note_id, sentence)
                if statement is not None:
                    found.append(statement)
    return found


def _read_clause(clause: str, note_id: int, sentence: str) -> Statement | None:
    """The fact the first matching rule reads from ``clause``, if any.

    Clauses that mention secrets or address the bot are dropped whole (the injection guard).
    """
    if _FIRST_PERSON.search(clause) is None:
        return None
    for rule in _RULES:
        match = rule.pattern.search(clause)
        if match is None:
            continue
        obj = _clean_object(match["x"])
        words = obj.split()
        if not words or len(words) > 8 or words[0].lower() in _VAGUE:
            continue
        if not content_words(obj) and not obj[:1].isupper():
            continue
        if _UNSAFE.search(clause):
            return None
        text = clip(rule.render(match, obj), 200)
        listed = rule.section in _LIST_SECTIONS and text.endswith(f" {obj}")
        return Statement(
            section=rule.section,
            text=text,
            slot=_slot_key(rule.slot, text),
            note_id=note_id,
            evidence=clip(sentence, 300),
            predicate=text[: -len(obj) - 1] if listed else None,
            obj=obj,
        )
    return None
