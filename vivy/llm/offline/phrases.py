"""Salient phrases and names: what a conversation is about, read from its words.

Messages become tokens (with their casing and spacing), runs of topic words become
candidate phrases of one to three words, and phrases are ranked by how much the talk is
about them; runs of capitalised words become named entities.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from vivy.llm.offline.text import ABBREVIATIONS, STOPWORDS, clip, split_sentences
from vivy.llm.offline.words import CALENDAR, SUBJECTS, fold_plural, word_kind
from vivy.llm.schemas import TranscriptLine
from vivy.text.markup import plain
from vivy.text.terms import COMPOUND

__all__ = ["Term", "Token", "entities", "salient_terms", "tokenize"]


@dataclass(frozen=True, slots=True)
class Token:
    """A word of a message as the phrase finder sees it."""

    raw: str
    word: str
    caps: bool
    initial: bool
    joined: bool


@dataclass(frozen=True, slots=True)
class Term:
    """A salient phrase, with the surface form to display, its score and first position."""

    key: str
    display: str
    score: float
    first: int
    proper: bool = False
    aliases: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Phrase:
    """Occurrences of one candidate phrase while a conversation is read."""

    key: tuple[str, ...]
    first: int
    count: int = 0
    authors: set[int] = field(default_factory=set)
    forms: Counter[tuple[str, ...]] = field(default_factory=Counter)
    proper: bool = False
    weak: bool = False


@lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[tuple[Token, ...], ...]:
    """The words of ``text``, sentence by sentence, with their casing and spacing.

    A note reads each line several times (phrases, entities, quotes, plans), so the answer
    is memoised; it is immutable, and shared.
    """
    result: list[tuple[Token, ...]] = []
    for sentence in split_sentences(plain(text)):
        tokens: list[Token] = []
        end = 0
        for match in COMPOUND.finditer(sentence):
            raw = match.group().replace("’", "'")
            if raw.lower().endswith("'s") and len(raw) > 2:
                raw = raw[:-2] + "'s"
            gap = sentence[end : match.start()].strip()
            end = match.end()
            if not raw:
                continue
            if gap == "." and tokens and tokens[-1].word in ABBREVIATIONS:
                tokens[-1] = replace(tokens[-1], raw=tokens[-1].raw + ".")
                gap = ""
            shouted = raw.isupper() and len(raw) > 4
            tokens.append(
                Token(
                    raw=raw,
                    word=raw.lower(),
                    caps=raw[0].isupper() and not shouted,
                    initial=not tokens,
                    joined=bool(tokens) and not gap,
                )
            )
        if tokens:
            result.append(tuple(tokens))
    return tuple(result)


#: Lower-case words that are acronyms, shown in capitals ("discord ID", "the API").
_ACRONYMS = frozenset(
    "api cli csv db ci id os pr qa sql ui ux url dm pc gpu cpu rpg jrpg mmo fps ai tv faq pdf "
    "vpn ssh dns aws gcp npc dlc ram ssd".split()
)


def _is_acronym(raw: str) -> bool:
    """Whether ``raw`` is written like an acronym ("DRG", "XC2", "PR")."""
    return 2 <= len(raw) <= 4 and raw.isupper() and raw[:1].isalpha()


#: Word classes that can be part of a phrase.
_PHRASE_KINDS = frozenset({"content", "generic", "modifier", "possessive", "number"})
#: Word classes that can open a phrase (a number only continues one).
_OPENING_KINDS = _PHRASE_KINDS - {"number"}
#: Words that may stand between a subject and its verb ("I mostly live", "we should grab").
_BETWEEN_SUBJECT_AND_VERB = frozenset(
    "just also still really actually always never even totally probably finally already only "
    "mostly usually often kinda literally basically definitely not sometimes rarely".split()
)


def salient_terms(texts: Sequence[tuple[int, str]], *, exclude: Iterable[str] = ()) -> list[Term]:
    """Noun phrases of ``texts`` (author id, text), ranked by how much the talk is about them.

    Verbs, adverbs and chat noise break phrases, and generic words ("night", "game") or
    describing words ("free", "eastern") cannot be a topic alone; runs of the remaining words
    give candidate phrases of one to three words, plus names such as "Fields of Mistria". A
    phrase scores by its frequency, boosted when several authors use it, when it is longer
    and when it is a name (capitalised mid-sentence, or an acronym). Phrases of two or more
    words need two mentions unless they are names. A phrase that mostly occurs inside a
    longer one gives way to it (and lends it its mentions when it is the longer one's start,
    as "Stardew" is of "Stardew co-op"); an acronym folds into the name it abbreviates
    ("DRG" into "Deep Rock Galactic"). Ties go to the earlier phrase.
    """
    excluded = {word.lower() for word in exclude}
    sentences = [(author, tokens) for author, text in texts for tokens in tokenize(text)]
    proper_words = {
        token.word
        for _, tokens in sentences
        for token in tokens
        if token.caps and (not token.initial or _is_acronym(token.raw))
    }
    phrases: dict[tuple[str, ...], _Phrase] = {}
    position = 0

    def add(run: Sequence[tuple[Token, str]], author: int, is_name: bool) -> None:
        key = tuple(_phrase_word(token, kind) for token, kind in run)
        phrase = phrases.get(key)
        if phrase is None:
            phrase = phrases[key] = _Phrase(key=key, first=position)
        phrase.count += 1
        phrase.authors.add(author)
        phrase.forms[tuple(token.raw for token, _ in run)] += 1
        phrase.proper = phrase.proper or is_name
        phrase.weak = all(kind != "content" for _, kind in run)

    for author, tokens in sentences:
        run: list[tuple[Token, str]] = []
        after_subject = False
        for index, token in enumerate(tokens):
            position += 1
            kind = _kind(token, after_subject, excluded, proper_words)
            after_subject = token.word in SUBJECTS or (
                after_subject
                and (token.word in _BETWEEN_SUBJECT_AND_VERB or token.word.endswith("ly"))
            )
            if kind in _PHRASE_KINDS and token.joined and run:
                run.append((token, kind))
            else:
                if run:
                    _count_run(run, author, proper_words, add)
                run = [(token, kind)] if kind in _OPENING_KINDS else []
            if token.word == "of":
                name = _name_with_connector(tokens, index, proper_words)
                if name is not None:
                    add([(part, "content") for part in name], author, True)
        _count_run(run, author, proper_words, add)
    return _rank(phrases, proper_words)


def _phrase_word(token: Token, kind: str) -> str:
    """The counting form of a phrase word: lower case, possessive and plural folded."""
    if kind == "possessive":
        return token.word
    return fold_plural(token.word.removesuffix("'s"))


def _kind(token: Token, after_subject: bool, excluded: set[str], proper: set[str]) -> str:
    """The class of ``token`` in context (see :func:`word_kind`), with names and numbers."""
    word = token.word
    if word.endswith("'s") and word[:-2] in excluded:
        return "possessive"
    if word in excluded or word.removesuffix("'s") in excluded:
        return "noise"
    if word.isdigit():
        return "number" if len(word) <= 3 else "noise"
    if word[:1].isdigit():
        return "noise"
    kind = word_kind(word.removesuffix("'s"), after_subject)
    named = token.caps and word in proper and not _is_acronym(token.raw)
    if named and kind in {"verb", "generic", "modifier"} and word not in CALENDAR:
        return "content"
    if kind == "content" and len(word) < 3 and not _is_acronym(token.raw):
        return "content" if word in _ACRONYMS else "noise"
    return kind


def _name_with_connector(
    tokens: Sequence[Token], index: int, proper: set[str]
) -> list[Token] | None:
    """A name spanning "of" at ``index`` ("Fields of Mistria"), if there is one."""
    if not 0 < index < len(tokens) - 1 or tokens[index].word != "of":
        return None
    before, after = tokens[index - 1], tokens[index + 1]
    if not (before.caps and after.caps and before.word in proper and after.word in proper):
        return None
    start = index - 1
    while start > 0 and tokens[start].joined and tokens[start - 1].caps:
        start -= 1
    return list(tokens[start : index + 2])


def _count_run(
    run: Sequence[tuple[Token, str]],
    author: int,
    proper: set[str],
    add: Callable[[Sequence[tuple[Token, str]], int, bool], None],
) -> None:
    """Count every phrase of one to three words inside ``run``, and names of four to six
    capitalised words ("Lakeview Animal Clinic Downtown") whole."""
    named = [token.caps and token.word in proper for token, _ in run]
    start = 0
    while start < len(run):
        end = start
        while end < len(run) and named[end]:
            end += 1
        if 4 <= end - start <= 6:
            add(run[start:end], author, True)
        start = max(end, start + 1)
    for start in range(len(run)):
        for size in range(1, 4):
            piece = run[start : start + size]
            if len(piece) < size:
                break
            kinds = [kind for _, kind in piece]
            if kinds[0] == "number" or kinds[-1] in {"modifier", "possessive"}:
                continue
            if "possessive" in kinds[1:]:
                continue
            if size == 1 and kinds[0] != "content":
                continue
            words = [token for token, kind in piece if kind != "number"]
            is_name = all(token.caps and token.word in proper for token in words)
            add(piece, author, is_name)


def _rank(phrases: dict[tuple[str, ...], _Phrase], proper: set[str]) -> list[Term]:
    """Qualifying phrases as ranked :class:`Term` objects (see :func:`salient_terms`)."""
    pool = {
        key: phrase
        for key, phrase in phrases.items()
        if len(key) == 1 or phrase.count >= 2 or phrase.proper
    }
    for key, phrase in list(pool.items()):
        letters = [word for word in key if word[:1].isalpha()]
        if len(letters) < 2 or not phrase.proper:
            continue
        short = pool.get(("".join(word[0] for word in letters),))
        if short is not None and short is not phrase:
            phrase.count += short.count
            phrase.authors |= short.authors
            phrase.first = min(phrase.first, short.first)
            del pool[short.key]
    containers: defaultdict[tuple[str, ...], list[_Phrase]] = defaultdict(list)
    for key, phrase in pool.items():
        for size in range(1, len(key)):
            for start in range(len(key) - size + 1):
                containers[key[start : start + size]].append(phrase)
    absorbed: list[tuple[_Phrase, _Phrase]] = []
    parents: dict[tuple[str, ...], _Phrase] = {}
    kept: list[_Phrase] = []
    for key, phrase in pool.items():
        outer = [other for other in containers[key] if other.count >= 0.6 * phrase.count]
        if not outer:
            kept.append(phrase)
            continue
        best = max(outer, key=lambda other: (other.count, len(other.key), other.key))
        if best.proper or best.key[: len(key)] == key:  # "Stardew" in "Stardew co-op"
            parents[key] = best
            absorbed.append((best, phrase))
    for outer_phrase, inner in absorbed:
        outer_phrase.count = max(outer_phrase.count, inner.count)
        outer_phrase.authors |= inner.authors
    aliases: defaultdict[tuple[str, ...], list[_Phrase]] = defaultdict(list)
    for key in parents:
        root = parents[key]
        while root.key in parents:  # parents are strictly longer, so this ends
            root = parents[root.key]
        aliases[root.key].append(pool[key])
    terms = [_term(phrase, proper, aliases[phrase.key]) for phrase in kept]
    terms.sort(key=lambda term: (-term.score, term.first, term.key))
    return terms


def _term(phrase: _Phrase, proper: set[str], aliases: Sequence[_Phrase] = ()) -> Term:
    """The scored, displayable form of ``phrase``; ``aliases`` are the shorter phrases it
    stood in for ("Elden Ring" in "Elden Ring bosses")."""
    size = len(phrase.key)
    named = phrase.proper or any(word in proper for word in phrase.key)
    score = (
        phrase.count
        * (1.0 + 0.5 * min(len(phrase.authors) - 1, 3))
        * (1.0 + 0.6 * (size - 1))
        * (1.5 if named else 1.0)
        * (0.7 if phrase.weak else 1.0)
    )
    return Term(
        key=" ".join(phrase.key),
        display=_display(phrase, proper),
        score=score,
        first=phrase.first,
        proper=phrase.proper,
        aliases=tuple((" ".join(alias.key), _display(alias, proper)) for alias in aliases),
    )


#: A word written like code ("rows.Close", "game_nights"), shown exactly as written.
_CODE_LIKE = re.compile(r"[._]|[a-z][A-Z]")


def _display(phrase: _Phrase, proper: set[str]) -> str:
    """How ``phrase`` is written: each word in its most common form, lower case unless it
    is a name (capitalised mid-sentence somewhere, an acronym or a participant's)."""
    words: list[str] = []
    for index in range(len(phrase.key)):
        spellings: Counter[str] = Counter()
        for written, count in phrase.forms.items():
            spellings[written[index]] += count
        named = [
            spelling
            for spelling in spellings
            if spelling[:1].isupper()
            and not (spelling.isupper() and len(spelling) > 4)
            and (spelling.lower() in proper or spelling.lower().endswith("'s"))
        ]
        if named:
            words.append(max(named, key=lambda spelling: (spellings[spelling], spelling)))
            continue
        code = [spelling for spelling in spellings if _CODE_LIKE.search(spelling)]
        if code:
            words.append(max(code, key=lambda spelling: (spellings[spelling], spelling)))
            continue
        lowered: Counter[str] = Counter()
        for spelling, count in spellings.items():
            lowered[spelling.lower()] += count
        shown = max(lowered, key=lambda spelling: (lowered[spelling], spelling))
        words.append(shown.upper() if fold_plural(shown) in _ACRONYMS else shown)
    return " ".join(words)


def _name_like(token: Token) -> bool:
    """Whether ``token`` can be part of a name: capitalised and not a stopword."""
    word = token.word.removesuffix("'s")
    return token.caps and word not in STOPWORDS and not word.startswith("i'")


def _name_runs(tokens: Sequence[Token]) -> Iterable[list[Token]]:
    """Runs of adjacent capitalised words in one sentence, bridging "of" and capitalised
    small words ("Fields of Mistria", "Veracruz All Natural"). A lone acronym must not be an
    everyday word: "DRG" is a name, "TOLD" and "LETS" are shouting."""
    index = 0
    while index < len(tokens):
        if not _name_like(tokens[index]):
            index += 1
            continue
        run = [tokens[index]]
        index += 1
        while index < len(tokens) and tokens[index].joined:
            token = tokens[index]
            if _name_like(token):
                run.append(token)
                index += 1
                continue
            bridge = token.word == "of" or (token.caps and token.word != "i")
            if (
                bridge
                and index + 1 < len(tokens)
                and tokens[index + 1].joined
                and _name_like(tokens[index + 1])
            ):
                run.extend(tokens[index : index + 2])
                index += 2
                continue
            break
        lone = run[0]
        if len(run) > 1 or not _is_acronym(lone.raw) or word_kind(lone.word, False) == "content":
            yield run


def entities(lines: Sequence[TranscriptLine], exclude: Iterable[str] = ()) -> list[str]:
    """Names in ``lines`` (not the participants'), most mentioned first.

    Adjacent capitalised words form one name ("Elden Ring", "St. David's"), and punctuation
    ends it. A one-word name that opens a sentence counts only if it also appears capitalised
    mid-sentence, or is an acronym, since sentence case says nothing about names.
    """
    excluded = {word.lower() for word in exclude}
    mid_sentence: set[str] = set()
    candidates: list[tuple[str, bool]] = []
    for line in lines:
        for tokens in tokenize(line.text):
            for run in _name_runs(tokens):
                words = [token.raw for token in run]
                if len(words) == 1:
                    words[0] = words[0].removesuffix("'s")
                mid_sentence.update(token.raw for token in run if not token.initial)
                candidates.append((" ".join(words), run[0].initial))
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for name, starts in candidates:
        if name.lower() in excluded:
            continue
        if starts and " " not in name and name not in mid_sentence and not _is_acronym(name):
            continue
        counts[name] += 1
        order.setdefault(name, len(order))
    ranked = sorted(counts, key=lambda name: (-counts[name], order[name]))
    return [clip(name, 80) for name in ranked[:10]]
