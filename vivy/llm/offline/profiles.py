"""Operations on a member's profile, from their first-person statements.

Statements (:mod:`vivy.llm.offline.facts`) add facts and supersede older facts of their
slot; in a full profile they merge into a fact they restate or list with.
:func:`profile_operations` serves a profile update, :func:`conversation_operations` the
members a note call lists and :func:`consolidate_profile` the nightly consolidation.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.llm.offline.facts import Statement, read_statements, slot_of_fact
from vivy.llm.offline.text import clip, compare_key, content_words
from vivy.llm.schemas import (
    AddFact,
    FactView,
    InvalidateFact,
    MemberOperations,
    MergeFacts,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperation,
    ProfileOperations,
    uncited,
)
from vivy.memory.facts import PROFILE_SECTIONS, ProfileSection

__all__ = ["consolidate_profile", "conversation_operations", "profile_operations"]

#: Longest fact, in words, that a new statement may still join in a full profile.
_JOINABLE_WORDS = 10


def _restated(statement: Statement, facts: Sequence[FactView], threshold: float) -> FactView | None:
    """The fact of ``statement``'s section sharing the most words with it, at least
    ``threshold`` of them (Jaccard), if any."""
    words = content_words(statement.text)
    best: tuple[float, int, FactView] | None = None
    for fact in facts:
        theirs = content_words(fact.text)
        if fact.section != statement.section or not words or not theirs:
            continue
        share = len(words & theirs) / len(words | theirs)
        if share >= threshold and (best is None or (share, fact.id) > best[:2]):
            best = (share, fact.id, fact)
    return None if best is None else best[2]


def _covered(statement: Statement, facts: Sequence[FactView]) -> bool:
    """Whether a fact of ``statement``'s section already says all it says ("Loves X" in
    "Loves X and Y")."""
    words = content_words(statement.text)
    return bool(words) and any(
        fact.section == statement.section and words <= content_words(fact.text) for fact in facts
    )


def _joinable(statement: Statement, facts: Sequence[FactView]) -> FactView | None:
    """The newest short fact of ``statement``'s section with the same predicate ("Loves …")."""
    if statement.predicate is None:
        return None
    head = statement.predicate.lower() + " "
    found = [
        fact
        for fact in facts
        if fact.section == statement.section
        and fact.text.lower().startswith(head)
        and len(fact.text.split()) <= _JOINABLE_WORDS
        and compare_key(statement.obj) not in compare_key(fact.text)
    ]
    return max(found, key=lambda fact: fact.id, default=None)


def _joined(fact: FactView, obj: str) -> str:
    """``fact``'s text with ``obj`` added to its list: "Loves X" and "Y" give "Loves X and Y"."""
    head, sep, tail = fact.text.rpartition(" and ")
    listed = f"{head}, {tail}" if sep else fact.text
    return clip(f"{listed} and {obj}", 200)


def _merge_at_cap(
    statement: Statement, facts: Sequence[FactView], taken: set[int]
) -> MergeFacts | None:
    """In a full profile, the merge that takes ``statement`` in without pushing a fact out.

    A near-duplicate (three quarters of the words) is replaced by the new wording; a
    list-like fact joins the newest fact with the same predicate ("Loves X and Y"); failing
    both, a fact sharing half the words is replaced. Facts in ``taken`` are not merged again.
    """
    free = [fact for fact in facts if fact.id not in taken]
    twin = _restated(statement, free, 0.75)
    partner = None if twin is not None else _joinable(statement, free)
    if partner is not None:
        return MergeFacts(
            op="merge",
            fact_ids=[partner.id],
            text=_joined(partner, statement.obj),
            section=statement.section,
        )
    twin = twin or _restated(statement, free, 0.5)
    if twin is not None:
        return MergeFacts(
            op="merge", fact_ids=[twin.id], text=statement.text, section=statement.section
        )
    return None


def _reason(statement: Statement) -> str:
    """Why a statement retires an older fact in its slot."""
    return clip(f"Superseded: {statement.text}", 200)


