"""What a member's question says besides its words: the people it names and the time it means.

Pure functions, no I/O and no clock read (the caller passes ``now``):

* :func:`name_grams` lists the word runs of a question that may be a member's display name
  or alias known to the guild ("what did **Sam** name his dog?"), so notes those members took
  part in rank higher.
* :func:`time_range` turns a date or time phrase into the UTC interval it means, relative to
  ``now`` in the guild's time zone: "yesterday", "last week", "this month", "three weeks
  ago", "in May", "early March", "on March 3", "last Friday", "over the weekend", "last
  summer"; a year named with a day, a month or a season, or alone ("on 21 May, 2023", "in
  mid-August 2023", "summer 2022", "in 2022"), is taken as given. Notes from that interval
  rank higher and are searched even when no word matches. A phrase it does not know yields
  None, never a guess.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from vivy.storage.search_types import TimeRange
from vivy.text.terms import PIECE

__all__ = ["asks_when", "name_grams", "proper_names", "time_range"]


_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "couple": 2,
    "three": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30}
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_NAMES = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_NUMBER_WORDS = "|".join(sorted(_NUMBERS, key=len, reverse=True))

_AGO = re.compile(
    rf"\b(?:(\d+)|(?:a\s+)?({_NUMBER_WORDS})(?:\s+of)?)\s+(days?|weeks?|months?)\s+ago\b"
)
_MONTH_DAY = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_DAY_OF_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\b")
_MONTH_PARTS = "early|mid|middle of|late|beginning of|start of|end of"
_PART_OF_MONTH = re.compile(rf"\b({_MONTH_PARTS})\s+(?:the\s+)?({_MONTH_NAMES})\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|of|from|since|back in)\s+({_MONTH_NAMES})\b")
_WEEKDAY = re.compile(rf"\b(?:(last|on|this|past)\s+)({_WEEKDAY_NAMES})\b")
_YEAR_NUMBER = r"((?:19|20)\d\d)"
_DATE_WITH_YEAR = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})"
    rf"|({_MONTH_NAMES})\s+(\d{{1,2}})(?:st|nd|rd|th)?)\s+{_YEAR_NUMBER}\b"
)
_MONTH_WITH_YEAR = re.compile(
    rf"\b(?:({_MONTH_PARTS})\s+(?:the\s+)?)?({_MONTH_NAMES})\s+(?:of\s+)?{_YEAR_NUMBER}\b"
)
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_SEASON_NAMES = "|".join(_SEASONS)
#: A season needs a year or a word before it ("the fall", "last spring"), since "fall" and
#: "spring" are also verbs.
_SEASON = re.compile(
    rf"\b(?:(?:(last|this|past|previous)|(?:in|during|over|for)\s+the|the)\s+({_SEASON_NAMES})"
    rf"(?:\s+of\s+{_YEAR_NUMBER})?|({_SEASON_NAMES})\s+(?:of\s+)?{_YEAR_NUMBER})\b"
)
_YEAR = re.compile(rf"\b(?:in|during|of|throughout|back in)\s+{_YEAR_NUMBER}\b")


def name_grams(text: str, *, longest: int = 3) -> list[str]:
    """Every run of one to ``longest`` words of ``text``, lower-cased, as names are stored.

    Looking these up among the guild's known names finds "Sam" and "Maya Lee" in a
    question without reading every name of the guild.
    """
    words = PIECE.findall(text.lower())
    grams: dict[str, None] = {}
    for size in range(1, longest + 1):
        for start in range(len(words) - size + 1):
            grams[" ".join(words[start : start + size])] = None
    return list(grams)


_ASKS_WHEN = re.compile(
    r"(?:^|[,.!?:;]\s*)\W*(?:when|(?:what|which) (?:date|day|year|month|week)|how long ago)\b"
)


def asks_when(text: str) -> bool:
    """Whether a sentence of ``text`` opens by asking when: "when did Maya move?", "what year
    did John start surfing?" (not "what did Sam feel when he won?")."""
    return _ASKS_WHEN.search(text.lower()) is not None


#: What opens a sentence: a capital after it says nothing about a name.
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)\W*$")
_CAPITALISED = re.compile(r"\b[A-Z][^\W_]*(?:'s|')?")


