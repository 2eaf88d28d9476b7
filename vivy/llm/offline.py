"""The offline provider: the LLM port without a key, a network or a model.

It keeps Vivy useful when no Gemini key is set (seed 000's graceful degradation) and gives
the demo and the tests a deterministic LLM. Everything is plain text statistics and rules:

* notes are extracts: salient terms for the title and topics, the most representative lines
  for the summary, capitalised names for entities, "let's"/"we'll"/"decided" lines for
  decisions and lines ending in "?" for open questions;
* profile operations come from first-person statements by the user ("I live in Austin" adds
  "Lives in Austin"; "I moved to Denver" invalidates it);
* consolidation merges near-duplicate facts and retires superseded ones;
* topic clusters group notes that share salient terms;
* embeddings hash word unigrams and bigrams into a fixed-size signed vector.

Its output is labelled: ``quality`` is ``"offline"`` and note summaries start with
``(offline extract)``, so nobody mistakes an extract for a model's summary. It reads the
structured ``payload`` of each request and never parses prompt text.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import anyio.lowlevel

from vivy.errors import ConfigError, LLMError
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    Operation,
    T,
    Usage,
    l2_normalise,
)
from vivy.llm.schemas import (
    PROFILE_SECTIONS,
    AddFact,
    ClusterDraft,
    ClusterInput,
    DraftCluster,
    FactView,
    InvalidateFact,
    MergeFacts,
    NoteDraft,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperation,
    ProfileOperations,
    ProfileSection,
    TranscriptLine,
)

__all__ = [
    "OFFLINE_EMBEDDING_MODEL",
    "OFFLINE_MODEL",
    "OFFLINE_QUALITY",
    "OfflineLLM",
    "cluster_notes",
    "consolidate_profile",
    "hash_embedding",
    "offline_chat_answer",
    "profile_operations",
    "write_note",
]

#: The name recorded as the model of offline generations.
OFFLINE_MODEL = "offline-extractive-v1"
#: The name recorded with offline embedding vectors.
OFFLINE_EMBEDDING_MODEL = "offline-hash-v1"
#: The quality label of everything the offline provider writes.
OFFLINE_QUALITY = "offline"
#: The prefix of offline note and cluster summaries.
OFFLINE_LABEL = "(offline extract)"

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_-]*")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")

_STOPWORD_TEXT = """
    a about above actually after again against all almost also although always am an and
    another any anybody anyone anything anyway anyways are aren't around as at away back be
    because been before being below best better between both but by can can't cannot come
    could couldn't did didn't do does doesn't doing don't done down during each either else
    enough even ever every everyone everything few for from further get gets getting go goes
    going gonna good got gotta had hadn't has hasn't have haven't having he he'd he'll he's
    her here here's hers herself hey hi him himself his how how's however i i'd i'll i'm i've
    if in into is isn't it it'd it'll it's its itself just kind kinda know let let's like
    likely lol lmao look lot lots made make many may maybe me might mine more most much must
    my myself nah need needs never new no nobody nope nor not nothing now of off oh ok okay
    on once one only or other others otherwise our ours ourselves out over own pretty
    probably quite rather really right said same say says see seems shall she she'd she'll
    she's should shouldn't since so some somebody someone something sometimes soon still
    stuff such sure take than thank thanks that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've thing things think this those
    though through thus to today together tomorrow too took totally toward tried try trying
    under until up upon us use used using very via wait want wanna was wasn't way we we'd
    we'll we're we've well went were weren't what what's whatever when where where's whether
    which while who who's whom whose why will with within without won't would wouldn't yeah
    yep yes yet you you'd you'll you're you've your yours yourself yourselves yup guys
    haha hahaha hmm huh idk imo tbh btw omg ah ahh ya yah cool nice great thing sounds feel
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_DECISION = re.compile(
    r"\b(let'?s|let us|we'?ll|we will|we'?re going to|we are going to|decided|agreed|"
    r"going with|the plan is|plan is to)\b",
    re.IGNORECASE,
)


# --- small text helpers ----------------------------------------------------------------


def _squash(text: str) -> str:
    """``text`` with runs of whitespace collapsed to single spaces."""
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, marked with "…"."""
    text = _squash(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return (cut or text[: limit - 1]) + "…"


def _key(text: str) -> str:
    """A comparison key: lower case, word characters only, single spaces."""
    return " ".join(word.lower() for word in _WORD.findall(text))


def _content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that are not stopwords."""
    return {word.lower() for word in _WORD.findall(text)} - _STOPWORDS


