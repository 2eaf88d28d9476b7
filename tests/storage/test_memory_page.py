"""The memory page's storage through the port, on both engines: what health counts and what
each correction removes and logs."""

from __future__ import annotations

import pytest

from tests.storage import Probe
from tests.storage.test_members import ALEX, GUILD, OTHER_GUILD, SAM, WALL0, line, note, remember
from vivy.memory.facts import NewFact
from vivy.memory.page import REMOVED_FACT_REASON
from vivy.state.profile import ProfilePlan
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio


async def _kept(store: Store, guild: int) -> int:
    _, health = await store.pages.health(guild)
    return health.evidence_lines


async def test_health_counts_the_evidence_of_its_guild_only(store: Store) -> None:
    """The lines kept are the guild's, whether it is the database's only guild or not."""
    await note(store, GUILD, 1, "A", "a", [(ALEX, "Alex")], line(1, ALEX, "Alex", "one"))
    await note(
        store,
        GUILD,
        2,
        "B",
        "b",
        [(SAM, "Sam")],
        line(2, SAM, "Sam", "two"),
        line(3, SAM, "S", "3"),
    )
    assert await _kept(store, GUILD) == 3
    assert await _kept(store, OTHER_GUILD) == 0
    await note(store, OTHER_GUILD, 3, "C", "c", [(ALEX, "Alex")], line(4, ALEX, "Alex", "four"))
    assert (await _kept(store, GUILD), await _kept(store, OTHER_GUILD)) == (3, 1)


async def test_removing_a_fact_invalidates_it_with_who_and_logs_it(store: Store) -> None:
    """The fact leaves the profile and stays in the history with the remover's label; another
    member's fact id is refused and logs nothing."""
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    await remember(store, GUILD, SAM, "Sam", "I live in Boston")
    (fact,) = await store.profiles.active_facts(GUILD, ALEX)
    assert await store.pages.remove_fact(GUILD, SAM, fact.id, "alice", WALL0 + 5) is None
    assert await store.pages.remove_fact(GUILD, ALEX, fact.id, "alice", WALL0 + 5) == fact.text
    assert await store.profiles.active_facts(GUILD, ALEX) == []
    (history,) = await store.pages.fact_history(GUILD, ALEX)
    assert history.invalidated_at == WALL0 + 5
    assert history.invalidation_reason == REMOVED_FACT_REASON.format(who="alice")
    log = await store.pages.corrections(GUILD, 10)
    assert [(c.who, c.kind, c.done_at) for c in log] == [("alice", "remove_fact", WALL0 + 5)]
    assert await store.pages.corrections(OTHER_GUILD, 10) == []


async def test_removing_a_note_takes_its_evidence_and_what_was_learnt(
    store: Store, probe: Probe
) -> None:
    """The note goes with its lines and the facts learnt from it, in its guild only."""
    doomed = await note(
        store, GUILD, 1, "Cello", "Sam plays cello.", [(SAM, "Sam")], line(1, SAM, "Sam", "cello")
    )
    kept = await note(
        store, GUILD, 2, "Chess", "Alex plays.", [(ALEX, "A")], line(2, ALEX, "A", "x")
    )
    learnt = NewFact("interests", "Plays cello", "note", doomed, "Cello, Mar 2")
    version = await store.profiles.profile_version(GUILD, SAM)
    assert await store.profiles.apply_plan(GUILD, SAM, version, ProfilePlan(added=[learnt]), WALL0)
    assert await store.pages.remove_note(OTHER_GUILD, doomed, "bob", WALL0) is None
    assert await store.pages.remove_note(GUILD, doomed, "bob", WALL0 + 9) == 1
    assert await store.pages.note(GUILD, doomed) is None
    assert await store.pages.note(GUILD, kept) is not None
    assert await probe.count("SELECT COUNT(*) FROM note_lines WHERE note_id = ?", doomed) == 0
    assert await store.pages.fact_history(GUILD, SAM) == []
    (entry,) = await store.pages.corrections(GUILD, 10)
    assert (entry.who, entry.kind) == ("bob", "remove_note")
    assert "1 facts learnt from it" in entry.target


async def test_guild_facts_are_the_active_facts_of_each_member_of_the_guild(store: Store) -> None:
    """One read gives every member's active facts, as each member's history holds them,
    without a removed fact or another guild's."""
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    await remember(store, GUILD, SAM, "Sam", "I live in Boston")
    await remember(store, OTHER_GUILD, SAM, "Sam", "I live in Denver")
    (gone,) = await store.profiles.active_facts(GUILD, SAM)
    assert await store.pages.remove_fact(GUILD, SAM, gone.id, "alice", WALL0 + 5) == gone.text
    held = await store.pages.guild_facts(GUILD)
    assert held == {ALEX: await store.pages.fact_history(GUILD, ALEX)}
    (kept,) = held[ALEX]
    assert "Austin" in kept.text and kept.invalidated_at is None
    (other,) = (await store.pages.guild_facts(OTHER_GUILD))[SAM]
    assert "Denver" in other.text