def _applyread_statements(
    payload: ProfileInput, active: Sequence[FactView]
) -> tuple[list[AddFact | MergeFacts], dict[int, str]]:
    """Adds, merges and invalidations that the user's own statements imply for ``active``.

    A statement already in the profile (or said by a fact of its section with more words)
    adds nothing; one that fills the slot of an older
    fact (a new home, a new employer, the opposite stance on the same thing) retires it. In
    a full profile (``payload.full``), a statement that would push a fact out is merged into
    a fact it restates or lists with (see :func:`_merge_at_cap`) when there is one.
    """
    known = {compare_key(fact.text) for fact in active}
    slots = {fact.id: slot_of_fact(fact.text) for fact in active}
    changes: list[AddFact | MergeFacts] = []
    pending_slots: list[tuple[str, str] | None] = []
    invalidated: dict[int, str] = {}
    for statement in read_statements(payload.user_id, payload.notes):
        key = compare_key(statement.text)
        if key in known or _covered(statement, active):
            continue
        replaces = False
        if statement.slot is not None:
            for fact in active:
                if slots[fact.id] == statement.slot:  # the latest statement of a slot wins
                    invalidated[fact.id] = _reason(statement)
                    known.discard(compare_key(fact.text))
                    replaces = True
            for index in reversed(range(len(changes))):
                if pending_slots[index] == statement.slot:
                    known.discard(compare_key(changes[index].text))
                    del changes[index], pending_slots[index]
        known.add(key)
        taken = set(invalidated) | {
            i for change in changes if isinstance(change, MergeFacts) for i in change.fact_ids
        }
        merge = None if replaces or not payload.full else _merge_at_cap(statement, active, taken)
        if merge is not None:
            changes.append(merge)
        else:
            changes.append(
                AddFact(
                    op="add",
                    section=statement.section,
                    text=statement.text,
                    note_id=statement.note_id,
                    evidence=statement.evidence,
                )
            )
        pending_slots.append(statement.slot)
    return changes, invalidated


def profile_operations(payload: ProfileInput) -> ProfileOperations:
    """Operations a new note implies for the user's profile, from their own statements."""
    changes, invalidated = _applyread_statements(payload, payload.facts)
    operations: list[ProfileOperation] = [
        InvalidateFact(op="invalidate", fact_id=fact_id, reason=reason)
        for fact_id, reason in sorted(invalidated.items())
    ]
    operations.extend(changes)
    return ProfileOperations(operations=operations[:40])


def conversation_operations(payload: NoteInput) -> list[MemberOperations]:
    """Each member the note call lists, with the operations their own statements imply."""
    names = tuple(dict.fromkeys(line.author_name for line in payload.lines))
    view = NoteView(0, "", "", "", names, payload.lines)
    return [
        MemberOperations(
            user_id=member.user_id,
            operations=uncited(
                profile_operations(
                    ProfileInput(
                        member.user_id, member.user_name, member.facts, (view,), member.full
                    )
                ).operations
            ),
        )
        for member in payload.members
    ]


def _near_duplicates(a: FactView, b: FactView) -> bool:
    """Whether two facts say the same thing (same words, give or take a few)."""
    if compare_key(a.text) == compare_key(b.text):
        return True
    words_a, words_b = content_words(a.text), content_words(b.text)
    if not words_a or not words_b:
        return False
    return len(words_a & words_b) / len(words_a | words_b) >= 0.75


def consolidate_profile(payload: ProfileInput) -> ProfileOperations:
    """The nightly consolidation: retire superseded facts, merge duplicates, add new facts.

    Of several facts in one slot (two homes, two employers) only the newest (highest id)
    stays. Near-duplicate facts in one section merge into the longest wording.
    """
    invalidated: dict[int, str] = {}
    newest: dict[tuple[str, str], FactView] = {}
    for fact in sorted(payload.facts, key=lambda fact: fact.id):
        slot = slot_of_fact(fact.text)
        if slot is None:
            continue
        older = newest.get(slot)
        if older is not None and compare_key(older.text) != compare_key(fact.text):
            invalidated[older.id] = clip(f"Superseded by fact #{fact.id}: {fact.text}", 200)
        newest[slot] = fact
    active = [fact for fact in payload.facts if fact.id not in invalidated]
    adds, retired = _applyread_statements(payload, active)
    for fact_id, reason in retired.items():
        invalidated.setdefault(fact_id, reason)
    remaining = sorted(
        (fact for fact in active if fact.id not in invalidated), key=lambda fact: fact.id
    )
    merges: list[MergeFacts] = []
    grouped: set[int] = set()
    for index, fact in enumerate(remaining):
        if fact.id in grouped:
            continue
        group = [fact] + [
            other
            for other in remaining[index + 1 :]
            if other.id not in grouped
            and other.section == fact.section
            and _near_duplicates(fact, other)
        ]
        if len(group) < 2:
            continue
        grouped.update(member.id for member in group)
        wording = max(group, key=lambda member: (len(member.text), member.id))
        merges.append(
            MergeFacts(
                op="merge",
                fact_ids=[member.id for member in group][:20],
                text=clip(wording.text, 200),
                section=_section(fact.section),
            )
        )
    operations: list[ProfileOperation] = [
        InvalidateFact(op="invalidate", fact_id=fact_id, reason=reason)
        for fact_id, reason in sorted(invalidated.items())
    ]
    operations.extend(merges)
    operations.extend(adds)
    return ProfileOperations(operations=operations[:40])


_SECTIONS: dict[str, ProfileSection] = {section: section for section in PROFILE_SECTIONS}


def _section(name: str) -> ProfileSection:
    """``name`` as a profile section, ``"other"`` when it is not one."""
    return _SECTIONS.get(name, "other")