def _join_words(items: Sequence[str]) -> str:
    """``["a", "b", "c"]`` as ``"a, b and c"``."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _capitalise(text: str) -> str:
    """``text`` with its first character upper-cased (the rest untouched)."""
    return text[:1].upper() + text[1:]


# --- salient terms -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Term:
    """A salient unigram or bigram, with the surface form to display and its score."""

    key: str
    display: str
    score: float
    first: int


def _salient_terms(texts: Sequence[tuple[int, str]], *, exclude: Iterable[str] = ()) -> list[_Term]:
    """Terms of ``texts`` (author id, text) ranked by how much the conversation is about them.

    A term's score is its frequency, boosted when several authors use it (a shared topic
    rather than one person's aside); bigrams that recur score double and displace their
    words. Stopwords stand in for an idf over everyday English. Ties go to the earlier term.
    """
    excluded = {word.lower() for word in exclude}
    counts: Counter[str] = Counter()
    authors: defaultdict[str, set[int]] = defaultdict(set)
    surfaces: defaultdict[str, Counter[str]] = defaultdict(Counter)
    first: dict[str, int] = {}
    position = 0

    def count(term: str, surface: str, author: int) -> None:
        counts[term] += 1
        authors[term].add(author)
        first.setdefault(term, position)
        surfaces[term][surface] += 1

    for author, text in texts:
        previous: tuple[str, str] | None = None
        for raw in _WORD.findall(text):
            word = raw.strip("'’-_")
            key = word.lower()
            position += 1
            if len(key) < 3 or key in _STOPWORDS or key in excluded or key.isdigit():
                previous = None
                continue
            count(key, word, author)
            if previous is not None:
                count(f"{previous[0]} {key}", f"{previous[1]} {word}", author)
            previous = (key, word)
    terms: list[_Term] = []
    for key, total in counts.items():
        is_bigram = " " in key
        if is_bigram and total < 2:
            continue
        score = total * (1.0 + 0.5 * (len(authors[key]) - 1)) * (2.0 if is_bigram else 1.0)
        display = surfaces[key].most_common(1)[0][0]
        terms.append(_Term(key=key, display=display, score=score, first=first[key]))
    terms.sort(key=lambda term: (-term.score, term.first, term.key))
    chosen: list[_Term] = []
    covered: set[str] = set()
    for term in terms:
        words = set(term.key.split())
        if words <= covered:
            continue
        chosen.append(term)
        covered |= words
    return chosen


def _entities(lines: Sequence[TranscriptLine]) -> list[str]:
    """Capitalised names in ``lines``, most mentioned first.

    Consecutive capitalised words form one name ("Elden Ring"). A word that opens a
    sentence counts only if it also appears capitalised mid-sentence, or is an acronym,
    since sentence case says nothing about names.
    """
    mid_sentence: set[str] = set()
    candidates: list[tuple[str, bool]] = []
    for line in lines:
        for sentence in _SENTENCE.findall(line.text):
            words = _WORD.findall(sentence)
            run: list[str] = []
            run_starts_sentence = False
            for index, raw in enumerate([*words, ""]):
                word = raw.strip("'’-_")
                is_name = (
                    bool(word)
                    and word[0].isupper()
                    and word.lower() not in _STOPWORDS
                    and not word.lower().startswith(("i'", "i’"))
                )
                if is_name:
                    if not run:
                        run_starts_sentence = index == 0
                    run.append(word)
                    if index > 0:
                        mid_sentence.add(word)
                    continue
                if run:
                    candidates.append((" ".join(run), run_starts_sentence))
                run = []
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for name, starts in candidates:
        head = name.split()[0]
        acronym = len(head) >= 2 and head.isupper()
        if starts and " " not in name and head not in mid_sentence and not acronym:
            continue
        counts[name] += 1
        order.setdefault(name, len(order))
    ranked = sorted(counts, key=lambda name: (-counts[name], order[name]))
    return [_clip(name, 80) for name in ranked[:10]]


# --- notes ---------------------------------------------------------------------------------


def _participants(lines: Iterable[TranscriptLine]) -> list[str]:
    """Display names of the authors of ``lines`` in order of first appearance."""
    seen: dict[int, str] = {}
    for line in lines:
        seen.setdefault(line.author_id, line.author_name)
    return list(seen.values())


def _name_list(names: Sequence[str], limit: int = 5) -> str:
    """``names`` joined for prose, the tail counted once there are more than ``limit``."""
    if len(names) > limit:
        shown = [*names[: limit - 1], f"{len(names) - limit + 1} others"]
        return _join_words(shown)
    return _join_words(list(names))


def _representative(
    lines: Sequence[TranscriptLine], terms: Sequence[_Term], count: int
) -> list[TranscriptLine]:
    """The ``count`` lines that carry most salient-term weight, in conversation order."""
    weights = {term.key: term.score for term in terms}
    scored: list[tuple[float, int]] = []
    for index, line in enumerate(lines):
        words = [word.lower().strip("'’-_") for word in _WORD.findall(line.text)]
        keys = set(words) | {f"{a} {b}" for a, b in pairwise(words)}
        weight = sum(weights.get(key, 0.0) for key in keys)
        if weight > 0:
            scored.append((weight / math.sqrt(len(words) + 1), index))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen = sorted(index for _, index in scored[:count])
    return [lines[index] for index in chosen]


def write_note(payload: NoteInput) -> NoteDraft:
    """An extractive conversation note for a closed channel buffer."""
    lines = [line for line in payload.lines if line.text.strip()]
    names = _participants(lines)
    name_words = {part for name in names for part in _WORD.findall(name)}
    terms = _salient_terms([(line.author_id, line.text) for line in lines], exclude=name_words)
    entities = _entities(lines)
    top = [term.display for term in terms[:3]]
    channel = payload.channel_name.lstrip("#") or "channel"
    title = _clip(_capitalise(_join_words(top)), 80) if top else f"Conversation in #{channel}"
    about = f" about {_join_words([term.display for term in terms[:3]])}" if terms else ""
    opening = (
        f"{OFFLINE_LABEL} {_name_list(names) or 'Nobody'} talked in #{channel}{about}."
        if lines
        else f"{OFFLINE_LABEL} An empty conversation in #{channel}."
    )
    quotes = [
        f"{line.author_name}: “{_clip(line.text, 200)}”"
        for line in _representative(lines, terms, 3)
    ]
    summary = opening + (f" Key lines: {' '.join(quotes)}" if quotes else "")
    decisions = _unique(
        _clip(f"{line.author_name}: {line.text}", 240)
        for line in lines
        if _DECISION.search(line.text) and not line.text.rstrip().endswith("?")
    )
    questions = _unique(
        _clip(f"{line.author_name}: {sentence.strip()}", 240)
        for line in lines
        for sentence in _SENTENCE.findall(line.text)
        if sentence.rstrip().endswith("?") and len(_WORD.findall(sentence)) >= 3
    )
    return NoteDraft(
        title=title,
        summary=_clip(summary, 1200),
        topics=[_clip(term.display.lower(), 80) for term in _topics(terms)],
        decisions=decisions[:10],
        open_questions=questions[:10],
        entities=entities,
    )


def _topics(terms: Sequence[_Term]) -> list[_Term]:
    """The three leading terms, then up to five more that recur (score of at least 2)."""
    return [*terms[:3], *(term for term in terms[3:8] if term.score >= 2.0)]


def _unique(items: Iterable[str]) -> list[str]:
    """``items`` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