def proper_names(text: str) -> tuple[str, ...]:
    """The words of ``text`` written with a capital where no sentence begins (months, days of
    the week and "I" aside), lower-cased and without a possessive: the people, places and
    things the question names ("what did **Melanie** paint in **Paris**?").

    The reply's gate reads them: a question whose every name the guild's memory never
    mentions is about someone else's memory (:func:`vivy.retrieval.ranking.rank`).
    """
    found: dict[str, None] = {}
    for match in _CAPITALISED.finditer(text):
        word = match.group().removesuffix("'s").removesuffix("'").lower()
        if len(word) < 2 or word in _MONTHS or word in _WEEKDAYS:
            continue
        if _SENTENCE_START.search(text[: match.start()]):
            continue
        found[word] = None
    return tuple(found)


def _day_range(first: date, last: date, zone: ZoneInfo) -> TimeRange:
    """The interval from the start of ``first`` to the end of ``last`` in ``zone``."""
    start = datetime.combine(first, datetime.min.time(), tzinfo=zone)
    end = datetime.combine(last + timedelta(days=1), datetime.min.time(), tzinfo=zone)
    return TimeRange(start.timestamp(), end.timestamp())


def _month(year: int, month: int) -> tuple[date, date]:
    """First and last day of ``month`` of ``year``."""
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return date(year, month, 1), following - timedelta(days=1)


def _part_of_month(part: str | None, first: date, last: date) -> tuple[date, date]:
    """The days of a month that "early", "mid" or "late" (or no ``part``: all) mean."""
    if part in ("early", "beginning of", "start of"):
        return first, first + timedelta(days=10)
    if part in ("late", "end of"):
        return last - timedelta(days=10), last
    if part is None:
        return first, last
    return first + timedelta(days=9), first + timedelta(days=20)


def _season(name: str, year: int) -> tuple[date, date]:
    """The three months of season ``name`` that begins in ``year`` (northern hemisphere)."""
    start = _SEASONS[name]
    end_year, end_month = (year + 1, 2) if start == 12 else (year, start + 2)
    return date(year, start, 1), _month(end_year, end_month)[1]


def _named_season(name: str, which: str | None, today: date) -> tuple[date, date]:
    """The season a member means by "this", "last" or "the" ``name``, as of ``today``: "this"
    is the one of this year, "last" the latest one already over, "the" the latest one begun."""
    if which == "this":
        return _season(name, today.year - 1 if name == "winter" and today.month < 3 else today.year)
    for year in (today.year, today.year - 1, today.year - 2):
        first, last = _season(name, year)
        if (last < today) if which in ("last", "past", "previous") else (first <= today):
            return first, last
    return _season(name, today.year - 2)


def _with_year(lowered: str) -> tuple[date, date] | None:
    """The days a date, month, season or year named with its year means; None without one."""
    found = _DATE_WITH_YEAR.search(lowered)
    if found:
        day_text, month_name = (
            (found.group(1), found.group(2))
            if found.group(1)
            else (
                found.group(4),
                found.group(3),
            )
        )
        try:
            day = date(int(found.group(5)), _MONTHS[month_name], int(day_text))
        except ValueError:
            return None
        return day - timedelta(days=1), day + timedelta(days=1)
    found = _MONTH_WITH_YEAR.search(lowered)
    if found:
        first, last = _month(int(found.group(3)), _MONTHS[found.group(2)])
        return _part_of_month(found.group(1), first, last)
    found = _SEASON.search(lowered)
    if found and found.group(3) is not None:
        return _season(found.group(2), int(found.group(3)))
    if found and found.group(5) is not None:
        return _season(found.group(4), int(found.group(5)))
    found = _YEAR.search(lowered)
    if found:
        return date(int(found.group(1)), 1, 1), date(int(found.group(1)), 12, 31)
    return None


def _past_month(month: int, today: date) -> tuple[date, date]:
    """First and last day of the most recent ``month`` not after ``today``."""
    return _month(today.year if month <= today.month else today.year - 1, month)


def _past_day(month: int, day: int, today: date) -> date | None:
    """The most recent ``month``/``day`` not after ``today`` (None when no such date)."""
    for year in (today.year, today.year - 1):
        try:
            found = date(year, month, day)
        except ValueError:
            return None
        if found <= today:
            return found
    return None


