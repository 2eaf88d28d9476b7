"""The profile-update outbox through the port: rows carrying a note call's operations, read
back validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage import Probe
from vivy.memory.buffers import CloseReason
from vivy.memory.facts import NewFact, RetiredFact
from vivy.memory.notes import NewNote, Participant, PlannedUpdate
from vivy.state.profile import ProfilePlan
from vivy.storage import profiles as profile_store
from vivy.storage.port import Store
from vivy.storage.sqlite.db import Database, _statements, connect
from vivy.storage.sqlite.schema import MIGRATIONS

pytestmark = pytest.mark.anyio

GUILD = 5


async def closed_buffer(store: Store) -> int:
    """A closed, empty buffer in channel 1, ready to become a note."""
    buffer_id = await store.buffers.open_buffer(GUILD, 1, "general", 100.0, 1500.0)
    await store.buffers.close_buffer(buffer_id, 200.0, CloseReason.INACTIVITY)
    return buffer_id


def new_note(*users: int) -> NewNote:
    """A conversation note with these participants."""
    return NewNote(
        guild_id=GUILD,
        channel_id=1,
        channel_name="general",
        note_type="conversation",
        title="Moving day",
        summary="They talked.",
        topics=(),
        decisions=(),
        open_questions=(),
        entities=(),
        participants=tuple(Participant(u, f"user{u}", 1) for u in users),
        note_date="2026-03-02",
        quality="offline",
        model="offline",
        embedding=[1.0] + [0.0] * 767,
        created_at=300.0,
    )


#: Operations as the note writer stores them (:func:`vivy.llm.schemas.encode_operations`).
PLANNED = '{"operations":[{"op":"invalidate","fact_id":4,"reason":"moved"}]}'


async def test_update_rows_carry_the_note_calls_operations(store: Store) -> None:
    """Planned operations and their basis version come back as stored; others carry none."""
    planned = {7: PlannedUpdate(PLANNED, 3)}
    note_id = await store.notes.commit_conversation_note(
        await closed_buffer(store), new_note(7, 8), planned=planned
    )
    pending = {u.user_id: u for u in await store.profiles.pending_updates()}
    assert pending[7].note_id == note_id
    assert (pending[7].operations, pending[7].basis_version) == (PLANNED, 3)
    assert (pending[8].operations, pending[8].basis_version) == (None, None)


async def test_applied_updates_keep_no_operations(store: Store, probe: Probe) -> None:
    """An applied update keeps no operations at all."""
    planned = {7: PlannedUpdate(PLANNED, 0)}
    await store.notes.commit_conversation_note(
        await closed_buffer(store), new_note(7), planned=planned
    )
    (update,) = await store.profiles.pending_updates()
    await store.profiles.mark_updates_applied([update.id], 400.0)
    stored = await probe.rows("SELECT status, operations FROM profile_updates")
    assert stored == [("applied", None)]


def test_the_migration_keeps_updates_pending_before_it(tmp_path: Path) -> None:
    """Migrating a version-1 database leaves its pending updates needing a call, as they did."""
    path = tmp_path / "old.db"
    conn = connect(path)
    for statement in _statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO interaction_notes (id, guild_id, channel_id, note_type, title, summary,"
        " note_date, quality, created_at) VALUES (1, 100, 1, 'conversation', 't', 's',"
        " '2026-03-02', 'offline', 0)"
    )
    conn.execute(
        "INSERT INTO profile_updates (guild_id, user_id, note_id, created_at, next_attempt_at)"
        " VALUES (100, 7, 1, 0, 0)"
    )
    conn.close()
    upgraded = Database.open(path)
    try:
        (update,) = upgraded.read_sync(profile_store.pending_updates)
    finally:
        upgraded.close()
    assert (update.user_id, update.operations, update.basis_version) == (7, None, None)


async def test_update_context_reads_version_facts_notes_and_lines(store: Store) -> None:
    """One read gives what a profile update call needs: version, facts, notes, their lines."""
    note_id = await store.notes.commit_conversation_note(await closed_buffer(store), new_note(7))
    assert note_id is not None
    ctx = await store.profiles.update_context(GUILD, 7, [note_id])
    assert (ctx.version, ctx.facts) == (0, [])
    assert [n.id for n in ctx.notes] == [note_id]
    assert ctx.lines == {note_id: []}


async def test_apply_updates_writes_the_plan_and_marks_the_updates_applied(store: Store) -> None:
    """A plan lands with its updates marked applied; a stale version changes nothing."""
    await store.notes.commit_conversation_note(await closed_buffer(store), new_note(7))
    (update,) = await store.profiles.pending_updates()
    plan = ProfilePlan(added=[NewFact("bio", "Lives in Oslo", "note", update.note_id, "x")])
    assert not await store.profiles.apply_updates(GUILD, 7, 5, plan, [update.id], 400.0)
    assert await store.profiles.pending_updates() == [update]
    assert await store.profiles.apply_updates(GUILD, 7, 0, plan, [update.id], 400.0)
    assert [f.text for f in await store.profiles.active_facts(GUILD, 7)] == ["Lives in Oslo"]
    assert await store.profiles.profile_version(GUILD, 7) == 1
    assert await store.profiles.pending_updates() == []


async def test_apply_updates_drops_the_plan_when_an_update_is_gone(store: Store) -> None:
    """Updates no longer pending (a forget-me meanwhile) make the whole plan a no-op."""
    await store.notes.commit_conversation_note(await closed_buffer(store), new_note(7))
    (update,) = await store.profiles.pending_updates()
    await store.profiles.mark_updates_applied([update.id], 300.0)
    plan = ProfilePlan(added=[NewFact("bio", "Lives in Oslo", "note", update.note_id, "x")])
    assert not await store.profiles.apply_updates(GUILD, 7, 0, plan, [update.id], 400.0)
    assert await store.profiles.active_facts(GUILD, 7) == []


async def test_a_plan_applies_only_at_its_version_and_merges_keep_history(store: Store) -> None:
    """apply_plan bumps the version each time; a merge retires the old fact, pointing at the
    one that replaced it; a plan for a stale version changes nothing."""
    first = ProfilePlan(added=[NewFact("bio", "Lives in Oslo", "stated", None, "x")])
    assert await store.profiles.apply_plan(GUILD, 7, 0, first, 100.0)
    (oslo,) = await store.profiles.active_facts(GUILD, 7)
    merged = ProfilePlan(
        added=[NewFact("bio", "Lives in Bergen", "stated", None, "y", supersedes=(oslo.id,))],
        retired=[RetiredFact(oslo.id, "merged")],
    )
    assert not await store.profiles.apply_plan(GUILD, 7, 0, merged, 200.0)
    assert await store.profiles.apply_plan(GUILD, 7, 1, merged, 200.0)
    assert [f.text for f in await store.profiles.active_facts(GUILD, 7)] == ["Lives in Bergen"]
    assert await store.profiles.profile_version(GUILD, 7) == 2
    profiles = await store.profiles.member_profiles(GUILD, [7, 8])
    assert profiles[8] == (0, []) and profiles[7][0] == 2
    assert await store.profiles.changed_between(GUILD, 150.0, 250.0) == [7]
    assert await store.profiles.changed_between(GUILD + 1, 0.0, 250.0) == []


async def test_updates_due_and_failed_attempts(store: Store) -> None:
    """A never-tried update is due once its time has passed; a failure counts an attempt,
    keeps the error and moves the next attempt."""
    await store.notes.commit_conversation_note(
        await closed_buffer(store), new_note(7, 8), updates_due_at=1000.0
    )
    assert await store.profiles.members_due_by(GUILD, [7, 8, 9], 1000.0) == set()
    assert await store.profiles.members_due_by(GUILD, [7, 8, 9], 1000.5) == {7, 8}
    assert await store.profiles.members_due_by(GUILD + 1, [7, 8], 2000.0) == set()
    assert await store.profiles.members_due_by(GUILD, [], 2000.0) == set()
    (update,) = await store.profiles.pending_updates(7)
    await store.profiles.record_update_failure([update.id], "model down", 1500.0)
    (retried,) = await store.profiles.pending_updates(7)
    assert (retried.attempts, retried.next_attempt_at) == (1, 1500.0)
    assert await store.profiles.members_due_by(GUILD, [7, 8], 2000.0) == {8}
