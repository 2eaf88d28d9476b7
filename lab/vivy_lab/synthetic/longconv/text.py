"""Text helpers of the generator: the eval file's time format, content words, placeholders,
phrasings, dates in words and typos."""

from __future__ import annotations

import random
import re
from datetime import datetime

PARAPHRASE_SHARE = 0.2  # how often a question is asked in words of its own ("~" phrasings)
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
STOPWORDS = frozenset(
    "a an the and or but so to of in on at for with from by is are was were be been am i im i'm you your he she his her him it its we our they them their this that what which who when where how did do does done have has had not no yes just like lol really very too also about after before then than there here get got going go went can could would will my me up out if as into over all some any one new still now back more much tbh omg haha ok okay yeah oh".split()  # noqa: E501
)


def iso(dt: datetime) -> str:
    """The eval file's time format: ``2026-02-02T19:04:00Z``."""
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def content_words(text: str) -> list[str]:
    """Lower-cased words of three or more letters that are not stopwords, in order (an
    apostrophe splits a word: "Sam's" gives "sam")."""
    return [w for w in re.findall(r"[^\W_]+", text.lower()) if len(w) > 2 and w not in STOPWORDS]


def fill(text: str, ctx: dict[str, str]) -> str:
    """Fill ``{key}`` placeholders from ``ctx``, twice, since parameters may hold placeholders."""
    for _ in range(3):
        if "{" not in text:
            break
        text = text.format_map(ctx)
    return text


def variant(text: str, r: random.Random) -> str:
    """One of the ``|``-separated ways of saying a line."""
    return r.choice(text.split("|")) if "|" in text else text


def phrase(r: random.Random, phrasings: list[str]) -> str:
    """A question phrasing: usually one in the words members say it with, but with
    ``PARAPHRASE_SHARE`` one in other words (those marked with a leading ``~``)."""
    close = [x for x in phrasings if not x.startswith("~")]
    other = [x[1:] for x in phrasings if x.startswith("~")]
    return r.choice(other if other and (not close or r.random() < PARAPHRASE_SHARE) else close)


def first_upper(text: str) -> str:
    """``text`` with its first letter upper-cased (questions are typed both ways)."""
    return text[:1].upper() + text[1:]


def join_names(names: list[str]) -> str:
    """'Sam', 'Sam and Maya' or 'Sam, Maya and Leo'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def period(dt: datetime) -> str:
    """'early March', 'mid-March' or 'late March'."""
    month = MONTHS[dt.month - 1]
    return f"early {month}" if dt.day <= 10 else f"mid-{month}" if dt.day <= 20 else f"late {month}"


def in_window(rel: str, day: datetime, other: datetime) -> bool:
    """Whether ``other`` falls in the stretch of time that ``rel`` (said of ``day``) names."""
    if rel == "last week":
        return other.isocalendar()[:2] == day.isocalendar()[:2]
    if rel == "last month":
        return other.month == day.month
    if rel.startswith("about"):
        return abs((other - day).days) <= 4
    return period(other) == period(day)


def typo(text: str, r: random.Random) -> str:
    """Swap two adjacent letters inside one longer word, as a hurried typist does."""
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long:
        return text
    i = r.choice(long)
    j = r.randrange(1, len(words[i]) - 2)
    w = words[i]
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)
