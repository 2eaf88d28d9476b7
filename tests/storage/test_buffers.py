"""Buffer storage through the port: open buffers, message rows and the outbox."""

from __future__ import annotations

import pytest

from tests.storage import Probe
from vivy.errors import StorageError
from vivy.memory.buffers import BufferedMessage, BufferRow, CloseReason
from vivy.state.buffer import (
    AppendMessages,
    BufferSnapshot,
    CloseBuffer,
    DeleteMessage,
    EditMessage,
    OpenBuffer,
)
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio

WALL0 = 1772409600.0
GUILD = 100


def msg(message_id: int, text: str = "hi", **extra: object) -> BufferedMessage:
    """A buffered message created at WALL0 + its id."""
    return BufferedMessage(
        message_id=message_id,
        author_id=7,
        author_name="ada",
        text=text,
        created_at=WALL0 + message_id,
        **extra,  # type: ignore[arg-type]
    )


async def open_with(store: Store, channel_id: int, *messages: BufferedMessage) -> int:
    """Open a buffer on ``channel_id`` at WALL0 holding ``messages``; return its id."""
    buffer_id = await store.buffers.open_buffer(GUILD, channel_id, "general", WALL0, 1500.0)
    if messages:
        await store.buffers.append_messages(buffer_id, list(messages), WALL0 + 60)
    return buffer_id


async def buffer_counts(store: Store) -> dict[str, int]:
    """Number of buffers by status (``open`` and ``closed``)."""
    return {
        "open": len(await store.buffers.open_buffer_rows()),
        "closed": len(await store.buffers.closed_buffer_ids()),
    }


async def test_open_buffer_creates_an_open_row(store: Store) -> None:
    """A new buffer is open, starts and last-moves at its start time, and has no messages."""
    buffer_id = await open_with(store, 1)
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None and stored.messages == ()
    assert stored.row == BufferRow(
        id=buffer_id,
        guild_id=GUILD,
        channel_id=1,
        channel_name="general",
        status="open",
        started_at=WALL0,
        last_message_at=WALL0,
        inactivity_s=1500.0,
        closed_at=None,
        close_reason=None,
        attempts=0,
        next_attempt_at=None,
    )
    assert await buffer_counts(store) == {"open": 1, "closed": 0}


async def test_append_stores_rows_in_message_order(store: Store) -> None:
    """Appended messages come back in id order with every field, and last_message_at moves."""
    buffer_id = await open_with(
        store, 1, msg(12, "second"), msg(11, "first", reply_to=5, mentions=(8, 9))
    )
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None
    assert stored.messages == (msg(11, "first", reply_to=5, mentions=(8, 9)), msg(12, "second"))
    assert stored.row.last_message_at == WALL0 + 60


async def test_one_open_buffer_per_channel(store: Store) -> None:
    """A second open buffer on the same channel is refused; other channels are independent."""
    await open_with(store, 1)
    with pytest.raises(StorageError, match="UNIQUE"):
        await open_with(store, 1)
    await open_with(store, 2)
    assert await buffer_counts(store) == {"open": 2, "closed": 0}


async def test_message_id_held_elsewhere_is_skipped_and_reported(store: Store) -> None:
    """An id another buffer already holds is not appended again; the rest of the batch is."""
    first = await open_with(store, 1, msg(1))
    other = await open_with(store, 2)
    taken = await store.buffers.append_messages(other, [msg(2), msg(1)], WALL0 + 99)
    assert taken == frozenset({1})
    kept = await store.buffers.load_buffer(other)
    original = await store.buffers.load_buffer(first)
    assert kept is not None and [m.message_id for m in kept.messages] == [2]
    assert original is not None and [m.message_id for m in original.messages] == [1]


async def test_edit_replaces_text_wherever_the_message_is(store: Store, probe: Probe) -> None:
    """Editing a stored message changes its text and edited_at; an unknown id reports False."""
    buffer_id = await open_with(store, 1, msg(1, "typo"), msg(2, "fine"))
    assert await store.buffers.edit_message(1, "fixed", WALL0 + 120) is True
    assert await store.buffers.edit_message(99, "ghost", WALL0 + 120) is False
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None
    assert [m.text for m in stored.messages] == ["fixed", "fine"]
    edited = await probe.rows("SELECT message_id, edited_at FROM buffer_messages")
    assert sorted(edited) == [(1, WALL0 + 120), (2, None)]


