"""Turning LLM profile operations into a checked plan, without I/O.

The LLM proposes operations on a member's facts (add, merge, invalidate,
keep). :func:`plan_operations` validates each one against the member's
active facts and the guards, and returns what to write and what was rejected and why:

* every new fact carries the note it came from, or is marked as a consolidation (a merge);
* a new fact must be grounded in the member's own words and must not read as an instruction
  or a secret; a nightly consolidation may merge and retire facts but not add any;
* operations naming fact ids that are not the member's active facts are rejected;
* a fact has at most :data:`~vivy.memory.guards.MAX_FACT_WORDS` words;
* a section holds at most :data:`SECTION_CAP` facts and a profile :data:`PROFILE_CAP`; when a
  new fact would overflow one, it replaces a near-duplicate of itself if the section has
  one (a restatement merges, it does not push an unrelated fact out), else the oldest facts
  learnt from conversation are folded (retired) first.

:func:`choose_note_members` decides which participants' operations the note call itself
returns (one model call per conversation, whatever the size of their profiles), and
:func:`note_facts` which of a member's facts it sends, within a token budget.
:func:`needs_consolidation` decides, without a model call, whether a nightly consolidation
can change a profile, and :func:`consolidation_facts` bounds what that call reads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

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
    "CONSOLIDATION_FACT_TOKENS",
    "CONSOLIDATION_NOTE_TOKENS",
    "NOTE_FACT_TOKENS",
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
    "consolidation_facts",
    "estimate_tokens",
    "fitting",
    "needs_consolidation",
    "note_facts",
    "plan_operations",
    "rank_facts",
    "still_apply",
]

#: Most active facts in one section.
SECTION_CAP = 8
#: Most active facts in one profile.
PROFILE_CAP = 45
#: Most participants whose profile operations one note call returns (the note answer's
#: schema holds as many entries). Sized above the participants of the conversations the cost
#: benchmark replays, so a conversation of a typical server never reaches it.
NOTE_MEMBERS_CAP = 8
#: Tokens of one member's facts sent with a note: the facts their words could touch.
NOTE_FACT_TOKENS = 240
#: Tokens of the facts a nightly consolidation reads.
CONSOLIDATION_FACT_TOKENS = 900
#: Tokens of the day's notes a nightly consolidation reads.
CONSOLIDATION_NOTE_TOKENS = 1200
#: Facts this close to the profile cap (or one short of a section's) count as near a cap.
NEAR_CAP_MARGIN = 5
#: Word overlap (Jaccard) at which two facts of a section count as near-duplicates.
NEAR_DUPLICATE = 0.5
#: Word overlap at which two facts of a section near its cap are worth merging into one.
NEAR_CAP_OVERLAP = 1 / 3


def estimate_tokens(text: str) -> int:
    """A model's token count of ``text``, estimated at four characters a token."""
    return max(1, -(-len(text) // 4))


def fitting(texts: Sequence[str], budget: int) -> int:
    """How many of the leading ``texts`` fit in ``budget`` tokens together (at least one)."""
    spent = 0
    for index, text in enumerate(texts):
        spent += estimate_tokens(text)
        if spent > budget:
            return max(1, index)
    return len(texts)


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
    """Fit every section and the profile into the caps: restatements first replace their
    near-duplicates, then the oldest conversation facts are retired."""
    # Stated facts (the member's own words) are folded last; older before newer.
    order = sorted(remaining, key=lambda f: (f.source_kind == "stated", f.created_at, f.id))
    _merge_restatements(plan, order)
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


def _overlap(a: str, b: str) -> float:
    """The share of content words two texts have in common (Jaccard)."""
    words_a, words_b = content_tokens(a), content_tokens(b)
    if not words_a or not words_b:
        return 0.0
    return len(words_a & words_b) / len(words_a | words_b)


def _merge_restatements(plan: ProfilePlan, order: list[ExistingFact]) -> None:
    """A new fact that would overflow its section or the profile replaces its near-duplicate.

    Folding an unrelated fact to make room for a restatement of another loses a fact for
    nothing: the near-duplicate is merged into the new wording instead (its history links to
    it). A near-duplicate the member stated with a command stays, and the restatement is
    dropped. ``order`` loses the facts merged away.
    """
    for new in list(plan.added):
        if new.source_kind != "note":
            continue
        in_section = sum(f.section == new.section for f in order)
        in_section += sum(n.section == new.section for n in plan.added)
        if in_section <= SECTION_CAP and len(order) + len(plan.added) <= PROFILE_CAP:
            continue
        twins = [
            f
            for f in order
            if f.section == new.section and _overlap(f.text, new.text) >= NEAR_DUPLICATE
        ]
        if not twins:
            continue
        twin = max(twins, key=lambda f: (_overlap(f.text, new.text), f.created_at, f.id))
        if twin.source_kind == "stated":
            plan.added.remove(new)
            continue
        order.remove(twin)
        plan.retired.append(RetiredFact(twin.id, "merged: restated"))
        plan.added[plan.added.index(new)] = replace(new, supersedes=(*new.supersedes, twin.id))


def _near_cap(facts: Sequence[ExistingFact], section: str) -> bool:
    """Whether the profile, or ``section`` of it, is near its cap."""
    in_section = sum(f.section == section for f in facts)
    return len(facts) >= PROFILE_CAP - NEAR_CAP_MARGIN or in_section >= SECTION_CAP - 1


def _overlapping(facts: Sequence[ExistingFact], changed: Collection[int]) -> list[ExistingFact]:
    """The facts of pairs a consolidation could merge, each pair holding a ``changed`` fact.

    Two facts of a section overlap when they share :data:`NEAR_DUPLICATE` of their words, or
    :data:`NEAR_CAP_OVERLAP` when the profile or the section is near its cap (a merge there
    also makes room).
    """
    found: dict[int, ExistingFact] = {}
    for new in (f for f in facts if f.id in changed):
        threshold = NEAR_CAP_OVERLAP if _near_cap(facts, new.section) else NEAR_DUPLICATE
        for other in facts:
            if (
                other.id != new.id
                and other.section == new.section
                and _overlap(new.text, other.text) >= threshold
            ):
                found.setdefault(new.id, new)
                found.setdefault(other.id, other)
    return list(found.values())


def needs_consolidation(facts: Sequence[ExistingFact], changed: Collection[int]) -> bool:
    """Whether a nightly consolidation can change a profile, decided without a model call.

    ``changed`` are the ids of the facts the profile gained that day. A consolidation merges
    and retires, it adds nothing, so it is worth a pro call only when a fact gained that day
    overlaps another of its section (see :func:`_overlapping`): pairs of older facts were
    already there for an earlier consolidation, and a profile that gained nothing is left
    alone.
    """
    return bool(changed) and bool(_overlapping(facts, changed))


def consolidation_facts(
    facts: Sequence[ExistingFact],
    changed: Collection[int],
    *,
    budget: int = CONSOLIDATION_FACT_TOKENS,
) -> list[ExistingFact]:
    """The facts a consolidation reads, within ``budget`` tokens: the overlapping ones (what
    it can merge or retire), then the day's other new facts, then the rest newest first."""
    overlapping = _overlapping(facts, changed)
    ids = {f.id for f in overlapping}
    rest = sorted(
        (f for f in facts if f.id not in ids),
        key=lambda f: (f.id not in changed, -f.created_at, -f.id),
    )
    ranked = [*overlapping, *rest]
    return ranked[: fitting([_fact_line(f) for f in ranked], budget)] if ranked else []


def still_apply(facts: Sequence[ExistingFact], operations: Sequence[FactOperation]) -> bool:
    """Whether operations computed on an older version of a profile can be planned on
    ``facts`` as they are, instead of asking the model again.

    They can when every fact they name is still active and nothing they add or merge into
    touches a fact of its section that they do not name (:data:`NEAR_CAP_OVERLAP` of the
    words): what changed meanwhile is then unrelated to them, and the planner's checks
    (duplicates, caps) hold against the current facts.
    """
    active = {f.id: f for f in facts}
    named: set[int] = set()
    for op in operations:
        if isinstance(op, MergeFacts):
            named.update(op.fact_ids)
        elif isinstance(op, InvalidateFact | KeepFact):
            named.add(op.fact_id)
    if not named <= active.keys():
        return False
    return not any(
        isinstance(op, AddFact | MergeFacts)
        and f.section == op.section
        and _overlap(f.text, op.text) >= NEAR_CAP_OVERLAP
        for op in operations
        for f in facts
        if f.id not in named
    )


@dataclass(frozen=True, slots=True)
class MemberChoice:
    """Who a note call covers: participants by how their profile update is done.

    ``combined`` get their operations from the note call itself; ``silent`` said nothing
    about themselves, so nothing can be learnt and no model is asked; ``separate`` keep a
    profile-update call of their own (more disclosing participants than the call holds).
    """

    combined: tuple[int, ...]
    silent: tuple[int, ...]
    separate: tuple[int, ...]


def choose_note_members(
    participants: Sequence[tuple[int, str]],
    *,
    members_cap: int = NOTE_MEMBERS_CAP,
) -> MemberChoice:
    """Split ``participants`` (user id and their own lines, most active first).

    The first ``members_cap`` who disclosed something about themselves are covered by the
    note call, however many facts they hold (the facts sent are bounded by
    :func:`note_facts`); the other disclosing ones keep a separate call.
    """
    combined: list[int] = []
    silent: list[int] = []
    separate: list[int] = []
    for user_id, own_text in participants:
        if not discloses_self(own_text):
            silent.append(user_id)
        elif len(combined) < members_cap:
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


def _fact_line(fact: ExistingFact) -> str:
    """A fact as the prompts list it (``id section: text``), for its token estimate."""
    return f"{fact.id} {fact.section}: {fact.text}"


def note_facts(
    facts: Sequence[ExistingFact], own_text: str, *, budget: int = NOTE_FACT_TOKENS
) -> list[ExistingFact]:
    """The facts of a member sent with a note: the most relevant to their lines first, as
    many as fit in ``budget`` tokens.

    Relevance is judged on the lines of ``own_text`` that disclose something about the
    member (all of it when none does; see :func:`rank_facts`): small talk's words would
    otherwise pull in facts nothing touches. The planner still checks the operations
    against every active fact, so a restatement of a fact that was not sent merges with it
    rather than folding another one out.
    """
    said = "\n".join(line for line in own_text.splitlines() if discloses_self(line))
    chosen: list[ExistingFact] = []
    spent = 0
    for fact in rank_facts(facts, said or own_text):
        cost = estimate_tokens(_fact_line(fact))
        if spent + cost <= budget:
            chosen.append(fact)
            spent += cost
    return chosen
