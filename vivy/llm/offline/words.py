"""Word classes: a small rule-based part-of-speech guess for chat English.

Lists of chat noise, generic nouns, describing words and verbs, and the rules that use them
to say whether a lower-case word can name a topic, only help one, or breaks a phrase.
"""

from __future__ import annotations

from functools import lru_cache

from vivy.llm.offline.text import STOPWORDS

__all__ = ["CALENDAR", "PETS", "SUBJECTS", "fold_plural", "word_kind"]

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
_NOISE = frozenset(_NOISE_TEXT.split()) | STOPWORDS

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
CALENDAR = frozenset(
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
SUBJECTS = frozenset(
    "i we you they he she i'll we'll you'll they'll i'd we'd i've we've i'm we're will would "
    "can could should shall might must gonna wanna gotta don't doesn't didn't won't can't "
    "cannot couldn't wouldn't shouldn't let's lets".split()
)


@lru_cache(maxsize=1 << 16)
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


@lru_cache(maxsize=1 << 16)
def word_kind(word: str, after_subject: bool) -> str:
    """The class of a lower-case word: ``noise``, ``verb``, ``generic``, ``modifier`` or
    ``content``. ``after_subject`` says a pronoun or modal came just before it."""
    if word in _NOISE or (word.endswith("ly") and len(word) > 4 and word not in _LY_NOUNS):
        return "noise"
    if word in CALENDAR:
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


@lru_cache(maxsize=1 << 16)
def fold_plural(word: str) -> str:
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


#: Kinds of pet, as a regular expression alternation ("my dog Bento").
PETS = (
    r"dog|cat|puppy|kitten|bird|parrot|rabbit|bunny|hamster|snake|turtle|tortoise|fish|"
    r"horse|ferret|lizard|gecko|guinea pig|rat|mouse"
)
