"""The read plan of a note search: which reads run, and where, decided before any read."""

from __future__ import annotations

import pytest

from vivy.storage.search_flow import ReadPlan
from vivy.storage.search_types import NoteSearch, TimeRange


def search(
    *,
    vector: bool = True,
    terms: tuple[str, ...] = ("bento",),
    note_type: str | None = None,
    evidence: bool = True,
    time: TimeRange | None = None,
) -> NoteSearch:
    """A search of guild 1 with or without a vector and terms."""
    return NoteSearch(
        1,
        [0.1, 0.2] if vector else None,
        terms,
        note_type,
        candidates=40,
        keyword_candidates=30,
        evidence=evidence,
        time=time,
    )


@pytest.mark.parametrize("sides", [0, 1, 2])
def test_keyword_searches_go_aside_while_sides_last(sides: int) -> None:
    """The notes' keyword search takes the first side, the windows' the second; without a
    side each runs on the call's connection."""
    plan = ReadPlan.of(search(), sides, keyword_notes_here=False)
    assert (plan.vectors, plan.note_keywords, plan.window_keywords) == (True, True, True)
    assert plan.note_keywords_aside == (sides >= 1)
    assert plan.window_keywords_aside == (sides >= 2)
    assert plan.may_compare and plan.time is None and not plan.keyword_notes_here


def test_a_question_without_terms_reads_no_keyword_index() -> None:
    """No terms: no keyword search, on a side or here; the vector search still runs."""
    plan = ReadPlan.of(search(terms=()), 2, keyword_notes_here=True)
    assert plan.vectors and not plan.note_keywords and not plan.window_keywords
    assert not plan.note_keywords_aside and not plan.window_keywords_aside


def test_without_a_vector_nothing_is_compared() -> None:
    """Keyword-only: windows are searched by keyword but never compared with a vector."""
    plan = ReadPlan.of(search(vector=False), 2, keyword_notes_here=False)
    assert not plan.vectors and not plan.may_compare and plan.window_keywords


def test_clusters_and_evidence_off_read_no_windows() -> None:
    """Topic clusters have no evidence, and a search without evidence reads none."""
    for plan in (
        ReadPlan.of(search(note_type="topic_cluster"), 2, keyword_notes_here=False),
        ReadPlan.of(search(evidence=False), 2, keyword_notes_here=False),
    ):
        assert plan.note_keywords and not plan.window_keywords and not plan.may_compare


def test_the_time_a_question_names_is_read() -> None:
    """A question naming a time reads the notes of that span."""
    span = TimeRange(100.0, 200.0)
    assert ReadPlan.of(search(time=span), 0, keyword_notes_here=False).time == span
