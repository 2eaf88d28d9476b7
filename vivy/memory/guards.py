"""Guards on what may become a remembered fact, decided without I/O.

A fact must be grounded in its source (an exact compact substring, or enough of its content
words present there), and must not read as an instruction to the bot, a claim of authority over
it, markup that imitates the prompt, or a secret. Words are compared after light stemming, so
the third-person "Lives in Austin" is grounded in the first-person "I live in Austin".
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import replace
from functools import lru_cache

from vivy.memory.notes import NoteContent
from vivy.text.terms import STOPWORDS, inflection_key, words

__all__ = [
    "GROUNDING_THRESHOLD",
    "MAX_FACT_WORDS",
    "clean_note",
    "content_tokens",
    "discloses_self",
    "is_grounded",
    "looks_like_instruction",
    "strip_instructions",
]

#: Share of a claim's content words that must occur in the source.
GROUNDING_THRESHOLD = 0.45

#: Longest fact kept, in words.
MAX_FACT_WORDS = 28

#: Words a fact's content is not counted by: the stop words, and the pieces contractions
#: split into ("we'll" read as "we" and "ll").
_NOT_CONTENT = STOPWORDS | {"ll", "re", "ve", "im"}

_INSTRUCTION_PATTERNS = [
    r"\bignore\b.{0,40}\b(instruction|prompt|rule|previous|above|prior)",
    r"\bdisregard\b.{0,40}\b(instruction|prompt|rule|previous|above|prior)",
    r"\b(forget|override)\b.{0,30}\b(instruction|rules|prompt)",
    r"\bsystem\s*(prompt|message|instruction)",
    r"\bdeveloper\s*(mode|message|prompt)",
    r"\bjailbreak",
    r"\byou\s+(are|must|should|will)\s+(now|always|never)\b",
    r"\b(act|behave|pretend)\s+(as|like)\b",
    r"\bfrom\s+now\s+on\b",
    r"\bnew\s+(rule|instruction)s?\b",
    r"^\s*(system|assistant|developer)\s*:",
    r"</?\s*(system|background_facts|notes|user|assistant|instructions?)\b[^>]*>",
    r"\[\s*(system|inst)\s*\]",
    r"\b(grant|give|make)\b.{0,30}\b(admin|administrator|moderator|owner|permission|role)s?\b",
    r"\b(is|am|are|be)\s+(the|an?|a\s+verified)?\s*(server\s+)?"
    r"(owner|admin|administrator|moderator|mod|staff)\b.{0,30}\b(of|for)\s+"
    r"(vivy|the\s+bot|this\s+bot|the\s+server|this\s+server|discord)",
    r"\b(owner|admin|administrator|creator|developer)\s+of\s+(vivy|the\s+bot|this\s+bot)",
    r"\bverified\s+(discord\s+)?(staff|admin|owner|member)",
    r"\b(server|guild)\s+owner\b",
    r"\bremember\s+that\b",
    r"\b(api[\s_-]*key|password|passphrase|secret|private\s+key|access\s+token|auth\s+token|"
    r"bot\s+token|2fa|one[\s-]*time\s+code|seed\s+phrase)\b",
    r"\b(sk|ghp|xox[bp])[-_][A-Za-z0-9]{8,}",
]
_INSTRUCTION_PATTERNS += [
    # Orders and role-play.
    r"\bi\s+(order|command|instruct)\s+you\b",
    r"\brole[\s-]?play\b",
    r"\bwithout\s+(any\s+)?(restrictions|filters|limits|rules)\b",
    r"\bdelete\s+(all\s+)?(the\s+)?(memories|memory|data|facts|profiles?)\b",
    r"\bdecode\s+(this|the\s+following)\b",
    # Prompt markup in other syntaxes.
    r"^\s*#{1,6}\s*(system|instructions?|assistant|developer)\b",
    r"[\"']role[\"']\s*:\s*[\"'](system|developer|assistant)[\"']",
    r"\bfollowing\s+user\s+is\s+(trusted|an?\s+admin|verified)",
    # "Ignore the instructions" and "make me admin" in other languages.
    r"\bignor\w*\b.{0,40}\b(instrucc|instruç|istruz|instruct|anweisung|consign)",
    r"\b(negeer|ignoriere|ignorez|ignora|ignore)\b.{0,30}\b(vorige|vorherigen|anteriores|"
    r"precedenti|précédentes|previas)",
    r"игнорир|инструкци|администратор",
    r"忽略|指令|管理员|無視|以前の指示|管理者",
    r"\b(beheerder|administrador|amministratore|administrateur|propriétaire|proprietario|"
    r"dueño|dono|besitzer)\b",
]
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), re.I | re.M)

#: Every match of every pattern above contains one of these strings, lower-cased (a test
#: generates matches of each pattern to check it). Looking for them first is about ten times
#: cheaper than the patterns, and most chat lines contain none.
_TRIGGER_WORDS = (
    "ignor disregard forget override system developer jailbreak now always never act behave "
    "pretend rule instruction assistant < [ admin moderator owner permission role mod staff "
    "creator verified remember api password passphrase secret private token 2fa code seed "
    "sk- sk_ ghp xox order command instruct without delete decode # following negeer "
    "игнорир инструкци администратор 忽略 指令 管理员 無視 以前の指示 管理者 beheerder "
    "administr amministr propri dueño dono besitzer"
).split()
#: The trigger words an ASCII text can contain.
_ASCII_TRIGGER_WORDS = [word for word in _TRIGGER_WORDS if word.isascii()]
#: ``str.lower`` differs from the patterns' case-insensitive matching in three letters:
#: "İ" lowers to "i" plus a combining dot, and "ı" and "ſ" match "i" and "s".
_TRIGGER_FOLD = str.maketrans({"\u0307": None, "ı": "i", "ſ": "s"})


def _may_be_instruction(reading: str) -> bool:
    """Whether ``reading`` contains a trigger word: False rules every pattern out."""
    folded = reading.lower()
    if folded.isascii():
        return any(word in folded for word in _ASCII_TRIGGER_WORDS)
    folded = folded.translate(_TRIGGER_FOLD)
    return any(word in folded for word in _TRIGGER_WORDS)


#: Leetspeak digits and symbols read as the letters they stand for.
_LEET = str.maketrans("013457@$", "oieastas")
_SPACED = re.compile(r"\b(?:\w\s){3,}\w\b")
_LETTER_GAP = re.compile(r"(?<=\b\w) (?=\w\b)")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_ASCII_DIGIT = re.compile(r"[0-9]")


def _has_digit(text: str) -> bool:
    """Whether ``text`` has a character that ``str.isdigit`` accepts (in ASCII text, found
    by a regex quicker than character by character)."""
    if text.isascii():
        return _ASCII_DIGIT.search(text) is not None
    return any(map(str.isdigit, text))


@lru_cache(maxsize=16384)
def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased, lightly stemmed words of ``text`` without stop words.

    Memoised: a profile's facts are compared with every note that updates it, so the same
    texts come back again and again.
    """
    return frozenset(inflection_key(w) for w in words(text) if w not in _NOT_CONTENT and len(w) > 1)


