"""The offline provider: the LLM port without a key, a network or a model.

It keeps Vivy useful when no Gemini key is set (seed 000's graceful degradation) and gives
the demo and the tests a deterministic LLM. Everything is plain text statistics and rules:

* notes are extracts: salient noun phrases for the title and topics (names first; verbs,
  adverbs and chat noise never make a topic), who talked plus a few representative quoted
  lines for the summary, capitalised names for entities, "let's"/"we'll"/"decided" lines
  for decisions and lines ending in "?" for open questions; lines that read as instructions
  to the bot are left out of all of it;
* profile operations come from first-person statements by the user ("I live in Austin" adds
  "Lives in Austin"; "I moved to Denver last month" invalidates it with "Lives in Denver"),
  in a profile-update call or, for the members a note call lists, in the note's answer;
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
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
    ConversationDraft,
    DraftCluster,
    FactView,
    InvalidateFact,
    MemberOperations,
    MergeFacts,
    NoteDraft,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperation,
    ProfileOperations,
    ProfileSection,
    TranscriptLine,
    uncited,
)
from vivy.state.guards import looks_like_instruction

__all__ = [
    "OFFLINE_EMBEDDING_MODEL",
    "OFFLINE_MODEL",
    "OFFLINE_QUALITY",
    "OfflineLLM",
    "cluster_notes",
    "consolidate_profile",
    "conversation_operations",
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
    r"\b(let['’]?s|let us|we['’]ll|we will|we['’]?re going to|we are going to|decided|"
    r"decision|agreed|going with|the plan is|plan is to)\b",
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


# --- sentences and message markup ----------------------------------------------------------

#: Words whose trailing period does not end a sentence ("St. David's", "e.g. Rust").
_ABBREVIATIONS = frozenset(
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
    if word.lower() not in _ABBREVIATIONS:
        return False
    if word.lower() == "etc":
        following = text[dot + 1 :].lstrip()
        return not following[:1].isupper()
    return True


def _sentences(text: str) -> list[str]:
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


_USER_MENTION = re.compile(r"<@!?(?P<id>\d+)>")
_ROLE_MENTION = re.compile(r"<@&\d+>")
_CHANNEL_MENTION = re.compile(r"<#\d+>")
_CUSTOM_EMOJI = re.compile(r"<a?:(?P<name>\w+):\d+>")
_MARKUP_TAG = re.compile(r"</?[A-Za-z_][\w-]*(?:\s[^<>]*)?>")
_URL = re.compile(r"https?://\S+|\b(?:[\w-]+\.)+[A-Za-z]{2,}/\S*")
_LEADING_AT = re.compile(r"^\s*@(?P<name>[\w.-]+)")


def _readable(text: str, names: Mapping[int, str]) -> str:
    """``text`` with Discord markup made readable for quoting.

    ``<@id>`` becomes "@Name" when the id belongs to someone in the conversation and
    "@someone" otherwise; role and channel mentions and custom emoji lose their ids.
    """

    def user(match: re.Match[str]) -> str:
        name = names.get(int(match["id"]))
        return f"@{name}" if name else "@someone"

    text = _USER_MENTION.sub(user, text)
    text = _ROLE_MENTION.sub("@role", _CHANNEL_MENTION.sub("#channel", text))
    return _squash(_CUSTOM_EMOJI.sub(lambda match: f":{match['name']}:", text))


def _plain(text: str) -> str:
    """``text`` without mentions, markup tags, custom emoji and links, for analysis."""
    for pattern in (_USER_MENTION, _ROLE_MENTION, _CHANNEL_MENTION, _CUSTOM_EMOJI, _URL):
        text = pattern.sub(" ", text)
    return _MARKUP_TAG.sub(" ", text).replace("’", "'")


def _talks_to_outsider(text: str, names: Mapping[int, str]) -> bool:
    """Whether a message mentions someone outside the conversation, usually the bot.

    The bot's own messages never reach a transcript, so a mention of an id that is not
    among the conversation's authors (or a leading "@Name" that is not one of theirs) is
    almost always aimed at it.
    """
    if any(int(match["id"]) not in names for match in _USER_MENTION.finditer(text)):
        return True
    match = _LEADING_AT.match(text)
    if match is None or match["name"] is None:
        return False
    return match["name"].lower() not in {name.lower() for name in names.values()}


# --- word classes --------------------------------------------------------------------------

#: Chat noise: interjections, hedges and evaluations that never name a topic.
_NOISE_TEXT = """
    lol lmao lmfao rofl omg omfg wtf brb gg ggs gn gm ty thx pls plz til tldr tl dr imho ikr
    irl smh rn fr ngl jk xd hehe heh oops welp meh pog bruh dude yo sup hello bye congrats
    grats sorry noted deal exactly obviously definitely literally basically honestly
    seriously anyway anyways yay oof ooh ohh ohhh ugh aww wow whoa yikes hm lmk ig lets cool
    nice great awesome amazing incredible fine bad terrible awful good perfect lovely
    wonderful fantastic excellent horrible weird rough fair true false correct wrong ready
    happy sad glad tired busy sure real fun funny hard easy brutal wild insane crazy legit
    plenty enough whole entire sweet neat epic clean boring jealous bold classic rusty mean
    also always already again ago almost else ever never often once soon sometimes usually
    yesterday tonight tomorrow today later earlier anymore instead maybe perhaps apparently
    probably especially finally totally super mostly though although otherwise far least
    less lot lots much way ways bit e.g i.e etc vs per everywhere anywhere somewhere nowhere
    everybody someone somebody nobody each hey hi yeah yep nope nah ok okay cause cuz tho
    thru gonna wanna gotta kinda sorta lemme gimme dunno aight alright oh ah eh uh um umm er
    hmm huh first second third last next other another same different own