async def test_delete_removes_the_row(store: Store) -> None:
    """Deleting a stored message removes its row; an unknown id reports False."""
    buffer_id = await open_with(store, 1, msg(1), msg(2))
    assert await store.buffers.delete_message(1) is True
    assert await store.buffers.delete_message(1) is False
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None and [m.message_id for m in stored.messages] == [2]


async def test_close_buffer_makes_an_outbox_row_and_advances_watermark(store: Store) -> None:
    """Closing records reason and time, queues the buffer for its note and sets the watermark."""
    buffer_id = await open_with(store, 5, msg(30), msg(31))
    assert await store.buffers.watermark(5) == 0
    await store.buffers.close_buffer(buffer_id, WALL0 + 1500, CloseReason.INACTIVITY)
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None
    row = stored.row
    assert (row.status, row.closed_at, row.close_reason) == ("closed", WALL0 + 1500, "inactivity")
    assert row.next_attempt_at == WALL0 + 1500
    assert len(stored.messages) == 2
    assert await store.buffers.watermark(5) == 31
    assert await store.buffers.closed_buffer_ids() == [(buffer_id, WALL0 + 1500)]
    assert await buffer_counts(store) == {"open": 0, "closed": 1}
    assert await store.buffers.open_buffer_rows(5) == []


async def test_closing_twice_changes_nothing(store: Store) -> None:
    """A second close of the same buffer keeps its first reason and time."""
    buffer_id = await open_with(store, 5, msg(30))
    await store.buffers.close_buffer(buffer_id, WALL0 + 10, CloseReason.CAP)
    await store.buffers.close_buffer(buffer_id, WALL0 + 20, CloseReason.MAX_AGE)
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None
    assert (stored.row.closed_at, stored.row.close_reason) == (WALL0 + 10, "cap")


async def test_watermark_never_moves_back(store: Store) -> None:
    """Closing a buffer with older messages keeps the channel's higher watermark."""
    newer = await open_with(store, 5, msg(50))
    await store.buffers.close_buffer(newer, WALL0 + 10, CloseReason.CAP)
    older = await open_with(store, 5, msg(40))
    await store.buffers.close_buffer(older, WALL0 + 20, CloseReason.INACTIVITY)
    assert await store.buffers.watermark(5) == 50
    assert await store.buffers.watermark(6) == 0


async def test_closed_buffer_ids_follow_note_failures(store: Store, probe: Probe) -> None:
    """Closed buffers are listed oldest first with their next attempt time, after failures too."""
    first = await open_with(store, 1, msg(1))
    second = await open_with(store, 2, msg(2))
    await open_with(store, 3, msg(3))
    await store.buffers.close_buffer(first, WALL0 + 100, CloseReason.INACTIVITY)
    await store.buffers.close_buffer(second, WALL0 + 200, CloseReason.MAX_AGE)
    await store.buffers.record_note_failure(first, "llm down " * 100, WALL0 + 900)
    assert await store.buffers.closed_buffer_ids() == [(first, WALL0 + 900), (second, WALL0 + 200)]
    stored = await store.buffers.load_buffer(first)
    assert stored is not None and stored.row.attempts == 1
    error = str(await probe.scalar("SELECT last_error FROM channel_buffers WHERE id = ?", first))
    assert error.startswith("llm down") and len(error) == 500
    assert await buffer_counts(store) == {"open": 1, "closed": 2}


async def test_open_buffer_rows_by_channel_and_all(store: Store) -> None:
    """Open buffers are listed per channel or all together, oldest first, closed ones left out."""
    a = await open_with(store, 1)
    b = await open_with(store, 2)
    c = await open_with(store, 3)
    await store.buffers.close_buffer(b, WALL0, CloseReason.CAP)
    assert [r.id for r in await store.buffers.open_buffer_rows()] == [a, c]
    assert [r.id for r in await store.buffers.open_buffer_rows(3)] == [c]
    assert await store.buffers.open_buffer_rows(2) == []


