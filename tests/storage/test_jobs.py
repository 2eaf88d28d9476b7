"""The nightly job's log through the port: passes and runs recorded once, and the notes the
catch-up looks for."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from tests.storage.test_profiles import GUILD, closed_buffer, new_note
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio

DAY = date(2026, 3, 2)


async def test_a_pass_is_recorded_once_per_guild_and_day(store: Store) -> None:
    """Recording a pass twice is harmless; other guilds, days and passes stay undone."""
    assert not await store.jobs.pass_done(GUILD, DAY, "clusters")
    await store.jobs.record_pass(GUILD, DAY, "clusters", 10.0)
    await store.jobs.record_pass(GUILD, DAY, "clusters", 20.0)
    assert await store.jobs.pass_done(GUILD, DAY, "clusters")
    assert not await store.jobs.pass_done(GUILD, DAY, "consolidation")
    assert not await store.jobs.pass_done(GUILD + 1, DAY, "clusters")
    assert not await store.jobs.pass_done(GUILD, date(2026, 3, 3), "clusters")


async def test_completed_days_list_each_run_once(store: Store) -> None:
    """A day recorded twice is listed once."""
    assert await store.jobs.completed_days() == []
    await store.jobs.record_run(DAY, 10.0)
    await store.jobs.record_run(DAY, 20.0)
    await store.jobs.record_run(date(2026, 3, 1), 5.0)
    assert sorted(await store.jobs.completed_days()) == [date(2026, 3, 1), DAY]


async def test_the_catch_up_finds_the_first_note_and_the_guilds_of_a_span(store: Store) -> None:
    """The first conversation note's start, and the guilds with notes starting in a span."""
    assert await store.jobs.first_note_time() is None
    await store.notes.commit_conversation_note(
        await closed_buffer(store), replace(new_note(7), started_at=150.0)
    )
    await store.notes.commit_conversation_note(
        await closed_buffer(store), replace(new_note(7), guild_id=GUILD + 1)
    )
    assert await store.jobs.first_note_time() == 150.0
    assert await store.jobs.guilds_with_notes(0.0, 1000.0) == [GUILD, GUILD + 1]
    assert await store.jobs.guilds_with_notes(0.0, 200.0) == [GUILD]
    assert await store.jobs.guilds_with_notes(150.5, 300.0) == []
