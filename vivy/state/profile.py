"""Turning LLM profile operations into a checked plan, without I/O.

The LLM proposes operations on a member's facts (seed 000's model applied to profiles: add,
merge, invalidate, keep). :func:`plan_operations` validates each one against the member's
active facts and the guards, and returns what to write and what was rejected and why:

* every new fact carries the note it came from, or is marked as a consolidation (a merge);
* a new fact must be grounded in the member's own words and must not read as an instruction
  or a secret; a nightly consolidation may merge and retire facts but not add any;
* operations naming fact ids that are not the member's active facts are rejected;
* a fact has at most :data:`~vivy.memory.guards.MAX_FACT_WORDS` words;
* a section holds at most :data:`SECTION_CAP` facts and a profile :data:`PROFILE_CAP`; when a
  cap is reached the oldest facts learnt from conversation are folded (retired) first.

:func:`choose_note_members` decides which participants' operations the note call itself
returns (one model call per conversation) and which keep a separate profile-update call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import combinations

from vivy.memory.facts import (
    AddFact,
    ExistingFact,
    FactOperation,
    InvalidateFact,
    KeepFact,
    MergeFacts,
    NewFact,
    RetiredFact,
)
from vivy.memory.guards import (
    MAX_FACT_WORDS,
    content_tokens,
    discloses_self,
    is_grounded,
    looks_like_instruction,
)

__all__ = [
    "NOTE_FACTS_CAP",
    "NOTE_MEMBERS_CAP",
    "PROFILE_CAP",
    "SECTION_CAP",
    "FactSource",
    "MemberChoice",
    "ProfilePlan",
    "ProfileUpdateOutcome",
    "Rejection",
    "check_fact_text",
    "choose_note_members",
    "needs_consolidation",
    "plan_operations",
    "rank_facts",
]

#: Most active facts in one section.
SECTION_CAP = 8
#: Most active facts in one profile.
PROFILE_CAP = 45
#: Most participants whose profile operations one note call returns.
NOTE_MEMBERS_CAP = 6
#: Most facts of one participant sent with a note; a longer profile gets a call of its own.
NOTE_FACTS_CAP = 30


class Rejection(StrEnum):
    """Why a proposed operation was not applied."""

    UNGROUNDED = "ungrounded"
    INSTRUCTION = "instruction"
    UNKNOWN_FACT = "unknown_fact"
    TOO_LONG = "too_long"
    SECTION_FULL = "section_full"


class ProfileUpdateOutcome(StrEnum):
    """How one durable profile update ended (label ``outcome``)."""

    #: The operations were applied.
    APPLIED = "applied"
    #: The update failed and stays pending.
    FAILED = "failed"
    #: A concurrent change was detected and the update was retried.
    CONFLICT_RETRIED = "conflict_retried"
    #: The member said nothing about themselves in the notes: no call was needed.
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class FactSource:
    """A note a new fact may come from: its id, its label for citations, and its text."""

    note_id: int
    label: str
    text: str


@dataclass(slots=True)
class ProfilePlan:
    """What to write for one profile update, and what was refused."""

    added: list[NewFact] = field(default_factory=list)
    retired: list[RetiredFact] = field(default_factory=list)
    rejected: list[tuple[Rejection, str]] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        """Whether anything is to be written."""
        return bool(self.added or self.retired)


def check_fact_text(text: str) -> Rejection | None:
    """The guard a fact's text fails on its own (length, instruction), if any."""
    if looks_like_instruction(text):
        return Rejection.INSTRUCTION
    if len(text.split()) > MAX_FACT_WORDS:
        return Rejection.TOO_LONG
    return None


def _same(a: str, b: str) -> bool:
    return content_tokens(a) == content_tokens(b) and bool(content_tokens(a))


