"""The offline provider's profile operations on a full profile: merge rather than fold."""

from __future__ import annotations

from vivy.llm.offline import conversation_operations, profile_operations
from vivy.llm.schemas import (
    AddFact,
    FactView,
    InvalidateFact,
    MemberFacts,
    MergeFacts,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperation,
    TranscriptLine,
)

MAYA = 5


def ops(text: str, facts: tuple[FactView, ...], *, full: bool) -> list[ProfileOperation]:
    """The operations Maya saying ``text`` implies for ``facts``."""
    note = NoteView(
        8, "Chat", "A chat", "2026-02-24", ("Maya",), (TranscriptLine(MAYA, "Maya", text, 0.0),)
    )
    return profile_operations(ProfileInput(MAYA, "Maya", facts, (note,), full)).operations


def fact(fact_id: int, section: str, text: str) -> FactView:
    """A fact learnt from an earlier conversation."""
    return FactView(fact_id, section, text, "[earlier]")


def test_a_full_profile_joins_a_fact_with_the_same_predicate() -> None:
    """ "I love bouldering" joins "Loves ramen" instead of pushing another fact out."""
    facts = (fact(1, "interests", "Loves ramen"), fact(2, "bio", "Lives in Austin"))
    assert ops("I love bouldering", facts, full=True) == [
        MergeFacts(op="merge", fact_ids=[1], text="Loves ramen and bouldering", section="interests")
    ]
    assert ops("I love bouldering", facts, full=False) == [
        AddFact(
            op="add",
            section="interests",
            text="Loves bouldering",
            note_id=8,
            evidence="I love bouldering",
        )
    ]


def test_a_full_profile_replaces_a_near_duplicate_with_the_new_wording() -> None:
    """A restatement sharing most of a fact's words replaces it."""
    facts = (fact(3, "skills", "Is learning Japanese kana"),)
    merged = ops("I'm learning Japanese kana and kanji", facts, full=True)
    assert merged == [
        MergeFacts(
            op="merge", fact_ids=[3], text="Is learning Japanese kana and kanji", section="skills"
        )
    ]


def test_a_statement_a_longer_fact_already_says_adds_nothing() -> None:
    """ "I love bouldering" next to "Loves ramen and bouldering" is already known."""
    facts = (fact(4, "interests", "Loves ramen and bouldering"),)
    assert ops("I love bouldering", facts, full=True) == []
    assert ops("I love bouldering", facts, full=False) == []


def test_a_slot_in_a_full_profile_is_still_superseded() -> None:
    """A new home retires the old one (no fold needed), full or not."""
    facts = (fact(2, "bio", "Lives in Austin"),)
    found = ops("I moved to Denver last month", facts, full=True)
    invalidate, add = found
    assert isinstance(invalidate, InvalidateFact) and invalidate.fact_id == 2
    assert isinstance(add, AddFact) and add.text == "Lives in Denver"


def test_the_note_call_merges_for_members_marked_full() -> None:
    """A note call's member marked full gets the same merges as a full profile update."""
    line = TranscriptLine(MAYA, "Maya", "I love bouldering", 0.0)
    facts = (fact(1, "interests", "Loves ramen"),)
    entries = conversation_operations(
        NoteInput(1, 2, "general", (line,), (MemberFacts(MAYA, "Maya", facts, 45, True),))
    )
    assert [e.operations for e in entries] == [ops("I love bouldering", facts, full=True)]
