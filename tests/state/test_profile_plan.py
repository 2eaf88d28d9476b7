"""Tests of the consolidation gate (a pro call only when a profile has something to fix), of
the link from a replaced fact to its replacement, and of which members a note call covers."""

from __future__ import annotations

from vivy.llm.offline import profile_operations
from vivy.llm.schemas import (
    AddFact,
    FactView,
    InvalidateFact,
    KeepFact,
    MergeFacts,
    NoteView,
    ProfileInput,
    ProfileOperation,
    TranscriptLine,
    fact_operations,
    uncited,
)
from vivy.memory.facts import ExistingFact
from vivy.state.profile import (
    NOTE_FACTS_CAP,
    SECTION_CAP,
    FactSource,
    MemberChoice,
    choose_note_members,
    needs_consolidation,
    plan_operations,
    rank_facts,
)


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


def test_an_invalidation_naming_an_added_fact_is_its_replacement() -> None:
    """ "Superseded: Lives in Denver" next to the add "Lives in Denver" links the two, so the
    old fact's history shows what replaced it (superseded_by)."""
    source = FactSource(7, "[moving day, Mar 4]", "I moved to Denver last month")
    operations = [
        InvalidateFact(op="invalidate", fact_id=1, reason="Superseded: Lives in Denver"),
        InvalidateFact(op="invalidate", fact_id=2, reason="no longer true"),
        AddFact(op="add", section="bio", text="Lives in Denver", note_id=7),
    ]
    facts = [fact(1, "bio", "Lives in Portland"), fact(2, "interests", "Plays chess")]
    plan = plan_operations(facts, fact_operations(operations), {7: source})
    assert [(n.text, n.supersedes) for n in plan.added] == [("Lives in Denver", (1,))]
    assert {r.fact_id for r in plan.retired} == {1, 2}


def test_the_offline_provider_names_the_last_statement_of_a_slot() -> None:
    """ "I said Portland out of habit. I moved to Denver" retires Portland for Denver."""
    said = "I said I live in Portland the other day out of habit. I moved to Denver last month"
    payload = ProfileInput(
        user_id=5,
        user_name="Priya",
        facts=(FactView(id=1, section="bio", text="Lives in Portland", source="[Mar 2]"),),
        notes=(
            NoteView(
                id=7,
                title="moving day",
                summary="Priya moved.",
                date="2026-03-04",
                participants=("Priya",),
                lines=(TranscriptLine(5, "Priya", said, 0.0),),
            ),
        ),
    )
    operations = profile_operations(payload).operations
    reasons = [op.reason for op in operations if isinstance(op, InvalidateFact)]
    assert reasons == ["Superseded: Lives in Denver"]


def test_note_members_split_by_disclosure_fact_count_and_cap() -> None:
    """Silent members need nothing; long profiles and members past the cap get their own call."""
    choice = choose_note_members(
        [
            (1, "I live in Austin", 3),
            (2, "lol ok", 0),
            (3, "my dog is named Bento", NOTE_FACTS_CAP + 1),
            (4, "I work at Dell", NOTE_FACTS_CAP),
            (5, "I play chess", 0),
        ],
        members_cap=2,
    )
    assert choice == MemberChoice(combined=(1, 4), silent=(2,), separate=(3, 5))


def test_facts_touched_by_the_new_lines_come_first() -> None:
    """Facts sharing words with what the member just said lead; the rest newest first."""
    facts = [
        fact(1, "bio", "Lives in Austin"),
        fact(2, "interests", "Loves JRPGs"),
        fact(3, "bio", "Works at Dell"),
    ]
    ranked = rank_facts(facts, "I moved from Austin to Denver")
    assert [f.id for f in ranked] == [1, 3, 2]


def test_uncited_operations_lose_their_note_ids_only() -> None:
    """Adds and merges drop the note id a note call cannot know; other operations stay."""
    ops: list[ProfileOperation] = [
        AddFact(op="add", section="bio", text="Lives in Austin", note_id=99),
        MergeFacts(op="merge", fact_ids=[1, 2], text="Owns a PS5", section="other", note_id=5),
        KeepFact(op="keep", fact_id=3),
    ]
    cleared = uncited(ops)
    assert [getattr(op, "note_id", None) for op in cleared] == [None, None, None]
    assert cleared[2] == ops[2]
    assert [op.op for op in cleared] == ["add", "merge", "keep"]
