"""Conversation notes: the extractive title, summary, topics, decisions and questions.

:func:`write_note` turns a closed buffer's transcript into a :class:`NoteDraft` from its
salient phrases, a few representative quoted lines and the lines that state decisions or
ask questions, leaving out lines aimed at the bot.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

from vivy.llm.offline.phrases import Term, Token, entities, salient_terms, tokenize
from vivy.llm.offline.text import (
    OFFLINE_LABEL,
    capitalise,
    clip,
    name_list,
    split_sentences,
    unique,
)
from vivy.llm.offline.words import CALENDAR, PETS, fold_plural, word_kind
from vivy.llm.schemas import NoteDraft, NoteInput, TranscriptLine
from vivy.memory.guards import looks_like_instruction
from vivy.text.markup import plain, readable, talks_to_outsider
from vivy.text.terms import COMPOUND

__all__ = ["TITLE_LIMIT", "write_note"]

_DECISION = re.compile(
    r"\b(let['’]?s|let us|we['’]ll|we will|we['’]?re going to|we are going to|decided|"
    r"decision|agreed|going with|the plan is|plan is to)\b",
    re.IGNORECASE,
)


#: The longest offline note title, in characters.
TITLE_LIMIT = 60

_NAME = r"(?-i:[A-Z])[\w'-]*"
#: "my dog is named Bento" or "I have a fish named Gerald": the speaker's pet, by name.
_PET_NAMED = re.compile(
    r"\b(?:my|i (?:have|got|own) (?:an?|one|two|three|\w+))\s+(?P<kind>" + PETS + r")"
    r"(?:'s name is| is named| is called| named| called)\s+(?P<name>" + _NAME + r")",
    re.IGNORECASE,
)
#: "I moved to Denver": a move, by destination.
_MOVED_TO = re.compile(
    r"\b(?:moved|moving|relocated|relocating) (?:to|into) "
    r"(?P<place>" + _NAME + r"(?: " + _NAME + r"){0,2})",
    re.IGNORECASE,
)
#: Nouns naming an event that a decision may schedule ("game night", "dinner").
_EVENT_NOUNS = frozenset(
    "night party dinner lunch breakfast brunch trip meetup meet-up session stream hangout "
    "raid tournament match movie".split()
)
#: A command to another bot ("m!play …", "!skip"), not conversation.
_BOT_COMMAND = re.compile(r"^\s*(?:[!$%&;~>+=-]{1,2}|[a-z]{1,2}[!$%;>]{1,2})[a-z]+\b", re.I)


def _participants(lines: Sequence[TranscriptLine]) -> list[str]:
    """Display names of the authors of ``lines``, the most active first (ties: who spoke
    first)."""
    counts: Counter[int] = Counter(line.author_id for line in lines)
    seen: dict[int, str] = {}
    for line in lines:
        seen.setdefault(line.author_id, line.author_name)
    order = list(seen)
    ranked = sorted(order, key=lambda author: (-counts[author], order.index(author)))
    return [seen[author] for author in ranked]


def _introductions(lines: Sequence[TranscriptLine]) -> dict[str, str]:
    """Fuller names for things the speakers introduce, keyed by the short name in lower
    case: "bento" → "Sam's dog Bento", "denver" → "moving to Denver"."""
    found: dict[str, str] = {}
    for line in lines:
        text = plain(line.text)
        for match in _PET_NAMED.finditer(text):
            kind = match["kind"].lower()
            found.setdefault(match["name"].lower(), f"{line.author_name}'s {kind} {match['name']}")
        for match in _MOVED_TO.finditer(text):
            found.setdefault(match["place"].lower(), f"moving to {match['place']}")
    return found


def _plan(lines: Sequence[TranscriptLine]) -> Term | None:
    """The event the first decision schedules ("let's do the game night on Friday" →
    "game night plans"), if a decision names one."""
    for line in lines:
        if not _is_decision(line.text):
            continue
        for tokens in tokenize(line.text):
            for index in range(len(tokens)):
                event = _event_phrase(tokens, index)
                if event is not None:
                    return event
    return None


def _event_phrase(tokens: Sequence[Token], index: int) -> Term | None:
    """The event phrase ending at ``tokens[index]`` with up to two words before it, if
    that word is an event noun heading its phrase ("game night", not "game night scores")."""
    if fold_plural(tokens[index].word) not in _EVENT_NOUNS:
        return None
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if following is not None and following.joined and word_kind(following.word, False) == "content":
        return None
    start = index
    while (
        start > max(0, index - 2)
        and tokens[start].joined
        and word_kind(tokens[start - 1].word, False) in {"content", "generic", "modifier"}
        and tokens[start - 1].word not in CALENDAR
    ):
        start -= 1
    words = tokens[start : index + 1]
    shown = " ".join(word.raw if word.caps and not word.initial else word.word for word in words)
    key = " ".join(fold_plural(word.word) for word in words)
    return Term(key=key, display=f"{shown} plans", score=0.0, first=0)


def _headline(terms: Sequence[Term], lines: Sequence[TranscriptLine]) -> list[Term]:
    """The one or two topics a title names, in their fullest form.

    The leading phrase comes first; then a scheduled event ("game night plans") if a
    decision names one, else the next phrase that shares no word with the lead and carries
    at least a third of its weight. A pet or a move the speakers introduce is named in
    full ("Sam's dog Bento", "moving to Denver").
    """
    chosen: list[Term] = []
    if terms:
        lead = terms[0]
        chosen.append(lead)
        lead_words = set(lead.key.split())
        plan = _plan(lines)
        if plan is not None and lead_words & set(plan.key.split()):
            chosen = [replace(plan, score=lead.score)]
        elif plan is not None:
            chosen.append(replace(plan, score=lead.score))
        else:
            for term in terms[1:6]:
                if term.score < 0.3 * lead.score:
                    break
                if not lead_words & set(term.key.split()):
                    chosen.append(term)
                    break
    else:
        plan = _plan(lines)
        chosen = [plan] if plan is not None else []
    fuller = _introductions(lines)
    return [replace(term, display=fuller.get(term.key, term.display)) for term in chosen]


def _title(headline: Sequence[Term], channel: str) -> str:
    """A short noun-phrase title: "Postgres and Rust", "Sam's dog Bento and Maya's cat
    Miso"; one topic alone when two would pass :data:`TITLE_LIMIT`."""
    if not headline:
        return clip(f"Conversation in #{channel}", TITLE_LIMIT)
    title = capitalise(" and ".join(term.display for term in headline))
    if len(title) > TITLE_LIMIT:
        title = clip(capitalise(headline[0].display), TITLE_LIMIT)
    return title


