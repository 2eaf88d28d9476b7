"""One model call per conversation: the note call's profile operations, and its fallbacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from vivy.llm.offline import OfflineLLM
from vivy.llm.port import Generation, GenerationRequest, Operation, T
from vivy.llm.schemas import ConversationDraft, NoteDraft, NoteInput
from vivy.memory.facts import NewFact
from vivy.state.profile import PROFILE_CAP, ProfilePlan
from vivy.storage import profiles as profile_store
from vivy.storage.sqlite.db import Connection, Database

from .harness import GUILD, message
from .pipeline import Pipeline, running_pipeline

pytestmark = pytest.mark.anyio

CONVERSATION = [
    (11, "Anyone up for a game night this week? I love co-op games"),
    (12, "Yes! I live in Austin so evenings work best for me"),
    (11, "I work at Dell as a QA engineer, so Friday is easiest"),
    (12, "Let's do Friday at 8 then, I can host the call"),
    (13, "lol ok"),
]


class RecordingLLM(OfflineLLM):
    """The offline provider, recording each generation's operation and payload.

    ``bare`` answers note calls with the note alone (as a model ignoring the profiles part
    would); ``drop`` leaves those members out of the answer; ``during_note`` runs while the
    note call is out.
    """

    def __init__(self, *, bare: bool = False, drop: frozenset[int] = frozenset()) -> None:
        super().__init__()
        self.bare = bare
        self.drop = drop
        self.calls: list[tuple[Operation, Any]] = []
        self.during_note: Any = None

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """The offline answer, recorded and trimmed as configured."""
        self.calls.append((request.operation, request.payload))
        if request.operation is Operation.NOTE and self.during_note is not None:
            await self.during_note()
        answer = await super().generate(request)
        value: Any = answer.value
        if isinstance(value, ConversationDraft):
            if self.bare:
                value = NoteDraft.model_validate(value.model_dump(exclude={"profiles"}))
            else:
                kept = [p for p in value.profiles if p.user_id not in self.drop]
                value = value.model_copy(update={"profiles": kept})
        return Generation(value, answer.usage, answer.model, answer.quality)

    def operations(self) -> list[Operation]:
        """The operations called, in order."""
        return [operation for operation, _ in self.calls]


async def converse(p: Pipeline) -> None:
    """Say :data:`CONVERSATION` and wait until its note and profile updates are done."""
    for i, (author, text) in enumerate(CONVERSATION, start=1):
        await p.router.ingest(message(i, author=author, text=text))
        await anyio.sleep(60)
    await anyio.sleep(3600)


def facts(conn: Connection) -> list[tuple[int, str, str]]:
    """Every active fact: (user, section, text), sorted."""
    rows = conn.execute(
        "SELECT user_id, section, text FROM profile_facts WHERE invalidated_at IS NULL"
    ).fetchall()
    return sorted((int(u), str(s), str(t)) for u, s, t in rows)


def pending_count(conn: Connection) -> int:
    """Profile updates not applied yet."""
    return int(
        conn.execute("SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'").fetchone()[0]
    )


def seed_facts(db: Database, user_id: int, texts: list[str]) -> None:
    """Give ``user_id`` these facts (spread over the sections) before the conversation."""
    sections = ("bio", "interests", "skills", "opinions", "relationships", "other")
    plan = ProfilePlan(
        added=[
            NewFact(sections[i % len(sections)], text, "stated", None, "stated")
            for i, text in enumerate(texts)
        ]
    )
    db.write_sync(lambda c: profile_store.apply_plan(c, GUILD, user_id, 0, plan, 0.0))


async def test_one_generation_call_per_conversation_learns_the_same_facts(tmp_path: Path) -> None:
    """The note call alone yields the facts that separate profile calls yield."""
    combined = RecordingLLM()
    async with running_pipeline(tmp_path / "a.db", llm=combined) as p:
        await converse(p)
        learnt = await p.db.read(facts)
        assert await p.db.read(pending_count) == 0
        assert p.observer.updates == {"applied": 2, "skipped": 1}
    separate = RecordingLLM(bare=True)
    async with running_pipeline(tmp_path / "b.db", llm=separate) as p:
        await converse(p)
        assert await p.db.read(facts) == learnt
    assert combined.operations() == [Operation.NOTE]
    assert separate.operations() == [
        Operation.NOTE,
        Operation.PROFILE_UPDATE,
        Operation.PROFILE_UPDATE,
    ]
    assert {u for u, _, _ in learnt} == {11, 12}
    assert (12, "bio", "Lives in Austin") in learnt
    (_, payload) = combined.calls[0]
    assert isinstance(payload, NoteInput)
    # Member 13 said nothing about themselves: not sent, and no call made for them.
    assert [m.user_id for m in payload.members] == [11, 12]


async def test_a_member_left_out_of_the_answer_gets_a_separate_call(tmp_path: Path) -> None:
    """A covered member missing from the answer falls back to a call for them alone."""
    llm = RecordingLLM(drop=frozenset({11}))
    async with running_pipeline(tmp_path / "v.db", llm=llm) as p:
        await converse(p)
        learnt = await p.db.read(facts)
    assert llm.operations() == [Operation.NOTE, Operation.PROFILE_UPDATE]
    (_, payload) = llm.calls[1]
    assert payload.user_id == 11
    assert any(u == 11 and "Dell" in t for u, _, t in learnt)
    assert any(u == 12 and "Austin" in t for u, _, t in learnt)


def seed_full_profile(db: Database, user_id: int, first: tuple[str, str] | None = None) -> None:
    """Give ``user_id`` a profile at its cap, learnt from earlier conversations: every section
    full or one short, ``first`` (section, text) among them."""
    sizes = {"bio": 8, "interests": 8, "skills": 8, "opinions": 7, "relationships": 7, "other": 7}
    added = [NewFact(*first, "note", None, "earlier")] if first else []
    for section, size in sizes.items():
        taken = sum(n.section == section for n in added)
        added += [
            NewFact(section, f"Owns {section} keepsake number {n}", "note", None, "earlier")
            for n in range(size - taken)
        ]
    assert len(added) == PROFILE_CAP
    db.write_sync(
        lambda c: profile_store.apply_plan(c, GUILD, user_id, 0, ProfilePlan(added=added), 0.0)
    )


def active(learnt: list[tuple[int, str, str]], user_id: int) -> list[str]:
    """The active fact texts of one member."""
    return [text for user, _, text in learnt if user == user_id]


async def test_a_member_at_the_cap_gains_a_new_fact_in_the_note_call(tmp_path: Path) -> None:
    """A full profile stays in the note call (its most relevant facts sent, within the
    budget): the member gains what they said by replacing their oldest learnt fact, with
    one call for the whole conversation."""
    llm = RecordingLLM()
    path = tmp_path / "v.db"
    db = Database.open(path)
    try:
        seed_full_profile(db, 12)
    finally:
        db.close()
    async with running_pipeline(path, llm=llm) as p:
        await converse(p)
        learnt = await p.db.read(facts)
    assert llm.operations() == [Operation.NOTE]
    (_, payload) = llm.calls[0]
    member = next(m for m in payload.members if m.user_id == 12)
    assert (member.total, member.full) == (PROFILE_CAP, True)
    assert 0 < len(member.facts) < PROFILE_CAP
    assert "Lives in Austin" in active(learnt, 12)
    assert len(active(learnt, 12)) == PROFILE_CAP
    assert "Owns bio keepsake number 0" not in active(learnt, 12)


async def test_a_member_at_the_cap_gains_a_new_fact_by_merge(tmp_path: Path) -> None:
    """At the cap, a new fact on the subject of an existing one merges into it instead of
    pushing a fact out, and the conversation still costs one call."""
    llm = RecordingLLM()
    path = tmp_path / "v.db"
    db = Database.open(path)
    try:
        seed_full_profile(db, 11, ("interests", "Loves strategy games"))
    finally:
        db.close()
    async with running_pipeline(path, llm=llm) as p:
        await converse(p)
        learnt = await p.db.read(facts)
    assert llm.operations() == [Operation.NOTE]
    mine = active(learnt, 11)
    assert "Loves strategy games and co-op games" in mine
    assert "Loves strategy games" not in mine
    # Only the fact on a new subject (Dell) pushed one out: the bio section's oldest.
    assert "Works at Dell as a QA engineer" in mine
    keepsakes = [t for t in mine if "keepsake" in t]
    assert len(keepsakes) == PROFILE_CAP - 2
    assert "Owns bio keepsake number 0" not in keepsakes


async def test_operations_computed_on_an_older_profile_are_asked_again(tmp_path: Path) -> None:
    """A profile that changed while the note call was out gets a fresh call, not stale ops."""
    llm = RecordingLLM()
    async with running_pipeline(tmp_path / "v.db", llm=llm) as p:

        async def change_profile() -> None:
            llm.during_note = None
            await p.db.write(
                profile_store.apply_plan,
                GUILD,
                12,
                0,
                ProfilePlan(added=[NewFact("bio", "Lives in Boston", "stated", None, "stated")]),
                0.0,
            )

        llm.during_note = change_profile
        await converse(p)
        learnt = await p.db.read(facts)
    assert llm.operations() == [Operation.NOTE, Operation.PROFILE_UPDATE]
    (_, update_payload) = llm.calls[1]
    assert update_payload.user_id == 12
    assert [f.text for f in update_payload.facts] == ["Lives in Boston"]
    # The fresh call saw Boston and retired it for Austin (seed 000's INVALIDATE).
    assert (12, "bio", "Lives in Austin") in learnt
    assert (12, "bio", "Lives in Boston") not in learnt


async def test_operations_on_a_profile_changed_elsewhere_still_apply(tmp_path: Path) -> None:
    """A profile that gained an unrelated fact while the note call was out keeps the note
    call's operations: no second call."""
    llm = RecordingLLM()
    async with running_pipeline(tmp_path / "v.db", llm=llm) as p:

        async def change_profile() -> None:
            llm.during_note = None
            await p.db.write(
                profile_store.apply_plan,
                GUILD,
                12,
                0,
                ProfilePlan(
                    added=[NewFact("relationships", "Has a cat named Miso", "stated", None, "s")]
                ),
                0.0,
            )

        llm.during_note = change_profile
        await converse(p)
        learnt = await p.db.read(facts)
    assert llm.operations() == [Operation.NOTE]
    assert {"Lives in Austin", "Has a cat named Miso"} <= set(active(learnt, 12))