"""
_NOISE = frozenset(_NOISE_TEXT.split()) | _STOPWORDS

#: Nouns too generic to be a topic on their own, though fine inside one ("game night").
_GENERIC_TEXT = """
    time times day days week weeks month months year years night nights morning mornings
    evening afternoon weekend hour hours minute minutes moment moments thing stuff side
    point part kind sort type end idea question questions answer problem problems issue
    issues reason place places people person everyone anyone guy folks friend friends team
    name names list number numbers one ones game games job jobs update updates news round
    rounds rest life story word words version versions option options bunch couple sense
    chance luck level levels mode fan fans vibe vibes case cases fact facts reminder
    confession call plans plan ton tons piece pieces start result chat chats talk discussion
    conversation convo thread channel message messages
    monday tuesday wednesday thursday friday saturday sunday january february march april
    june july august september october november december mon tue wed thu fri sat sun
    weekday weekends tonight's today's
"""
_GENERIC = frozenset(_GENERIC_TEXT.split())
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december".split()
)

#: Describing words that may open a topic ("free tier", "cozy co-op") but never end one.
_MODIFIER_TEXT = """
    new old big small little huge tiny long short high low early late free full half main
    only cozy random fresh quick slow fast eastern western central pacific local daily
    weekly monthly nightly favorite favourite single double multiple several extra top
    bottom open closed public private official similar special usual certain common simple
    basic final whole actual best better worse worst more most less few many various major
    minor serious solo online offline live total overall entire proper normal regular
    early-access dark light personal hot cold warm chilly sunny rainy humid wet dry cheap
    expensive busy quiet loud
