"""Tests of the consolidation gate (a pro call only when a profile has something to fix), of
the link from a replaced fact to its replacement, of a full profile's restatements, and of
which members and facts a note call covers."""

from __future__ import annotations

from vivy.llm.offline import profile_operations
from vivy.llm.schemas import (
    AddFact,
    ConversationDraft,
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
    NOTE_MEMBERS_CAP,
    PROFILE_CAP,
    SECTION_CAP,
    FactSource,
    MemberChoice,
    choose_note_members,
    consolidation_facts,
    estimate_tokens,
    needs_consolidation,
    note_facts,
    plan_operations,
    rank_facts,
    still_apply,
)


def fact(fact_id: int, section: str, text: str) -> ExistingFact:
    """An active fact learnt from a note."""
    return ExistingFact(fact_id, section, text, "note", float(fact_id))


def test_near_duplicates_need_consolidation() -> None:
    """A fact gained today that shares most of its words with another is worth merging."""
    facts = [
        fact(1, "skills", "Is learning Go this semester"),
        fact(2, "skills", "Is learning Go for a class"),
    ]
    assert needs_consolidation(facts, {2})


def test_old_overlaps_and_unchanged_profiles_need_none() -> None:
    """Pairs that were both there before the day, or a day with no new fact, cost no call."""
    facts = [
        fact(1, "skills", "Is learning Go this semester"),
        fact(2, "skills", "Is learning Go for a class"),
        fact(3, "bio", "Lives in Austin"),
    ]
    assert not needs_consolidation(facts, {3})
    assert not needs_consolidation(facts, set())


def test_distinct_facts_need_none() -> None:
    """Unrelated facts, or similar facts in different sections, need no pro call."""
    facts = [
        fact(1, "bio", "Lives in Austin"),
        fact(2, "bio", "Works at Dell as a QA engineer"),
        fact(3, "interests", "Loves JRPGs"),
        fact(4, "opinions", "Prefers JRPGs over shooters"),
    ]
    assert not needs_consolidation(facts, {1, 2, 3, 4})


HOBBIES = [
    "Plays chess",
    "Paints watercolours",
    "Bakes bread",
    "Runs marathons",
    "Knits scarves",
    "Climbs rocks",
    "Sings opera",
    "Grows tomatoes",
]


def test_a_nearly_full_section_merges_facts_on_one_subject() -> None:
    """Near its cap, a section is consolidated for a looser overlap (a merge makes room),
    and still not for a new fact unlike the others."""
    facts = [fact(i, "interests", text) for i, text in enumerate(HOBBIES[: SECTION_CAP - 2])]
    cello = fact(50, "interests", "Plays the cello")
    assert needs_consolidation([*facts, cello], {50})
    assert not needs_consolidation([*facts[:3], cello], {50})
    opera = fact(51, "interests", "Sings opera")
    assert not needs_consolidation([*facts, opera], {51})


def test_consolidation_reads_what_it_can_change_first_within_its_budget() -> None:
    """The overlapping facts lead the consolidation's input, and the rest is cut by tokens."""
    facts = [fact(i, "interests", f"Collects vintage postcard series {i}") for i in range(1, 41)]
    facts += [fact(90, "skills", "Is learning Go this semester")]
    facts += [fact(91, "skills", "Is learning Go for a class")]
    shown = consolidation_facts(facts, {91}, budget=60)
    assert [f.id for f in shown[:2]] == [91, 90]
    assert 2 < len(shown) < len(facts)
    assert sum(estimate_tokens(f"{f.id} {f.section}: {f.text}") for f in shown) <= 60


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


def test_note_members_split_by_disclosure_and_cap_only() -> None:
    """Silent members need nothing; only members past the cap get their own call, however
    many facts anyone holds."""
    choice = choose_note_members(
        [
            (1, "I live in Austin"),
            (2, "lol ok"),
            (3, "my dog is named Bento"),
            (4, "I work at Dell"),
        ],
        members_cap=2,
    )
    assert choice == MemberChoice(combined=(1, 3), silent=(2,), separate=(4,))


def test_the_member_cap_holds_every_note_answer_entry() -> None:
    """The cap is as large as the note answer's schema allows, so an answer can cover all."""
    assert ConversationDraft.model_fields["profiles"].metadata[0].max_length == NOTE_MEMBERS_CAP


