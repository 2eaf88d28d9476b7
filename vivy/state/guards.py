"""Guards on what may become a remembered fact (seed 003), decided without I/O.

A fact must be grounded in its source (an exact compact substring, or enough of its content
words present there), and must not read as an instruction to the bot, a claim of authority over
it, markup that imitates the prompt, or a secret. Words are compared after light stemming, so
the third-person "Lives in Austin" is grounded in the first-person "I live in Austin".
"""

from __future__ import annotations

import re

__all__ = [
    "GROUNDING_THRESHOLD",
    "MAX_FACT_WORDS",
    "content_tokens",
    "is_grounded",
    "looks_like_instruction",
]

#: Share of a claim's content words that must occur in the source (seed 003: about 45 %).
GROUNDING_THRESHOLD = 0.45

#: Longest fact kept, in words.
MAX_FACT_WORDS = 28

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

_STOPWORDS = frozenset(
    (
        "a an the and or but if of to in on at by for with from as is are was were be been being "
        "am i me my mine you your yours he him his she her hers it its we us our they them their "
        "this that these those there here so very really just also too not no yes do does did has "
        "have had having will would can could should may might must about into over under than "
        "then which who whom what when where why how all any some such own same other more most "
        "much many one ones s t ll re ve d m im i'm i've i'd i'll it's that's"
    ).split()
)

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
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), re.I | re.M)


def _stem(word: str) -> str:
    """A crude stem: "lives", "lived", "living" and "live" all become "liv"."""
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("s", "")):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def content_tokens(text: str) -> set[str]:
    """Lower-cased, lightly stemmed words of ``text`` without stop words."""
    words = (w.lower().replace("’", "'") for w in _WORD.findall(text))
    return {_stem(w) for w in words if w not in _STOPWORDS and len(w) > 1}


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


def looks_like_instruction(text: str) -> bool:
    """Whether ``text`` reads as an instruction to the bot, an authority claim or a secret."""
    return _INSTRUCTION.search(text) is not None