"""
_MODIFIERS = frozenset(_MODIFIER_TEXT.split())
_ADJECTIVE_ENDINGS = ("ful", "less", "ous", "ish", "able", "ible")
#: Words in "-ly" that are nouns, not adverbs.
_LY_NOUNS = frozenset(
    "family italy rally supply reply assembly ally belly bully jelly lily".split()
)
#: Words in "-ing" that are nouns, not verb forms.
_ING_NOUNS = frozenset(
    "spring string thing morning evening ring king wing sibling ceiling pudding wedding meeting "
    "building bouldering clothing ping swing sling".split()
)

_VERB_TEXT = """
    accept add agree allow apologize appreciate argue arrive ask avoid bake become begin
    believe bet blame bonk borrow bounce break bring buy care carry catch chart choose clap
    climb clone come compare complain confess confirm consider continue count cart craft cry
    dare decide defer delete demand deploy describe deserve die dig do drink eat enjoy
    ensure exist expect explain fail fear feel figure fill find finish fit follow forget
    forgive gain get give go grab grant grow guess handle hang happen hate hear heckle hide
    hope hurt ignore imagine include insert install invite join judge keep kid kill know
    laugh lay learn leave lend let lie like listen live lose love lurk make manage mangle
    marry mean meet mention mind miss move name need notice offer optimize outvote own parse
    pay pick prefer prepare pretend promise prove pull put quit reach realize recommend
    relax relocate remember remind remove repeat retire say see seem sell send settle shake
    shut sing sit slap sleep solve speak spend stay steal stop suck suggest suppose surprise
    swim take teach tell thank think throw try understand unlock unpack upgrade use wait
    wake want warn wash waste wear win wish wonder worry write yell apologise realise
    optimise recognize recognise belong tend call check close cook drive drop fix hold kick
    push return save set start study talk travel turn visit vote walk watch
"""
_VERBS = frozenset(_VERB_TEXT.split())
#: Verbs that are just as often nouns ("a walk", "the tests"): generic, not a break.
_NOUN_VERBS = frozenset(
    """
    test rank order post file host mark point plan play work run update end start trade sign
    switch chart copy export import commit deal help load lock mail pack print report ride
    roll search share ship shop show sound stress talk track train travel visit walk watch
    call change check cook cost count crash cut drink drive drop fight fix hold jump kick
    land lead look matter need offer pass push reply return save set smell stand stay stick
    store study taste touch treat turn use vote wait wear win build hunt shift poll craft
    review link note list guess name cart
    """.split()
)
_IRREGULAR_TEXT = """
    said told got gotten made went gone ran wrote written saw seen took taken thought bought
    brought came did done gave given knew known left lost felt kept found ate eaten slept
    sat stood won began begun broke broken chose chosen drove flew forgot forgotten hid
    held meant met paid put sent spent taught understood woke wore bit caught fell fought
    heard led rode rang sang shot sold sought spoke stole stuck swam threw tore built
    become became dealt drew drawn grew grown hung laid lay lent let lit quit read rose shut
    slid split spread sprang strung swept swung thrown