def _topics(terms: Sequence[Term]) -> list[str]:
    """Up to eight topic phrases: the leading one, then those with some weight (more than
    a single passing mention), each adding a word no earlier topic has."""
    topics: list[str] = []
    keys: list[str] = []
    covered: set[str] = set()
    for index, term in enumerate(terms):
        if len(topics) == 8:
            break
        if index > 0 and term.score < 2.0:
            continue
        words = set(term.key.split())
        if words <= covered or any(_within(term.key, key) for key in keys):
            continue
        topics.append(clip(term.display, 80))
        keys.append(term.key)
        covered |= words
    return topics


def _within(a: str, b: str) -> bool:
    """Whether one of two phrase keys contains the other ("web" and "web app")."""
    return f" {a} " in f" {b} " or f" {b} " in f" {a} "


def _is_chatter(line: TranscriptLine) -> bool:
    """Whether ``line`` is not conversation to learn from: an instruction to the bot, an
    authority claim or secret (the injection guard), or a command to another bot."""
    return looks_like_instruction(line.text) or _BOT_COMMAND.match(line.text) is not None


def _quotable(line: TranscriptLine, names: Mapping[int, str]) -> bool:
    """Whether ``line`` may be quoted in a summary: several words, and not aimed at the bot
    (which the summary would only echo)."""
    if talks_to_outsider(line.text, names):
        return False
    return len(COMPOUND.findall(plain(line.text))) >= 4


