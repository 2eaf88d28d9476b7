"""Tests of the consolidation gate: a pro call only when a profile has something to fix."""

from __future__ import annotations

from vivy.state.profile import SECTION_CAP, ExistingFact, needs_consolidation


def fact(fact_id: int, section: str, text: str) -> ExistingFact:
    """An active fact learnt from a note."""
    return ExistingFact(fact_id, section, text, "note", float(fact_id))


def test_near_duplicates_need_consolidation() -> None:
    """Two facts of a section sharing most of their words are worth merging."""
    facts = [
        fact(1, "skills", "Is learning Go this semester"),
        fact(2, "skills", "Is learning Go for a class"),
    ]
    assert needs_consolidation(facts)


def test_distinct_facts_need_none() -> None:
    """Unrelated facts, or similar facts in different sections, need no pro call."""
    facts = [
        fact(1, "bio", "Lives in Austin"),
        fact(2, "bio", "Works at Dell as a QA engineer"),
        fact(3, "interests", "Loves JRPGs"),
        fact(4, "opinions", "Prefers JRPGs over shooters"),
    ]
    assert not needs_consolidation(facts)


def test_a_nearly_full_section_needs_consolidation() -> None:
    """A section one fact short of its cap is consolidated before it starts folding."""
    hobbies = [
        "Plays chess",
        "Paints watercolours",
        "Bakes bread",
        "Runs marathons",
        "Knits scarves",
        "Climbs rocks",
        "Sings opera",
        "Grows tomatoes",
    ]
    facts = [fact(i, "interests", text) for i, text in enumerate(hobbies[: SECTION_CAP - 1])]
    assert needs_consolidation(facts)
    assert not needs_consolidation(facts[:3])
