"""Names and time phrases in questions: pure functions, table-driven."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vivy.retrieval.query import asks_when, name_grams, proper_names, time_range
from vivy.storage.search_types import TimeRange

#: Wednesday 2026-04-15, 12:00 UTC.
NOW = datetime(2026, 4, 15, 12, 0, tzinfo=UTC).timestamp()


def day(text: str) -> float:
    """Midnight UTC of a ``YYYY-MM-DD`` date."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("what did Sam say yesterday?", "2026-04-13", "2026-04-16"),
        ("anything from last week?", "2026-04-05", "2026-04-14"),
        ("what happened this month", "2026-03-31", "2026-04-17"),
        ("what was Maya worried about in early March?", "2026-03-01", "2026-03-12"),
        ("what did they plan in late January", "2026-01-21", "2026-02-01"),
        ("where did Sam go in May?", "2025-05-01", "2025-06-01"),
        ("what did Ravi cook on March 3rd", "2026-03-02", "2026-03-05"),
        ("the 3rd of March", "2026-03-02", "2026-03-05"),
        ("about three weeks ago, what did juni say", "2026-03-18", "2026-04-02"),
        ("a couple of days ago", "2026-04-12", "2026-04-15"),
        ("what did we do last Friday", "2026-04-10", "2026-04-11"),
        ("on monday", "2026-04-13", "2026-04-14"),
        ("what happened last month?", "2026-02-28", "2026-04-02"),
        ("what did John sign on 21 May, 2023?", "2023-05-20", "2023-05-23"),
        ("as mentioned on November 6, 2023", "2023-11-05", "2023-11-08"),
        ("what did he attend in March 2023?", "2023-03-01", "2023-04-01"),
        ("which classes did Evan join in mid-August 2023?", "2023-08-10", "2023-08-22"),
        ("what did she paint in 2022?", "2022-01-01", "2023-01-01"),
        ("where did they go in the summer of 2022", "2022-06-01", "2022-09-01"),
        ("winter 2021", "2021-12-01", "2022-03-01"),
        ("what did we do last summer", "2025-06-01", "2025-09-01"),
        ("in the spring", "2026-03-01", "2026-06-01"),
        ("who visited him in the last year?", "2025-04-14", "2026-04-17"),
    ],
)
def test_time_phrases(question: str, first: str, last: str) -> None:
    """Each phrase means the interval a member would expect, counted back from now, widened
    by a day either side for "yesterday"-like phrases (``last`` is the exclusive end)."""
    found = time_range(question, NOW)
    assert found == TimeRange(day(first), day(last))


@pytest.mark.parametrize(
    "question",
    [
        "what did Sam name his dog?",
        "may I ask what Maya cooks",
        "when did Maya start her job?",
        "did she fall off her bike?",
        "what year did John start surfing?",
        "is 2022 a year or a count?",
        "what forum did Tim join recently?",
        "what has Maya been reading lately",
    ],
)
def test_no_time_phrase_means_no_range(question: str) -> None:
    """Without a date or time phrase nothing is guessed ("may I" is not the month; "recently"
    asks for the latest event, not for a window of days)."""
    assert time_range(question, NOW) is None


def test_time_zone_decides_the_day() -> None:
    """'Yesterday' is the guild's yesterday: 01:00 UTC is still the previous evening in LA."""
    early = datetime(2026, 4, 15, 1, 0, tzinfo=UTC).timestamp()
    utc = time_range("yesterday", early)
    la = time_range("yesterday", early, "America/Los_Angeles")
    assert utc is not None and la is not None and la.start > utc.start - 86400 * 2
    assert la.start - utc.start == pytest.approx(7 * 3600 - 86400)


def test_distance_to_a_range() -> None:
    """A conversation inside the range is 0 away; one before or after by the gap."""
    span = TimeRange(100.0, 200.0)
    assert span.distance(150.0, 160.0) == 0.0
    assert span.distance(20.0, 60.0) == 40.0
    assert span.distance(260.0, 300.0) == 60.0


def test_name_grams_are_word_runs_up_to_three() -> None:
    """A two-word display name is found as one gram; punctuation and case do not matter."""
    grams = name_grams("Did Maya Lee's dog, Biscuit, bark?")
    assert "maya lee" in grams and "biscuit" in grams and "maya lee s" in grams
    assert all(len(gram.split()) <= 3 for gram in grams)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What did Melanie paint in Paris?", ("melanie", "paris")),
        ("Melanie: what did she paint?", ()),
        ("When did James' mother visit Sam's sister?", ("james", "sam")),
        ("Thanks. Where did Maria go?", ("maria",)),
        ("what did I do in May and on Friday", ()),
        ("what did sam say", ()),
    ],
)
def test_proper_names_are_capitalised_words_inside_a_sentence(
    question: str, names: tuple[str, ...]
) -> None:
    """A capital opening a sentence, a month, a weekday and "I" name nobody; a possessive goes."""
    assert proper_names(question) == names


@pytest.mark.parametrize(
    ("question", "when"),
    [
        ("When did Maya move to Lisbon?", True),
        ("What year did John start surfing?", True),
        ("hey vivy, when is the party?", True),
        ("How long ago did Sam adopt Bento?", True),
        ("What did Sam feel when he won?", False),
        ("Where did Maya move?", False),
    ],
)
def test_asks_when_is_a_sentence_opening_with_when(question: str, when: bool) -> None:
    """A sentence opening by asking when (or which year, or how long ago) asks when; a
    "when" inside a clause does not."""
    assert asks_when(question) is when
