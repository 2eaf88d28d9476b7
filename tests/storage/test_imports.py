"""The import area through the port, on every engine: how far each channel was fed, what
the pipeline holds and has left to do, and how much it stored."""

from __future__ import annotations

import pytest

from tests.storage.test_profiles import new_note
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio

GUILD = 5


async def feed(store: Store, channel_id: int, *message_ids: int) -> int:
    """Open a buffer in the channel holding ``message_ids``; returns its id."""
    buffer_id = await store.buffers.open_buffer(GUILD, channel_id, "general", 100.0, 1500.0)
    await store.buffers.append_messages(
        buffer_id,
        [BufferedMessage(m, 7, "Sam", f"line {m}", 100.0 + m) for m in message_ids],
        150.0,
    )
    return buffer_id


async def test_fed_high_marks_take_closed_and_open_buffers(store: Store) -> None:
    """A channel's mark is its newest stored message, closed or still buffered; a channel
    never fed has none."""
    closed = await feed(store, 1, 10, 11)
    await store.buffers.close_buffer(closed, 200.0, CloseReason.INACTIVITY)
    await feed(store, 1, 12)
    await feed(store, 2, 20, 21)
    assert await store.imports.fed_high_marks([1, 2, 3]) == {1: 12, 2: 21}
    assert await store.imports.fed_high_marks([]) == {}


async def test_outbox_state_and_counts_follow_the_pipeline(store: Store) -> None:
    """Open and closed buffers and pending updates are the work left; a note, its updates
    and a stated fact are counted as they are stored."""
    assert (await store.imports.outbox_state()).empty
    assert await store.imports.note_counts() == {} and await store.imports.fact_count() == 0
    await feed(store, 2, 20)
    closed = await feed(store, 1, 10)
    await store.buffers.close_buffer(closed, 200.0, CloseReason.INACTIVITY)
    await store.buffers.record_note_failure(closed, "model down", 300.0)
    state = await store.imports.outbox_state()
    assert (state.open_buffers, state.closed_buffers, state.pending_updates) == (1, {closed: 1}, {})
    assert await store.notes.commit_conversation_note(closed, new_note(7, 8)) is not None
    state = await store.imports.outbox_state()
    assert state.closed_buffers == {} and sorted(state.pending_updates.values()) == [0, 0]
    assert await store.imports.note_counts() == {"conversation": 1}
    await store.members.remember_fact(GUILD, 7, "Sam", "bio", "Lives in Denver", "stated", 400.0)
    assert await store.imports.fact_count() == 1
