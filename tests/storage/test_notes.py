"""Note storage through the port: committing a closed buffer once, discarding, reading notes
back, and a day's topic clusters written at most once."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from tests.storage import Probe
from tests.storage.test_profiles import GUILD, closed_buffer, new_note
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.notes import Participant
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio


async def test_a_closed_buffer_becomes_one_note_even_when_committed_twice(
    store: Store, probe: Probe
) -> None:
    """The note takes the buffer's lines and message range; the buffer goes; again: None."""
    buffer_id = await store.buffers.open_buffer(GUILD, 1, "general", 100.0, 1500.0)
    lines = [BufferedMessage(m, 7, "user7", f"line {m}", 100.0 + m) for m in (11, 12, 13)]
    await store.buffers.append_messages(buffer_id, lines, 120.0)
    await store.buffers.close_buffer(buffer_id, 200.0, CloseReason.INACTIVITY)
    note_id = await store.notes.commit_conversation_note(buffer_id, new_note(7))
    assert note_id is not None
    assert await store.notes.commit_conversation_note(buffer_id, new_note(7)) is None
    assert await store.buffers.load_buffer(buffer_id) is None
    assert await probe.rows(
        "SELECT first_message_id, last_message_id, message_count FROM interaction_notes"
    ) == [(11, 13, 3)]
    assert await probe.count("SELECT COUNT(*) FROM note_lines WHERE note_id = ?", note_id) == 3
    assert await probe.count("SELECT COUNT(*) FROM vec_notes") == 1


async def test_an_open_buffer_is_not_noted(store: Store) -> None:
    """Only a closed buffer can become a note or be discarded."""
    buffer_id = await store.buffers.open_buffer(GUILD, 1, "general", 100.0, 1500.0)
    assert await store.notes.commit_conversation_note(buffer_id, new_note(7)) is None
    assert not await store.notes.discard_buffer(buffer_id)
    assert await store.buffers.load_buffer(buffer_id) is not None


async def test_discarding_a_closed_buffer_deletes_it_once(store: Store) -> None:
    """A buffer too small for a note is deleted; a second discard finds nothing."""
    buffer_id = await closed_buffer(store)
    assert await store.notes.discard_buffer(buffer_id)
    assert not await store.notes.discard_buffer(buffer_id)
    assert await store.buffers.closed_buffer_ids() == []


async def test_notes_read_back_in_the_order_asked_with_participants_by_activity(
    store: Store,
) -> None:
    """get_notes keeps the order given and skips missing ids; participants come busiest
    first, and every field reads back as written."""
    first = await store.notes.commit_conversation_note(await closed_buffer(store), new_note(7))
    busy = replace(
        new_note(),
        title="Plans",
        topics=("trip", "budget"),
        entities=("Lisbon",),
        participants=(Participant(7, "user7", 1), Participant(8, "user8", 5)),
        started_at=250.0,
        ended_at=280.0,
    )
    second = await store.notes.commit_conversation_note(await closed_buffer(store), busy)
    assert first is not None and second is not None
    found = await store.notes.get_notes([second, 999, first])
    assert [note.id for note in found] == [second, first]
    assert [p.user_id for p in found[0].participants] == [8, 7]
    assert (found[0].title, found[0].topics, found[0].entities) == (
        "Plans",
        ("trip", "budget"),
        ("Lisbon",),
    )
    assert (found[0].started_at, found[0].ended_at, found[1].started_at) == (250.0, 280.0, None)
    assert await store.notes.get_notes([]) == []


async def test_notes_between_filters_by_guild_type_and_start(store: Store) -> None:
    """Notes whose start (else creation) falls in [start, end), of one type, oldest first."""
    early = await store.notes.commit_conversation_note(
        await closed_buffer(store), replace(new_note(7), started_at=100.0)
    )
    late = await store.notes.commit_conversation_note(
        await closed_buffer(store), replace(new_note(7), started_at=200.0)
    )
    await store.notes.commit_conversation_note(
        await closed_buffer(store), replace(new_note(7), guild_id=GUILD + 1, started_at=150.0)
    )
    between = await store.notes.notes_between(GUILD, 100.0, 300.0, "conversation")
    assert [note.id for note in between] == [early, late]
    assert [
        n.id for n in await store.notes.notes_between(GUILD, 101.0, 200.0, "conversation")
    ] == []
    assert await store.notes.notes_between(GUILD, 0.0, 1e12, "topic_cluster") == []


async def test_a_days_clusters_are_written_once(store: Store) -> None:
    """The cluster pass writes its notes and records itself; run again, it writes nothing."""
    cluster = replace(new_note(7), note_type="topic_cluster", source_note_ids=(1, 2))
    ids = await store.notes.commit_cluster_notes(GUILD, "2026-03-02", [cluster, cluster], 500.0)
    assert len(ids) == 2
    assert await store.notes.commit_cluster_notes(GUILD, "2026-03-02", [cluster], 600.0) == []
    assert await store.jobs.pass_done(GUILD, date(2026, 3, 2), "clusters")
    clusters = await store.notes.get_notes(ids)
    assert [note.source_note_ids for note in clusters] == [(1, 2), (1, 2)]
    assert [note.note_type for note in clusters] == ["topic_cluster", "topic_cluster"]