"""
_IRREGULAR = frozenset(_IRREGULAR_TEXT.split())
#: Words after which a verb follows ("I main hammer", "we should grab tacos").
_SUBJECTS = frozenset(
    "i we you they he she i'll we'll you'll they'll i'd we'd i've we've i'm we're will would "
    "can could should shall might must gonna wanna gotta don't doesn't didn't won't can't "
    "cannot couldn't wouldn't shouldn't let's lets".split()
)


def _verb_base(word: str) -> str | None:
    """The base form of ``word`` if it is an inflection of a known verb."""
    if word in _VERBS or word in _NOUN_VERBS:
        return word
    if word in _IRREGULAR:
        return word
    for suffix in ("ing", "ed", "es", "s", "d"):
        if not word.endswith(suffix) or len(word) <= len(suffix) + 1:
            continue
        stem = word[: -len(suffix)]
        for base in (stem, stem + "e", stem[:-1], stem[:-1] + "y" if stem.endswith("i") else ""):
            if base and (base in _VERBS or base in _NOUN_VERBS):
                return base
    return None


def _word_kind(word: str, after_subject: bool) -> str:
    """The class of a lower-case word: ``noise``, ``verb``, ``generic``, ``modifier`` or
    ``content``. ``after_subject`` says a pronoun or modal came just before it."""
    if word in _NOISE or (word.endswith("ly") and len(word) > 4 and word not in _LY_NOUNS):
        return "noise"
    if word in _CALENDAR:
        return "generic"
    if word.endswith("ing") and word not in _ING_NOUNS and _verb_base(word) is not None:
        return "verb"
    base = _verb_base(word)
    if base is not None:
        if word in _IRREGULAR or (word.endswith(("ed", "ing")) and word != base):
            return "verb"
        if after_subject or base not in _NOUN_VERBS:
            return "verb"
        return "generic"
    if after_subject and word not in _GENERIC:
        return "verb"
    if word.endswith("ed") and len(word) >= 6 and not word.endswith("eed"):
        return "verb"  # the past form of a verb not listed above ("booked", "carted")
    if word in _GENERIC:
        return "generic"
    if word in _MODIFIERS or word.endswith(_ADJECTIVE_ENDINGS):
        return "modifier"
    return "content"


def _fold_plural(word: str) -> str:
    """``word`` with a regular English plural folded to its singular, for counting."""
    if len(word) < 4 or not word.isalpha() or word.endswith(("ss", "us", "is", "'s")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


# --- salient phrases -----------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W_][\w'-]*(?:\.[^\W\d][\w-]*)*")


@dataclass(frozen=True, slots=True)
class _Token:
    """A word of a message as the phrase finder sees it."""

    raw: str
    word: str
    caps: bool
    initial: bool
    joined: bool


@dataclass(frozen=True, slots=True)
class _Term:
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


def _tokens(text: str) -> list[list[_Token]]:
    """The words of ``text``, sentence by sentence, with their casing and spacing."""
    result: list[list[_Token]] = []
    for sentence in _sentences(_plain(text)):
        tokens: list[_Token] = []
        end = 0
        for match in _TOKEN.finditer(sentence):
            raw = match.group().strip("'_-")
            if raw.lower().endswith("'s") and len(raw) > 2:
                raw = raw[:-2] + "'s"
            gap = sentence[end : match.start()].strip()
            end = match.end()
            if not raw:
                continue
            if gap == "." and tokens and tokens[-1].word in _ABBREVIATIONS:
                tokens[-1] = replace(tokens[-1], raw=tokens[-1].raw + ".")
                gap = ""
            shouted = raw.isupper() and len(raw) > 4
            tokens.append(
                _Token(
                    raw=raw,
                    word=raw.lower(),
                    caps=raw[0].isupper() and not shouted,
                    initial=not tokens,
                    joined=bool(tokens) and not gap,
                )
            )
        if tokens:
            result.append(tokens)
    return result


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
#: Words that may stand between a subject and its verb ("I mostly live", "we should grab").
_BETWEEN_SUBJECT_AND_VERB = frozenset(
    "just also still really actually always never even totally probably finally already only "
    "mostly usually often kinda literally basically definitely not sometimes rarely".split()
)


def _salient_terms(texts: Sequence[tuple[int, str]], *, exclude: Iterable[str] = ()) -> list[_Term]:
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
    sentences = [(author, tokens) for author, text in texts for tokens in _tokens(text)]
    proper_words = {
        token.word
        for _, tokens in sentences
        for token in tokens
        if token.caps and (not token.initial or _is_acronym(token.raw))
    }
    phrases: dict[tuple[str, ...], _Phrase] = {}
    position = 0

    def add(run: Sequence[tuple[_Token, str]], author: int, is_name: bool) -> None:
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
        run: list[tuple[_Token, str]] = []
        after_subject = False
        for index, token in enumerate(tokens):
            position += 1
            kind = _kind(token, after_subject, excluded, proper_words)
            after_subject = token.word in _SUBJECTS or (
                after_subject
                and (token.word in _BETWEEN_SUBJECT_AND_VERB or token.word.endswith("ly"))
            )
            if kind in _PHRASE_KINDS and token.joined and run:
                run.append((token, kind))
            else:
                _count_run(run, author, proper_words, add)
                run = [(token, kind)] if kind in _PHRASE_KINDS - {"number"} else []
            if token.word == "of":
                name = _name_with_connector(tokens, index, proper_words)
                if name is not None:
                    add([(part, "content") for part in name], author, True)
        _count_run(run, author, proper_words, add)
    return _rank(phrases, proper_words)


def _phrase_word(token: _Token, kind: str) -> str:
    """The counting form of a phrase word: lower case, possessive and plural folded."""
    if kind == "possessive":
        return token.word
    return _fold_plural(token.word.removesuffix("'s"))


def _kind(token: _Token, after_subject: bool, excluded: set[str], proper: set[str]) -> str:
    """The class of ``token`` in context (see :func:`_word_kind`), with names and numbers."""
    word = token.word
    if word.endswith("'s") and word[:-2] in excluded:
        return "possessive"
    if word in excluded or word.removesuffix("'s") in excluded:
        return "noise"
    if word.isdigit():
        return "number" if len(word) <= 3 else "noise"
    if word[:1].isdigit():
        return "noise"
    kind = _word_kind(word.removesuffix("'s"), after_subject)
    named = token.caps and word in proper and not _is_acronym(token.raw)
    if named and kind in {"verb", "generic", "modifier"} and word not in _CALENDAR:
        return "content"
    if kind == "content" and len(word) < 3 and not _is_acronym(token.raw):
        return "content" if word in _ACRONYMS else "noise"
    return kind


def _name_with_connector(
    tokens: Sequence[_Token], index: int, proper: set[str]
) -> list[_Token] | None:
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
    run: Sequence[tuple[_Token, str]],
    author: int,
    proper: set[str],
    add: Callable[[Sequence[tuple[_Token, str]], int, bool], None],
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


def _rank(phrases: dict[tuple[str, ...], _Phrase], proper: set[str]) -> list[_Term]:
    """Qualifying phrases as ranked :class:`_Term` objects (see :func:`_salient_terms`)."""
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


def _term(phrase: _Phrase, proper: set[str], aliases: Sequence[_Phrase] = ()) -> _Term:
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
    return _Term(
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
        words.append(shown.upper() if _fold_plural(shown) in _ACRONYMS else shown)
    return " ".join(words)


def _name_like(token: _Token) -> bool:
    """Whether ``token`` can be part of a name: capitalised and not a stopword."""
    word = token.word.removesuffix("'s")
    return token.caps and word not in _STOPWORDS and not word.startswith("i'")


def _name_runs(tokens: Sequence[_Token]) -> Iterable[list[_Token]]:
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
        if len(run) > 1 or not _is_acronym(lone.raw) or _word_kind(lone.word, False) == "content":
            yield run


def _entities(lines: Sequence[TranscriptLine], exclude: Iterable[str] = ()) -> list[str]:
    """Names in ``lines`` (not the participants'), most mentioned first.

    Adjacent capitalised words form one name ("Elden Ring", "St. David's"), and punctuation
    ends it. A one-word name that opens a sentence counts only if it also appears capitalised
    mid-sentence, or is an acronym, since sentence case says nothing about names.
    """
    excluded = {word.lower() for word in exclude}
    mid_sentence: set[str] = set()
    candidates: list[tuple[str, bool]] = []
    for line in lines:
        for tokens in _tokens(line.text):
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
    return [_clip(name, 80) for name in ranked[:10]]


# --- notes ---------------------------------------------------------------------------------

#: The longest offline note title, in characters.
TITLE_LIMIT = 60

_PETS = (
    r"dog|cat|puppy|kitten|bird|parrot|rabbit|bunny|hamster|snake|turtle|tortoise|fish|"
    r"horse|ferret|lizard|gecko|guinea pig|rat|mouse"
)
_NAME = r"(?-i:[A-Z])[\w'-]*"
#: "my dog is named Bento" or "I have a fish named Gerald": the speaker's pet, by name.
_PET_NAMED = re.compile(
    r"\b(?:my|i (?:have|got|own) (?:an?|one|two|three|\w+))\s+(?P<kind>" + _PETS + r")"
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


def _name_list(names: Sequence[str], limit: int = 6) -> str:
    """``names`` joined for prose, the tail counted once there are more than ``limit``."""
    if len(names) > limit:
        shown = [*names[: limit - 1], f"{len(names) - limit + 1} others"]
        return _join_words(shown)
    return _join_words(list(names))


def _introductions(lines: Sequence[TranscriptLine]) -> dict[str, str]:
    """Fuller names for things the speakers introduce, keyed by the short name in lower
    case: "bento" → "Sam's dog Bento", "denver" → "moving to Denver"."""
    found: dict[str, str] = {}
    for line in lines:
        text = _plain(line.text)
        for match in _PET_NAMED.finditer(text):
            kind = match["kind"].lower()
            found.setdefault(match["name"].lower(), f"{line.author_name}'s {kind} {match['name']}")
        for match in _MOVED_TO.finditer(text):
            found.setdefault(match["place"].lower(), f"moving to {match['place']}")
    return found


def _plan(lines: Sequence[TranscriptLine]) -> _Term | None:
    """The event the first decision schedules ("let's do the game night on Friday" →
    "game night plans"), if a decision names one."""
    for line in lines:
        if not _is_decision(line.text):
            continue
        for tokens in _tokens(line.text):
            for index in range(len(tokens)):
                event = _event_phrase(tokens, index)
                if event is not None:
                    return event
    return None


def _event_phrase(tokens: Sequence[_Token], index: int) -> _Term | None:
    """The event phrase ending at ``tokens[index]`` with up to two words before it, if
    that word is an event noun heading its phrase ("game night", not "game night scores")."""
    if _fold_plural(tokens[index].word) not in _EVENT_NOUNS:
        return None
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if (
        following is not None
        and following.joined
        and _word_kind(following.word, False) == "content"
    ):
        return None
    start = index
    while (
        start > max(0, index - 2)
        and tokens[start].joined
        and _word_kind(tokens[start - 1].word, False) in {"content", "generic", "modifier"}
        and tokens[start - 1].word not in _CALENDAR
    ):
        start -= 1
    words = tokens[start : index + 1]
    shown = " ".join(word.raw if word.caps and not word.initial else word.word for word in words)
    key = " ".join(_fold_plural(word.word) for word in words)
    return _Term(key=key, display=f"{shown} plans", score=0.0, first=0)


def _headline(terms: Sequence[_Term], lines: Sequence[TranscriptLine]) -> list[_Term]:
    """The one or two topics a title names, in their fullest form.

    The leading phrase comes first; then a scheduled event ("game night plans") if a
    decision names one, else the next phrase that shares no word with the lead and carries
    at least a third of its weight. A pet or a move the speakers introduce is named in
    full ("Sam's dog Bento", "moving to Denver").
    """
    chosen: list[_Term] = []
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


def _title(headline: Sequence[_Term], channel: str) -> str:
    """A short noun-phrase title: "Postgres and Rust", "Sam's dog Bento and Maya's cat
    Miso"; one topic alone when two would pass :data:`TITLE_LIMIT`."""
    if not headline:
        return _clip(f"Conversation in #{channel}", TITLE_LIMIT)
    title = _capitalise(" and ".join(term.display for term in headline))
    if len(title) > TITLE_LIMIT:
        title = _clip(_capitalise(headline[0].display), TITLE_LIMIT)
    return title


def _topics(terms: Sequence[_Term]) -> list[str]:
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
        topics.append(_clip(term.display, 80))
        keys.append(term.key)
        covered |= words
    return topics


def _within(a: str, b: str) -> bool:
    """Whether one of two phrase keys contains the other ("web" and "web app")."""
    return f" {a} " in f" {b} " or f" {b} " in f" {a} "


def _is_chatter(line: TranscriptLine) -> bool:
    """Whether ``line`` is not conversation to learn from: an instruction to the bot, an
    authority claim or secret (seed 003's guard), or a command to another bot."""
    return looks_like_instruction(line.text) or _BOT_COMMAND.match(line.text) is not None


def _quotable(line: TranscriptLine, names: Mapping[int, str]) -> bool:
    """Whether ``line`` may be quoted in a summary: several words, and not aimed at the bot
    (which the summary would only echo)."""
    if _talks_to_outsider(line.text, names):
        return False
    return len(_WORD.findall(_plain(line.text))) >= 4


def _line_keys(text: str) -> set[str]:
    """The folded words of ``text`` and their runs of two and three, to match phrase keys."""
    keys: set[str] = set()
    for tokens in _tokens(text):
        words = [_fold_plural(token.word.removesuffix("'s")) for token in tokens]
        for size in (1, 2, 3):
            keys.update(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
    return keys


def _representative(
    lines: Sequence[TranscriptLine],
    terms: Sequence[_Term],
    headline: Sequence[_Term],
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
    candidates: dict[int, tuple[set[str], float, float]] = {}
    for index, line in enumerate(lines):
        keys = _line_keys(line.text) & set(weights)
        bonus = 1.3 if any(term.key in keys - introduced for term in headline) else 1.0
        introduced |= keys
        if not _quotable(line, names):
            continue
        extra = lead if _is_decision(line.text) else 0.0
        damping = math.sqrt(max(len(_WORD.findall(line.text)), 10))
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
            title=_clip(f"Conversation in #{channel}", TITLE_LIMIT),
            summary=f"{OFFLINE_LABEL} An empty conversation in #{channel}.",
        )
    names = {line.author_id: line.author_name for line in lines}
    people = _participants(lines)
    talk = [line for line in lines if not _is_chatter(line)]
    name_words = {part for name in people for part in _WORD.findall(name)}
    terms = _salient_terms([(line.author_id, line.text) for line in talk], exclude=name_words)
    headline = _headline(terms, talk)
    about = " and ".join(term.display for term in headline)
    opening = f"{OFFLINE_LABEL} {_name_list(people)} talked in #{channel}"
    opening += f" about {about}." if about else "."
    quotes = [
        f"{line.author_name}: “{_clip(_readable(line.text, names), 180)}”"
        for line in _representative(talk, terms, headline, 3 if len(talk) >= 8 else 2, names)
    ]
    summary = opening + (f" Key lines: {'; '.join(quotes)}." if quotes else "")
    decisions = _unique(
        _clip(f"{line.author_name}: {_readable(line.text, names)}", 240)
        for line in talk
        if _is_decision(line.text)
    )
    questions = _unique(
        _clip(f"{line.author_name}: {_readable(sentence, names)}", 240)
        for line in talk
        if not _talks_to_outsider(line.text, names)
        for sentence in _sentences(line.text)
        if sentence.endswith("?") and len(_WORD.findall(_plain(sentence))) >= 3
    )
    return NoteDraft(
        title=_title(headline, channel),
        summary=_clip(summary, 1200),
        topics=_topics(terms),
        decisions=decisions[:10],
        open_questions=questions[:10],
        entities=_entities(talk, exclude=name_words),
    )


def _is_decision(text: str) -> bool:
    """Whether ``text`` states a plan or decision, not a question or a cheer ("LETS GO")."""
    if text.rstrip().endswith("?") or len(_WORD.findall(text)) < 4:
        return False
    return _DECISION.search(text) is not None


def _unique(items: Iterable[str]) -> list[str]:
    """``items`` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


# --- profile operations --------------------------------------------------------------------

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
        r"\bmy (?P<kind>" + _PETS + r")(?:'s name is| is named| is called| named| called|,)? "
        r"(?P<x>(?-i:[A-Z])[\w'-]*)",
        "relationships",
        lambda m, x: f"Has {_article(m['kind'].lower())} named {x}",
    ),
    _rule(
        r"\bi (?:also )?(?:have|own) (?:an?|one) (?P<kind>" + _PETS + r") (?:named|called) "
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
    text = _squash(_without_pictures(text))
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
        for sentence in _sentences(line.text.replace("’", "'")):
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
                if slots[fact.id] == statement.slot:  # the latest statement of a slot wins
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


def conversation_operations(payload: NoteInput) -> list[MemberOperations]:
    """Each member the note call lists, with the operations their own statements imply."""
    names = tuple(dict.fromkeys(line.author_name for line in payload.lines))
    view = NoteView(0, "", "", "", names, payload.lines)
    return [
        MemberOperations(
            user_id=member.user_id,
            operations=uncited(
                profile_operations(
                    ProfileInput(member.user_id, member.user_name, member.facts, (view,))
                ).operations
            ),
        )
        for member in payload.members
    ]


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


_QUOTED = re.compile(r"“([^”]*)”")


def _note_terms(note: NoteView) -> list[_Term]:
    """Salient phrases of a note; the title counts twice.

    Of an offline summary only the quoted lines count: its opening restates the title and
    lists people, which says nothing about the topic.
    """
    texts = [(0, note.title), (1, note.title)]
    if note.summary.startswith(OFFLINE_LABEL):
        texts.extend((2, quote) for quote in _QUOTED.findall(note.summary))
    else:
        texts.append((2, note.summary))
    texts.extend((line.author_id, line.text) for line in note.lines)
    names = {part for name in note.participants for part in _WORD.findall(name)}
    return _salient_terms(texts, exclude=names)


def cluster_notes(payload: ClusterInput) -> ClusterDraft:
    """Topic clusters of a day's notes: notes sharing a salient term go together.

    Notes are taken in id order and join the cluster whose terms they share most; notes that
    share nothing, and clusters past the seventh, go to one "Other conversations" cluster.
    """
    notes = sorted(payload.notes, key=lambda note: note.id)
    groups: list[tuple[list[NoteView], Counter[str], dict[str, str]]] = []
    for note in notes:
        phrases: dict[str, str] = {}
        for term in _note_terms(note)[:5]:
            phrases.setdefault(term.key, term.display)
            for key, display in term.aliases:
                phrases.setdefault(key, display)
        keys = set(phrases)
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
        for key, display in phrases.items():
            target[1][key] += 1
            target[2].setdefault(key, display)
    # A cluster of one note only repeats that note: two or more such notes share an "Other
    # conversations" cluster instead.
    shared_groups = [group for group in groups if len(group[0]) > 1]
    singles = sorted((g[0][0] for g in groups if len(g[0]) == 1), key=lambda note: note.id)
    if len(singles) == 1:
        shared_groups.append(([singles[0]], Counter(), {}))
        singles = []
    shared_groups.sort(key=lambda group: (-len(group[0]), group[0][0].id))
    groups = shared_groups[:7]
    rest = [note for group in shared_groups[7:] for note in group[0]] + singles
    if rest:
        groups.append((sorted(rest, key=lambda note: note.id), Counter(), {}))
    clusters = [_draft_cluster(members, counter, displays) for members, counter, displays in groups]
    return ClusterDraft(clusters=clusters)


def _draft_cluster(
    members: Sequence[NoteView], counter: Counter[str], displays: dict[str, str]
) -> DraftCluster:
    """One cluster's title and extractive summary.

    The title names up to two phrases its notes share, longest first, skipping any whose
    words an earlier one already covers ("Elden Ring", not "Elden Ring and Elden").
    """
    shared: list[str] = []
    covered: set[str] = set()
    ranked = sorted(
        (key for key in counter if counter[key] > 1),
        key=lambda key: (-counter[key], -len(key.split())),
    )
    for key in ranked:
        if len(shared) == 2:
            break
        if not set(key.split()) <= covered:
            shared.append(displays[key])
            covered |= set(key.split())
    if len(members) == 1:
        title = members[0].title
    elif shared:
        title = _capitalise(" and ".join(shared))
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
        elif isinstance(payload, NoteInput) and request.schema is ConversationDraft:
            value = ConversationDraft(
                **write_note(payload).model_dump(), profiles=conversation_operations(payload)
            )
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