def plan_operations(
    facts: Sequence[ExistingFact],
    operations: Sequence[FactOperation],
    sources: Mapping[int, FactSource],
    *,
    consolidation: bool = False,
) -> ProfilePlan:
    """Validate ``operations`` against ``facts`` and ``sources``; see the module docstring.

    ``sources`` are the notes the operations may cite, with the member's own lines as their
    text; an add without a note id cites the only source when there is exactly one. In a
    consolidation only merges (resting on the merged facts' text), invalidations and keeps
    are accepted.
    """
    plan = ProfilePlan()
    active = {fact.id: fact for fact in facts}
    retiring: set[int] = set()
    invalidated: list[ExistingFact] = []
    single = next(iter(sources.values())) if len(sources) == 1 else None

    def source_for(note_id: int | None) -> FactSource | None:
        if note_id is None:
            return single
        return sources.get(note_id)

    for op in operations:
        if isinstance(op, KeepFact):
            if op.fact_id not in active:
                plan.rejected.append((Rejection.UNKNOWN_FACT, f"keep {op.fact_id}"))
            continue
        if isinstance(op, InvalidateFact):
            if op.fact_id not in active or op.fact_id in retiring:
                plan.rejected.append((Rejection.UNKNOWN_FACT, f"invalidate {op.fact_id}"))
                continue
            if looks_like_instruction(op.reason):
                plan.rejected.append((Rejection.INSTRUCTION, f"invalidate {op.fact_id}"))
                continue
            retiring.add(op.fact_id)
            invalidated.append(active[op.fact_id])
            plan.retired.append(RetiredFact(op.fact_id, op.reason or "contradicted"))
            continue
        refused = check_fact_text(op.text)
        if refused is not None:
            plan.rejected.append((refused, op.text))
            continue
        source = source_for(op.note_id)
        if op.note_id is not None and source is None:
            plan.rejected.append((Rejection.UNKNOWN_FACT, f"note {op.note_id}"))
            continue
        if isinstance(op, MergeFacts):
            ids = tuple(dict.fromkeys(op.fact_ids))
            if any(i not in active or i in retiring for i in ids):
                plan.rejected.append((Rejection.UNKNOWN_FACT, f"merge {list(ids)}"))
                continue
            basis = " ".join(active[i].text for i in ids) + " " + (source.text if source else "")
            if not is_grounded(op.text, basis):
                plan.rejected.append((Rejection.UNGROUNDED, op.text))
                continue
            retiring.update(ids)
            plan.retired.extend(RetiredFact(i, "merged") for i in ids)
            plan.added.append(_new_fact(op.section, op.text, source, consolidation, ids))
            continue
        assert isinstance(op, AddFact)
        # A new fact rests on the member's own words only: the LLM's evidence is not a source
        # (it could pad a real quote with an invented claim), and a consolidation, which sees
        # notes' summaries rather than what the member said, may merge or retire facts but
        # not add new ones.
        if consolidation or source is None or not is_grounded(op.text, source.text):
            plan.rejected.append((Rejection.UNGROUNDED, op.text))
            continue
        duplicate = any(
            _same(f.text, op.text) for f in active.values() if f.id not in retiring
        ) or any(_same(n.text, op.text) for n in plan.added)
        if duplicate:
            continue
        plan.added.append(_new_fact(op.section, op.text, source, consolidation, ()))
    _link_replacements(plan, invalidated, {r.fact_id: r.reason for r in plan.retired})
    _fold_to_caps(plan, [f for f in facts if f.id not in retiring])
    return plan


def _link_replacements(
    plan: ProfilePlan, invalidated: Sequence[ExistingFact], reasons: Mapping[int, str]
) -> None:
    """Mark an added fact as superseding the invalidated fact whose reason names it.

    An invalidation "Superseded: Lives in Portland" next to the add "Lives in Portland" is a
    replacement, so the old fact's history links to the new one, as a merge's does.
    """
    for fact in invalidated:
        reason = content_tokens(reasons[fact.id])
        for index, new in enumerate(plan.added):
            words = content_tokens(new.text)
            if new.section == fact.section and words and words <= reason:
                plan.added[index] = replace(new, supersedes=(*new.supersedes, fact.id))
                break