def _compact(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def is_grounded(claim: str, source: str, *, threshold: float = GROUNDING_THRESHOLD) -> bool:
    """Whether ``claim`` rests on ``source``: a compact substring, or enough shared words."""
    compact = _compact(claim)
    if compact and compact in _compact(source):
        return True
    words = content_tokens(claim)
    if not words:
        return False
    present = words & content_tokens(source)
    return len(present) / len(words) >= threshold


def _readings(text: str) -> list[str]:
    """``text`` and the ways it may be disguised: full-width, spaced, leet, base64."""
    plain = unicodedata.normalize("NFKC", text)
    readings = [plain]
    if _SPACED.search(plain):  # "i g n o r e   p r e v i o u s": join the letters of words
        readings.append(re.sub(r"\s{2,}", " ", _LETTER_GAP.sub("", plain)))
    if _has_digit(plain):
        readings.append(plain.lower().translate(_LEET))
    for token in _BASE64.findall(plain):
        try:
            decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
            readings.append(decoded.decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            continue
    return readings


@lru_cache(maxsize=4096)
def looks_like_instruction(text: str) -> bool:
    """Whether ``text`` reads as an instruction to the bot, an authority claim or a secret.

    The text is also read undisguised: NFKC-normalised (full-width letters), with spaced
    letters joined, with leetspeak digits as letters, and with base64 runs decoded.
    Memoised: the lines quoted under a guild's notes are checked again at every search that
    finds those notes.
    """
    return any(
        _may_be_instruction(reading) and _INSTRUCTION.search(reading) is not None
        for reading in _readings(text)
    )


#: Self-disclosure: a first-person statement about oneself ("I live…", "my dog…", "I'm a…").
_SELF_DISCLOSURE = re.compile(
    r"\b(my|mine|i'm|i am|im|i've|i have|i'd|i'll|i (?:\w+ly )?(?:live|work|love|like|enjoy|"
    r"hate|prefer|use|play|study|learn|moved|own|got|started|switched|speak|grew|was born|"
    r"go|went|drive|run|build|make|teach|mod|main|drum|sing|cook|bake|read|watch|listen))\b",
    re.IGNORECASE,
)


def discloses_self(text: str) -> bool:
    """Whether ``text`` holds a first-person statement about its author.

    A member whose lines have none cannot ground a new fact, so no model is asked about
    their profile.
    """
    return _SELF_DISCLOSURE.search(text) is not None


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def strip_instructions(text: str) -> str:
    """``text`` without its sentences that read as instructions to the bot."""
    kept = [part for part in _SENTENCE_END.split(text) if not looks_like_instruction(part)]
    return " ".join(kept).strip()


def clean_note(draft: NoteContent, fallback_title: str) -> NoteContent:
    """A note with no instruction-like title, sentence or list item left in it.

    A note's text is shown to the chat model as memory, so what reads as an order to the bot
    is dropped before it is stored (the member's own words were quoted in it, or the note
    model was steered).
    """
    title = draft.title if not looks_like_instruction(draft.title) else fallback_title
    summary = strip_instructions(draft.summary) or "(nothing to summarise)"

    def items(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(value for value in values if not looks_like_instruction(value))

    return replace(
        draft,
        title=title[:80],
        summary=summary,
        topics=items(draft.topics),
        decisions=items(draft.decisions),
        open_questions=items(draft.open_questions),
        entities=items(draft.entities),
    )