def time_range(text: str, now: float, timezone: str = "UTC") -> TimeRange | None:
    """The interval a date or time phrase in ``text`` means, as of ``now``; None if none.

    Relative phrases count back from ``now`` in ``timezone`` (the guild's zone); a month or
    day without a year is the most recent one. A phrase may widen by a day either side, so
    a conversation late in the evening still counts for "yesterday". "Recently" and "lately"
    name no interval: they ask for the latest such event, however long ago it was, which the
    ranking's recency already prefers (a fortnight's window lost the answer whenever the
    event was older).
    """
    zone = ZoneInfo(timezone) if timezone != "UTC" else ZoneInfo("UTC")
    lowered = " ".join(PIECE.findall(text.lower()))
    today = datetime.fromtimestamp(now, tz=UTC).astimezone(zone).date()
    week_start = today - timedelta(days=today.weekday())

    given = _with_year(lowered)
    if given is not None:
        return _day_range(*given, zone)
    found = _AGO.search(lowered)
    if found:
        count = int(found.group(1)) if found.group(1) else _NUMBERS[found.group(2)]
        span = _UNITS[found.group(3)]
        center = today - timedelta(days=count * span)
        slack = max(1, span * max(1, count) // 3)
        return _day_range(center - timedelta(days=slack), center + timedelta(days=slack), zone)
    found = _MONTH_DAY.search(lowered) or _DAY_OF_MONTH.search(lowered)
    if found:
        groups = found.groups()
        month_name, day_text = (groups[0], groups[1]) if groups[0] in _MONTHS else groups[::-1]
        day = _past_day(_MONTHS[month_name], int(day_text), today)
        if day is not None:
            return _day_range(day - timedelta(days=1), day + timedelta(days=1), zone)
    found = _PART_OF_MONTH.search(lowered)
    if found:
        first, last = _past_month(_MONTHS[found.group(2)], today)
        return _day_range(*_part_of_month(found.group(1), first, last), zone)
    found = _IN_MONTH.search(lowered)
    if found:
        first, last = _past_month(_MONTHS[found.group(1)], today)
        return _day_range(first, last, zone)
    found = _SEASON.search(lowered)
    if found and found.group(2) is not None:
        return _day_range(*_named_season(found.group(2), found.group(1), today), zone)
    found = _WEEKDAY.search(lowered)
    if found:
        back = (today.weekday() - _WEEKDAYS[found.group(2)]) % 7
        if found.group(1) in ("last", "past") and back == 0:
            back = 7
        day = today - timedelta(days=back)
        return _day_range(day, day, zone)
    phrases: tuple[tuple[str, tuple[date, date]], ...] = (
        ("day before yesterday", (today - timedelta(days=2), today - timedelta(days=2))),
        ("yesterday", (today - timedelta(days=1), today - timedelta(days=1))),
        ("last night", (today - timedelta(days=1), today)),
        ("today", (today, today)),
        ("tonight", (today, today)),
        ("this morning", (today, today)),
        ("last weekend", (week_start - timedelta(days=3), week_start - timedelta(days=1))),
        ("the weekend", (week_start - timedelta(days=3), week_start - timedelta(days=1))),
        ("last week", (week_start - timedelta(days=7), week_start - timedelta(days=1))),
        ("past week", (today - timedelta(days=7), today)),
        ("this week", (week_start, today)),
        ("last month", _past_month(12 if today.month == 1 else today.month - 1, today)),
        ("this month", (today.replace(day=1), today)),
        ("past month", (today - timedelta(days=30), today)),
        ("earlier this year", (today.replace(month=1, day=1), today)),
        ("the last year", (today - timedelta(days=365), today)),
        ("the past year", (today - timedelta(days=365), today)),
        ("this year", (today.replace(month=1, day=1), today)),
        ("last year", (date(today.year - 1, 1, 1), date(today.year - 1, 12, 31))),
    )
    padded = f" {lowered} "
    for phrase, (first, last) in phrases:
        if f" {phrase} " in padded:
            return _day_range(first - timedelta(days=1), last + timedelta(days=1), zone)
    return None