def test_facts_sent_with_a_note_are_the_most_relevant_within_the_budget() -> None:
    """A full profile is sent in part: the facts the member's words touch, then the newest."""
    facts = [fact(i, "other", f"Owns board game number {i}") for i in range(1, PROFILE_CAP + 1)]
    facts[4] = fact(5, "bio", "Lives in Austin")
    sent = note_facts(facts, "I moved from Austin to Denver", budget=40)
    assert sent[0].id == 5
    assert [f.id for f in sent[1:]] == [45, 44, 43, 42][: len(sent) - 1]
    assert sum(estimate_tokens(f"{f.id} {f.section}: {f.text}") for f in sent) <= 40
    assert note_facts(facts[:3], "hi") == rank_facts(facts[:3], "hi")


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


def full_profile(kind: str = "note") -> list[ExistingFact]:
    """A profile at its cap, every section full or one short; fact 1 learns Go."""
    sizes = {"bio": 8, "interests": 8, "skills": 8, "opinions": 7, "relationships": 7, "other": 7}
    facts = [ExistingFact(1, "skills", "Is learning Go this semester", kind, 1.0)]
    for section, size in sizes.items():
        for n in range(size - (section == "skills")):
            facts.append(fact(len(facts) + 1, section, f"{section} detail {n} about Maple"))
    assert len(facts) == PROFILE_CAP
    return facts


def test_a_restatement_in_a_full_profile_merges_instead_of_folding() -> None:
    """At the cap, a near-duplicate of a fact replaces it; no other fact is folded out."""
    source = FactSource(7, "[study, Mar 4]", "I'm learning Go for a class")
    add = AddFact(op="add", section="skills", text="Is learning Go for a class")
    plan = plan_operations(full_profile(), fact_operations([add]), {7: source})
    assert [(n.text, n.supersedes) for n in plan.added] == [("Is learning Go for a class", (1,))]
    assert [(r.fact_id, r.reason) for r in plan.retired] == [(1, "merged: restated")]


def test_a_restatement_of_a_stated_fact_in_a_full_profile_is_dropped() -> None:
    """A fact the member stated with a command is never folded out for its near-duplicate."""
    source = FactSource(7, "[study, Mar 4]", "I'm learning Go for a class")
    add = AddFact(op="add", section="skills", text="Is learning Go for a class")
    plan = plan_operations(full_profile("stated"), fact_operations([add]), {7: source})
    assert not plan.changes


def test_a_new_fact_in_a_full_profile_replaces_the_oldest_learnt_one() -> None:
    """At the cap, a fact unlike the others still gets in: the oldest conversation fact of its
    section goes, never a stated one."""
    source = FactSource(7, "[music, Mar 4]", "I play the cello")
    add = AddFact(op="add", section="skills", text="Plays the cello")
    facts = full_profile("stated")
    oldest_learnt = min(f.id for f in facts if f.section == "skills" and f.id != 1)
    plan = plan_operations(facts, fact_operations([add]), {7: source})
    assert [n.text for n in plan.added] == ["Plays the cello"]
    assert [(r.fact_id, r.reason) for r in plan.retired] == [
        (oldest_learnt, "folded: section full")
    ]


def test_stale_operations_still_apply_when_the_change_is_unrelated() -> None:
    """Operations computed before an unrelated fact arrived are planned as they are; ones
    naming a fact gone since, or adding next to a newer fact on their subject, are not."""
    facts = [fact(1, "bio", "Lives in Austin"), fact(2, "relationships", "Has a cat named Miso")]
    adds_home: list[ProfileOperation] = [
        InvalidateFact(op="invalidate", fact_id=1, reason="Superseded: Lives in Denver"),
        AddFact(op="add", section="bio", text="Lives in Denver"),
    ]
    stale = fact_operations(adds_home)
    assert still_apply(facts, stale)
    assert not still_apply(facts[1:], stale)
    boston = fact(3, "bio", "Lives in Boston")
    assert not still_apply([*facts, boston], stale)
    rust = fact_operations([AddFact(op="add", section="skills", text="Uses Rust")])
    assert still_apply([*facts, boston], rust)