@lru_cache(maxsize=4096)
def _line_keys(text: str) -> frozenset[str]:
    """The folded words of ``text`` and their runs of two and three, to match phrase keys."""
    keys: set[str] = set()
    for tokens in tokenize(text):
        words = [fold_plural(token.word.removesuffix("'s")) for token in tokens]
        for size in (1, 2, 3):
            keys.update(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
    return frozenset(keys)


def _representative(
    lines: Sequence[TranscriptLine],
    terms: Sequence[Term],
    headline: Sequence[Term],
    count: int,
    names: Mapping[int, str],
) -> list[TranscriptLine]:
    """The ``count`` quotable lines that best show what the conversation was about.

    A line earns the weight of the leading phrases it mentions (the headline's double), a
    decision as much again as the lead phrase, and a bonus where it first brings up a
    headline topic; long lines are damped. Lines are picked greedily, each pick halving the
    weight of the phrases it covered and preferring authors not quoted yet, and come back in
    conversation order.
    """
    weights = {term.key: term.score for term in terms[:10]}
    for term in headline:
        weights[term.key] = 2 * max(term.score, weights.get(term.key, 0.0))
    lead = max(weights.values(), default=0.0) / 2
    introduced: set[str] = set()
    weighted = set(weights)
    candidates: dict[int, tuple[set[str], float, float]] = {}
    for index, line in enumerate(lines):
        keys = weighted & _line_keys(line.text)
        bonus = 1.3 if any(term.key in keys - introduced for term in headline) else 1.0
        introduced |= keys
        if not _quotable(line, names):
            continue
        extra = lead if _is_decision(line.text) else 0.0
        damping = math.sqrt(max(len(COMPOUND.findall(line.text)), 10))
        candidates[index] = (keys, bonus / damping, extra)
    chosen: list[int] = []
    quoted: set[int] = set()
    while len(chosen) < count:
        best: tuple[float, int] | None = None
        for index, (keys, factor, extra) in candidates.items():
            if index in chosen or not (keys or extra):
                continue
            weight = math.fsum([*(weights[key] for key in keys), extra]) * factor
            if lines[index].author_id in quoted:
                weight *= 0.5
            if best is None or weight > best[0]:
                best = (weight, index)
        if best is None:
            break
        chosen.append(best[1])
        quoted.add(lines[best[1]].author_id)
        for key in candidates[best[1]][0]:
            weights[key] /= 2
    return [lines[index] for index in sorted(chosen)]


def write_note(payload: NoteInput) -> NoteDraft:
    """An extractive conversation note for a closed channel buffer.

    The summary says who talked about what and quotes a few representative lines. Lines
    that read as instructions to the bot (or commands to other bots) are left out of
    everything but the participants, so an injection attempt never shapes the note.
    """
    lines = [line for line in payload.lines if line.text.strip()]
    channel = payload.channel_name.lstrip("#") or "channel"
    if not lines:
        return NoteDraft(
            title=clip(f"Conversation in #{channel}", TITLE_LIMIT),
            summary=f"{OFFLINE_LABEL} An empty conversation in #{channel}.",
        )
    names = {line.author_id: line.author_name for line in lines}
    people = _participants(lines)
    talk = [line for line in lines if not _is_chatter(line)]
    name_words = {part for name in people for part in COMPOUND.findall(name)}
    terms = salient_terms([(line.author_id, line.text) for line in talk], exclude=name_words)
    headline = _headline(terms, talk)
    about = " and ".join(term.display for term in headline)
    opening = f"{OFFLINE_LABEL} {name_list(people)} talked in #{channel}"
    opening += f" about {about}." if about else "."
    quotes = [
        f"{line.author_name}: “{clip(readable(line.text, names), 180)}”"
        for line in _representative(talk, terms, headline, 3 if len(talk) >= 8 else 2, names)
    ]
    summary = opening + (f" Key lines: {'; '.join(quotes)}." if quotes else "")
    decisions = unique(
        clip(f"{line.author_name}: {readable(line.text, names)}", 240)
        for line in talk
        if _is_decision(line.text)
    )
    questions = unique(
        clip(f"{line.author_name}: {readable(sentence, names)}", 240)
        for line in talk
        if not talks_to_outsider(line.text, names)
        for sentence in split_sentences(line.text)
        if sentence.endswith("?") and len(COMPOUND.findall(plain(sentence))) >= 3
    )
    return NoteDraft(
        title=_title(headline, channel),
        summary=clip(summary, 1200),
        topics=_topics(terms),
        decisions=decisions[:10],
        open_questions=questions[:10],
        entities=entities(talk, exclude=name_words),
    )


@lru_cache(maxsize=4096)
def _is_decision(text: str) -> bool:
    """Whether ``text`` states a plan or decision, not a question or a cheer ("LETS GO")."""
    if text.rstrip().endswith("?") or len(COMPOUND.findall(text)) < 4:
        return False
    return _DECISION.search(text) is not None