# --- profile operations --------------------------------------------------------------------

_OBJECT = r"(?P<x>[^,;:()\[\]\"“”]+)"
_ADVERBS = r"(?:(?:really|absolutely|totally|also|just|still|actually|kind of|kinda|so|truly) )*"
_PETS = (
    r"dog|cat|puppy|kitten|bird|parrot|rabbit|bunny|hamster|snake|turtle|tortoise|fish|"
    r"horse|ferret|lizard|gecko|guinea pig|rat|mouse"
)
_KIN = r"wife|husband|partner|girlfriend|boyfriend|brother|sister|son|daughter|fiancee?|roommate"
_JOBS = (
    r"engineer|developer|programmer|designer|teacher|student|nurse|doctor|artist|writer|"
    r"scientist|manager|researcher|lawyer|accountant|chef|musician|photographer|analyst|"
    r"consultant|architect|electrician|mechanic|pilot|professor|barista|streamer|editor"
)
_OBJECT_STOP = re.compile(
    r"\s+(?:but|because|since|which|so|though|although|while|when|if|lol|haha|tbh|btw|"
    r"by the way|right now|these days|nowadays|anymore|at the moment|for now|now|too|"
    r"as well)\b.*$",
    re.IGNORECASE,
)
_OBJECT_TAIL = re.compile(
    r"(?:\s+(?:more|honestly|lately|recently|anyway|again|a lot|so much|very much|yesterday|"
    r"today|ago|last (?:week|month|year|night)|this (?:week|month|year)))+$",
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
    _rule(
        r"\bi " + _ADVERBS + r"prefer (?P<x>.+?) (?:over|to|instead of) (?P<y>[^,;:()]+)",
        "opinions",
        lambda m, x: f"Prefers {x} over {_clean_object(m['y'])}",
    ),
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
        r"\bmy (?P<kind>" + _PETS + r")(?:'s name is| is named| is called| named| called|,)? "
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


def _clean_object(text: str) -> str:
    """The object of a statement, cut at its clause end and moved to the third person."""
    text = _OBJECT_STOP.sub("", _squash(text)).strip(" .!?-–—'’\"")
    text = _OBJECT_TAIL.sub("", text)
    words = [_FIRST_TO_THIRD.get(word.lower(), word) for word in text.split()]
    return " ".join(words)


def _slot_key(slot: str | None, text: str) -> tuple[str, str] | None:
    """The conflict key of a fact: one residence, one employer, one stance per object."""
    if slot is None:
        return None
    if slot == "preference":
        match = _SLOT_OF_FACT[-1][0].match(text)
        return (slot, _key(match["x"]) if match else _key(text))
    return (slot, "")


def _slot_of_fact(text: str) -> tuple[str, str] | None:
    """The conflict key of a stored fact's text, if it has one."""
    for pattern, slot in _SLOT_OF_FACT:
        if pattern.match(text.strip()):
            return _slot_key(slot, text.strip())
    return None


@dataclass(frozen=True, slots=True)
class _Statement:
    """A fact read from one of the user's sentences."""

    section: ProfileSection
    text: str
    slot: tuple[str, str] | None
    note_id: int
    evidence: str


_CLAUSE_BREAK = re.compile(
    r"(?:\s*,\s*(?:(?:and|but|so|also|plus|then)\s+)?|\s+(?:and|but|so|also|plus|then)\s+)"
    r"(?=(?:i|i'm|i've|my)\b)",
    re.IGNORECASE,
)


def _clauses(sentence: str) -> list[str]:
    """``sentence`` split where a new first-person clause starts ("…, and I work at …")."""
    parts = _CLAUSE_BREAK.split(sentence)
    return [part.strip() for part in parts if part and part.strip()]


def _statements(user_id: int, notes: Sequence[NoteView]) -> list[_Statement]:
    """First-person facts the user stated in ``notes``, in conversation order."""
    found: list[_Statement] = []
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
        for sentence in _SENTENCE.findall(line.text.replace("’", "'")):
            if sentence.rstrip().endswith("?"):
                continue
            for clause in _clauses(sentence):
                statement = _read_clause(clause, note_id, sentence)
                if statement is not None:
                    found.append(statement)
    return found


def _read_clause(clause: str, note_id: int, sentence: str) -> _Statement | None:
    """The fact the first matching rule reads from ``clause``, if any.

    Clauses that mention secrets or address the bot are dropped whole (seed 003's guard).
    """
    for rule in _RULES:
        match = rule.pattern.search(clause)
        if match is None:
            continue
        obj = _clean_object(match["x"])
        words = obj.split()
        if not words or len(words) > 8 or words[0].lower() in _VAGUE:
            continue
        if not _content_words(obj) and not obj[:1].isupper():
            continue
        if _UNSAFE.search(clause):
            return None
        text = _clip(rule.render(match, obj), 200)
        return _Statement(
            section=rule.section,
            text=text,
            slot=_slot_key(rule.slot, text),
            note_id=note_id,
            evidence=_clip(sentence, 300),
        )
    return None


def _reason(statement: _Statement) -> str:
    """Why a statement retires an older fact in its slot."""
    return _clip(f"Superseded: {statement.text}", 200)


def _apply_statements(
    payload: ProfileInput, active: Sequence[FactView]
) -> tuple[list[AddFact], dict[int, str]]:
    """Adds and invalidations that the user's own statements imply for ``active`` facts.

    A statement already in the profile adds nothing; one that fills the slot of an older
    fact (a new home, a new employer, the opposite stance on the same thing) retires it.
    """
    known = {_key(fact.text) for fact in active}
    slots = {fact.id: _slot_of_fact(fact.text) for fact in active}
    adds: list[AddFact] = []
    pending_slots: list[tuple[str, str] | None] = []
    invalidated: dict[int, str] = {}
    for statement in _statements(payload.user_id, payload.notes):
        key = _key(statement.text)
        if key in known:
            continue
        if statement.slot is not None:
            for fact in active:
                if slots[fact.id] == statement.slot and fact.id not in invalidated:
                    invalidated[fact.id] = _reason(statement)
                    known.discard(_key(fact.text))
            for index in reversed(range(len(adds))):
                if pending_slots[index] == statement.slot:
                    known.discard(_key(adds[index].text))
                    del adds[index], pending_slots[index]
        known.add(key)
        adds.append(
            AddFact(
                op="add",
                section=statement.section,
                text=statement.text,
                note_id=statement.note_id,
                evidence=statement.evidence,
            )
        )
        pending_slots.append(statement.slot)
    return adds, invalidated


def profile_operations(payload: ProfileInput) -> ProfileOperations:
    """Operations a new note implies for the user's profile, from their own statements."""
    adds, invalidated = _apply_statements(payload, payload.facts)
    operations: list[ProfileOperation] = [
        InvalidateFact(op="invalidate", fact_id=fact_id, reason=reason)
        for fact_id, reason in sorted(invalidated.items())
    ]
    operations.extend(adds)
    return ProfileOperations(operations=operations[:40])


def _near_duplicates(a: FactView, b: FactView) -> bool:
    """Whether two facts say the same thing (same words, give or take a few)."""
    if _key(a.text) == _key(b.text):
        return True
    words_a, words_b = _content_words(a.text), _content_words(b.text)
    if not words_a or not words_b:
        return False
    return len(words_a & words_b) / len(words_a | words_b) >= 0.75


def consolidate_profile(payload: ProfileInput) -> ProfileOperations:
    """The nightly consolidation: retire superseded facts, merge duplicates, add new facts.

    Of several facts in one slot (two homes, two employers) only the newest (highest id)
    stays. Near-duplicate facts in one section merge into the longest wording.
    """
    invalidated: dict[int, str] = {}
    newest: dict[tuple[str, str], FactView] = {}
    for fact in sorted(payload.facts, key=lambda fact: fact.id):
        slot = _slot_of_fact(fact.text)
        if slot is None:
            continue
        older = newest.get(slot)
        if older is not None and _key(older.text) != _key(fact.text):
            invalidated[older.id] = _clip(f"Superseded by fact #{fact.id}: {fact.text}", 200)
        newest[slot] = fact
    active = [fact for fact in payload.facts if fact.id not in invalidated]
    adds, retired = _apply_statements(payload, active)
    for fact_id, reason in retired.items():
        invalidated.setdefault(fact_id, reason)
    remaining = sorted(
        (fact for fact in active if fact.id not in invalidated), key=lambda fact: fact.id
    )
    merges: list[MergeFacts] = []
    grouped: set[int] = set()
    for index, fact in enumerate(remaining):
        if fact.id in grouped:
            continue
        group = [fact] + [
            other
            for other in remaining[index + 1 :]
            if other.id not in grouped
            and other.section == fact.section
            and _near_duplicates(fact, other)
        ]
        if len(group) < 2:
            continue
        grouped.update(member.id for member in group)
        wording = max(group, key=lambda member: (len(member.text), member.id))
        merges.append(
            MergeFacts(
                op="merge",
                fact_ids=[member.id for member in group][:20],
                text=_clip(wording.text, 200),
                section=_section(fact.section),
            )
        )
    operations: list[ProfileOperation] = [
        InvalidateFact(op="invalidate", fact_id=fact_id, reason=reason)
        for fact_id, reason in sorted(invalidated.items())
    ]
    operations.extend(merges)
    operations.extend(adds)
    return ProfileOperations(operations=operations[:40])


_SECTIONS: dict[str, ProfileSection] = {section: section for section in PROFILE_SECTIONS}


def _section(name: str) -> ProfileSection:
    """``name`` as a profile section, ``"other"`` when it is not one."""
    return _SECTIONS.get(name, "other")


# --- topic clusters ------------------------------------------------------------------------


def _note_terms(note: NoteView) -> list[_Term]:
    """Salient terms of a note; the title counts twice."""
    texts = [(0, note.title), (1, note.title), (2, note.summary.removeprefix(OFFLINE_LABEL))]
    texts.extend((line.author_id, line.text) for line in note.lines)
    names = {part for name in note.participants for part in _WORD.findall(name)}
    return _salient_terms(texts, exclude=names)


def cluster_notes(payload: ClusterInput) -> ClusterDraft:
    """Topic clusters of a day's notes: notes sharing a salient term go together.

    Notes are taken in id order and join the cluster whose terms they share most; at most
    eight clusters result, the smallest folded into "Other conversations".
    """
    notes = sorted(payload.notes, key=lambda note: note.id)
    groups: list[tuple[list[NoteView], Counter[str], dict[str, str]]] = []
    for note in notes:
        terms = _note_terms(note)[:5]
        keys = {term.key for term in terms}
        best: tuple[int, int] | None = None
        for index, (_, counter, _) in enumerate(groups):
            shared = len(keys & set(counter))
            if shared and (best is None or shared > best[0]):
                best = (shared, index)
        if best is None:
            groups.append(([], Counter(), {}))
            target = groups[-1]
        else:
            target = groups[best[1]]
        target[0].append(note)
        for term in terms:
            target[1][term.key] += 1
            target[2].setdefault(term.key, term.display)
    groups.sort(key=lambda group: (-len(group[0]), group[0][0].id))
    if len(groups) > 8:
        rest = [note for group in groups[7:] for note in group[0]]
        groups = [*groups[:7], (sorted(rest, key=lambda note: note.id), Counter(), {})]
    clusters = [_draft_cluster(members, counter, displays) for members, counter, displays in groups]
    return ClusterDraft(clusters=clusters)


def _draft_cluster(
    members: Sequence[NoteView], counter: Counter[str], displays: dict[str, str]
) -> DraftCluster:
    """One cluster's title and extractive summary."""
    shared = [displays[key] for key, _ in counter.most_common() if counter[key] > 1][:3]
    if len(members) == 1:
        title = members[0].title
    elif shared:
        title = _capitalise(_join_words(shared))
    else:
        title = "Other conversations"
    people = _unique(name for note in members for name in note.participants)
    listing = "; ".join(f"{_clip(note.title, 80)} ({note.date})" for note in members)
    topic = f" about {_join_words(shared)}" if shared else ""
    count = f"{len(members)} conversation{'s' if len(members) != 1 else ''}"
    summary = f"{OFFLINE_LABEL} {count}{topic}: {listing}."
    if people:
        summary += f" Participants: {_name_list(people, limit=8)}."
    return DraftCluster(
        title=_clip(title, 80) or "Conversation",
        summary=_clip(summary, 1200),
        source_note_ids=[note.id for note in members][:100],
    )


# --- embeddings ----------------------------------------------------------------------------


def _stem(word: str) -> str:
    """A light suffix strip so "games"/"game" and "learning"/"learn" share a feature."""
    for suffix, replacement, keep in (("ies", "y", 3), ("ing", "", 4), ("ed", "", 4), ("s", "", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + replacement
    return word


def _feature_index(feature: str, dimension: int) -> tuple[int, float]:
    """A stable bucket and sign for ``feature`` (blake2b, never Python's salted hash)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    sign = -1.0 if digest >> 63 else 1.0
    return digest % dimension, sign


def hash_embedding(text: str, dimension: int = 768) -> list[float]:
    """A deterministic, L2-normalised feature-hashing embedding of ``text``.

    Features are stemmed word unigrams (weight 1) and bigrams (weight 0.7) with sublinear
    term frequency; stopwords are dropped unless nothing else is left. Each feature adds its
    weight, with a hashed sign, to one of ``dimension`` buckets.
    """
    words = [word.lower().strip("'’-_") for word in _WORD.findall(text)]
    words = [word for word in words if word]
    content = [_stem(word) for word in words if word not in _STOPWORDS]
    if not content:
        content = [_stem(word) for word in words]
    features: Counter[str] = Counter(f"u:{word}" for word in content)
    features.update(f"b:{a} {b}" for a, b in pairwise(content))
    vector = [0.0] * dimension
    for feature, count in features.items():
        weight = (1.0 if feature.startswith("u:") else 0.7) * (1.0 + math.log(count))
        index, sign = _feature_index(feature, dimension)
        vector[index] += sign * weight
    try:
        return l2_normalise(vector)
    except ValueError:
        index, sign = _feature_index("<empty>", dimension)
        vector = [0.0] * dimension
        vector[index] = sign
        return vector


# --- chat ----------------------------------------------------------------------------------

_TAG = re.compile(r"^\s*</?[A-Za-z_][\w-]*(?:\s[^>]*)?>\s*$")
_USER_TAG = re.compile(r'^\s*<user name="(?P<name>[^"]*)">\s*$')


def offline_chat_answer(request: ChatRequest, *, limit: int = 1800) -> str:
    """A deterministic reply that reads back the memory lines relevant to the last message.

    Lines of the ``<background_facts>`` block that share words with the latest user turn
    come first; without any overlap the first lines are shown. The reply says it is offline.
    """
    facts: list[str] = []
    person: str | None = None
    for raw in request.memory_context.splitlines():
        user = _USER_TAG.match(raw)
        if user:
            person = user["name"]
            continue
        if _TAG.match(raw):
            if raw.strip().startswith("</user"):
                person = None
            continue
        line = raw.strip()
        if not line.startswith("- "):
            continue
        body = line[2:].strip()
        facts.append(f"- {person}: {body}" if person else f"- {body}")
    if not facts:
        return (
            "(offline mode) I can't think things through right now, and I don't remember "
            "anything about this yet."
        )
    last = next((turn.text for turn in reversed(request.turns) if turn.role == "user"), "")
    query = _content_words(last)
    scored = [(len(query & _content_words(fact)), index) for index, fact in enumerate(facts)]
    relevant = [index for score, index in scored if score > 0]
    if relevant:
        ranked = sorted(relevant, key=lambda index: (-scored[index][0], index))[:8]
        chosen = sorted(ranked)
    else:
        chosen = list(range(min(8, len(facts))))
    text = "(offline mode) I can't think things through right now, but here is what I remember:"
    for index in chosen:
        candidate = f"{text}\n{facts[index]}"
        if len(candidate) > limit:
            break
        text = candidate
    return text


# --- the provider --------------------------------------------------------------------------


class OfflineLLM:
    """The LLM port without a key or network: deterministic extracts, rules and hashing."""

    def __init__(self, *, dimension: int = 768) -> None:
        if dimension < 1:
            raise ConfigError("the embedding dimension must be positive")
        self.dimension = dimension
        self.embedding_model = OFFLINE_EMBEDDING_MODEL
        self.quality = OFFLINE_QUALITY

    def model_for(self, tier: ModelTier) -> str:
        """Always :data:`OFFLINE_MODEL`; the offline provider has no tiers."""
        return OFFLINE_MODEL

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """An offline answer computed from ``request.payload``, validated like any other."""
        await anyio.lowlevel.checkpoint()
        payload = request.payload
        value: NoteDraft | ProfileOperations | ClusterDraft
        if isinstance(payload, NoteInput) and request.schema is NoteDraft:
            value = write_note(payload)
        elif isinstance(payload, ProfileInput) and request.schema is ProfileOperations:
            if request.operation is Operation.PROFILE_CONSOLIDATION:
                value = consolidate_profile(payload)
            else:
                value = profile_operations(payload)
        elif isinstance(payload, ClusterInput) and request.schema is ClusterDraft:
            value = cluster_notes(payload)
        else:
            raise LLMError(
                f"the offline provider cannot answer {request.operation.value} requests "
                f"with a {type(payload).__name__} payload and {request.schema.__name__} schema"
            )
        parsed = request.schema.model_validate(value.model_dump())
        return Generation(value=parsed, usage=Usage(), model=OFFLINE_MODEL, quality=self.quality)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Hashing embeddings; documents and queries are embedded alike."""
        await anyio.lowlevel.checkpoint()
        return [hash_embedding(text, self.dimension) for text in texts]

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """A reply that reads back the relevant remembered facts, marked as offline."""
        await anyio.lowlevel.checkpoint()
        return ChatAnswer(
            text=offline_chat_answer(request),
            usage=Usage(),
            model=OFFLINE_MODEL,
            quality=self.quality,
        )

    async def aclose(self) -> None:
        """Nothing to release."""
        await anyio.lowlevel.checkpoint()