async def test_load_buffer_of_unknown_id_is_none(store: Store) -> None:
    """Loading a buffer that does not exist returns None."""
    assert await store.buffers.load_buffer(12345) is None


async def test_row_snapshot_is_the_machines_view(store: Store) -> None:
    """A stored row turns into the snapshot the state machine restores from."""
    buffer_id = await open_with(store, 1, msg(1), msg(2))
    stored = await store.buffers.load_buffer(buffer_id)
    assert stored is not None
    ids = frozenset(m.message_id for m in stored.messages)
    assert BufferSnapshot.of(stored.row, ids) == BufferSnapshot(
        started_at=WALL0,
        last_message_at=WALL0 + 60,
        message_ids=frozenset({1, 2}),
        inactivity_s=1500.0,
    )


async def test_deleting_a_buffer_cascades_to_its_messages(store: Store, probe: Probe) -> None:
    """Foreign keys are enforced: removing a buffer row removes its message rows."""
    buffer_id = await open_with(store, 1, msg(1), msg(2))
    keep = await open_with(store, 2, msg(3))
    await probe.execute("DELETE FROM channel_buffers WHERE id = ?", buffer_id)
    assert await probe.count("SELECT COUNT(*) FROM buffer_messages") == 1
    stored = await store.buffers.load_buffer(keep)
    assert stored is not None and [m.message_id for m in stored.messages] == [3]


async def test_message_for_missing_buffer_is_refused(store: Store, probe: Probe) -> None:
    """A message row must belong to an existing buffer."""
    with pytest.raises(StorageError, match="FOREIGN KEY"):
        await store.buffers.append_messages(999, [msg(1)], WALL0)
    assert await probe.count("SELECT COUNT(*) FROM buffer_messages") == 0


async def test_apply_effects_opens_appends_and_closes_in_order(store: Store) -> None:
    """A channel's effects run in order: the buffer opened first takes the appends and closes."""
    effects = [
        OpenBuffer(WALL0, 1500.0, "general"),
        AppendMessages((msg(1), msg(2)), WALL0 + 5),
        EditMessage(1, "edited", WALL0 + 6),
        DeleteMessage(99),
        CloseBuffer(CloseReason.CAP, WALL0 + 8),
    ]
    applied = await store.buffers.apply_effects(GUILD, 3, None, effects)
    assert applied.buffer_id is None and applied.opened == 1
    (closed_id, reason) = applied.closed[0]
    assert reason is CloseReason.CAP
    assert applied.found == {2: True, 3: False} and applied.taken == frozenset()
    stored = await store.buffers.load_buffer(closed_id)
    assert stored is not None and stored.row.status == "closed"
    assert [m.text for m in stored.messages] == ["edited", "hi"]


async def test_apply_effects_closes_the_channels_open_buffer_when_none_is_known(
    store: Store,
) -> None:
    """A close with no buffer id closes the channel's one open buffer; none open is an error."""
    buffer_id = await open_with(store, 4, msg(1))
    applied = await store.buffers.apply_effects(
        GUILD, 4, None, [CloseBuffer(CloseReason.MAX_AGE, WALL0 + 9)]
    )
    assert applied.closed == [(buffer_id, CloseReason.MAX_AGE)]
    with pytest.raises(LookupError, match="no open buffer"):
        await store.buffers.apply_effects(
            GUILD, 4, None, [CloseBuffer(CloseReason.MAX_AGE, WALL0 + 9)]
        )


async def test_open_channels_and_restore(store: Store) -> None:
    """Channels with an open buffer are listed; restoring one gives its ids and watermark."""
    first = await open_with(store, 1, msg(1), msg(2))
    closed = await open_with(store, 2, msg(3))
    await store.buffers.close_buffer(closed, WALL0 + 10, CloseReason.CAP)
    assert await store.buffers.open_channels() == [(GUILD, 1)]
    found, mark = await store.buffers.restore_channel(1)
    assert found is not None and found[0].id == first and found[1] == frozenset({1, 2})
    assert mark == 0
    assert await store.buffers.restore_channel(2) == (None, 3)