def _new_fact(
    section: str,
    text: str,
    source: FactSource | None,
    consolidation: bool,
    supersedes: tuple[int, ...],
) -> NewFact:
    if source is not None:
        return NewFact(section, text, "note", source.note_id, source.label, supersedes)
    return NewFact(section, text, "consolidation", None, "daily consolidation", supersedes)


def _fold_to_caps(plan: ProfilePlan, remaining: list[ExistingFact]) -> None:
    """Retire the oldest conversation facts until every section and the profile fit the caps."""
    # Stated facts (the member's own words) are folded last; older before newer.
    order = sorted(remaining, key=lambda f: (f.source_kind == "stated", f.created_at, f.id))
    for section in {n.section for n in plan.added} | {f.section for f in remaining}:
        in_section = [f for f in order if f.section == section]
        excess = len(in_section) + sum(n.section == section for n in plan.added) - SECTION_CAP
        for fact in in_section[: max(0, excess)]:
            plan.retired.append(RetiredFact(fact.id, "folded: section full"))
            order.remove(fact)
        if excess > len(in_section):
            dropped = [n for n in plan.added if n.section == section][: excess - len(in_section)]
            for new in dropped:
                plan.added.remove(new)
                plan.rejected.append((Rejection.SECTION_FULL, new.text))
    excess = len(order) + len(plan.added) - PROFILE_CAP
    for fact in order[: max(0, excess)]:
        plan.retired.append(RetiredFact(fact.id, "folded: profile full"))


#: Word overlap (Jaccard) at which two facts of a section count as near-duplicates.
NEAR_DUPLICATE = 0.5


def needs_consolidation(facts: Sequence[ExistingFact]) -> bool:
    """Whether a profile has something a consolidation can fix.

    That is near-duplicate facts in a section, or a section or the whole profile close to
    its cap. A profile without any is left alone, which saves a pro call per member and day.
    """
    if len(facts) >= PROFILE_CAP - 5:
        return True
    sections: dict[str, list[frozenset[str]]] = {}
    for fact in facts:
        sections.setdefault(fact.section, []).append(content_tokens(fact.text))
    for words in sections.values():
        if len(words) >= SECTION_CAP - 1:
            return True
        for a, b in combinations(words, 2):
            if a and b and len(a & b) / len(a | b) >= NEAR_DUPLICATE:
                return True
    return False


@dataclass(frozen=True, slots=True)
class MemberChoice:
    """Who a note call covers: participants by how their profile update is done.

    ``combined`` get their operations from the note call itself; ``silent`` said nothing
    about themselves, so nothing can be learnt and no model is asked; ``separate`` keep a
    profile-update call of their own (too many facts, or more participants than fit).
    """

    combined: tuple[int, ...]
    silent: tuple[int, ...]
    separate: tuple[int, ...]


def choose_note_members(
    participants: Sequence[tuple[int, str, int]],
    *,
    members_cap: int = NOTE_MEMBERS_CAP,
    facts_cap: int = NOTE_FACTS_CAP,
) -> MemberChoice:
    """Split ``participants`` (user id, their own lines, fact count; most active first).

    The first ``members_cap`` who disclosed something about themselves and have at most
    ``facts_cap`` facts are covered by the note call; the other disclosing ones keep a
    separate call.
    """
    combined: list[int] = []
    silent: list[int] = []
    separate: list[int] = []
    for user_id, own_text, fact_count in participants:
        if not discloses_self(own_text):
            silent.append(user_id)
        elif fact_count <= facts_cap and len(combined) < members_cap:
            combined.append(user_id)
        else:
            separate.append(user_id)
    return MemberChoice(tuple(combined), tuple(silent), tuple(separate))


def rank_facts(facts: Sequence[ExistingFact], own_text: str) -> list[ExistingFact]:
    """``facts`` most relevant first: most words shared with ``own_text``, then newest.

    A fact the member's new words touch is one an operation may invalidate or merge, so it
    leads the list the model reads.
    """
    said = content_tokens(own_text)
    return sorted(facts, key=lambda f: (-len(content_tokens(f.text) & said), -f.created_at, -f.id))
