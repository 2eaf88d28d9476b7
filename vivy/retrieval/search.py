"""Question text as note search reads it: Discord markup removed, stop words dropped.

The searches themselves (vector, keyword, evidence) are storage's:
:mod:`vivy.storage.sqlite.search` holds their SQL, behind the port's ``search`` area.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TERMS", "STOPWORDS", "query_terms", "strip_markup"]

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
#: Words too common to search for; dropped from keyword queries.
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

#: Discord markup that carries ids, not words: user, role and channel mentions, custom emoji.
_MARKUP = re.compile(r"<(?:@[!&]?|#|a?:\w+:)\d+>")
_URL = re.compile(r"https?://\S+")
#: Word tokens as FTS5's unicode61 tokenizer sees them (letters and digits; no punctuation).
_TOKEN = re.compile(r"[^\W_]+")
#: Longest keyword query, in distinct terms.
MAX_TERMS = 16


def strip_markup(text: str) -> str:
    """``text`` without Discord mentions, custom emoji and URLs (ids and links, not words)."""
    return " ".join(_URL.sub(" ", _MARKUP.sub(" ", text)).split())


def query_terms(text: str) -> list[str]:
    """The distinct searchable words of ``text``, lower-cased, in order of appearance.

    Mentions, custom emoji and URLs are removed first; stop words and single characters
    (except digits, which may be codes) are dropped.
    """
    text = strip_markup(text)
    seen: list[str] = []
    for raw in _TOKEN.findall(text.lower()):
        if raw in STOPWORDS or (len(raw) < 2 and not raw.isdigit()) or raw in seen:
            continue
        seen.append(raw)
        if len(seen) == MAX_TERMS:
            break
    return seen
