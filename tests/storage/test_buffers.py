"""Buffer storage against a real database: open buffers, message rows and the outbox."""

from __future__ import annotations

import pytest

from tests.storage import count_buffers
from vivy.errors import StorageError
from vivy.state.buffer import BufferedMessage, BufferSnapshot, CloseReason
from vivy.storage import buffers as store
from vivy.storage.db import Connection, Database

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


def open_with(db: Database, channel_id: int, *messages: BufferedMessage) -> int:
    """Open a buffer on ``channel_id`` at WALL0 holding ``messages``; return its id."""
    buffer_id = db.write_sync(store.open_buffer, GUILD, channel_id, "general", WALL0, 1500.0)
    if messages:
        db.write_sync(store.append_messages, buffer_id, list(messages), WALL0 + 60)
    return buffer_id


def message_count(conn: Connection) -> int:
    """Rows in ``buffer_messages``."""
    return int(conn.execute("SELECT COUNT(*) FROM buffer_messages").fetchone()[0])


def test_open_buffer_creates_an_open_row(db: Database) -> None:
    """A new buffer is open, starts and last-moves at its start time, and has no messages."""
    buffer_id = open_with(db, 1)
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None and stored.messages == ()
    assert stored.row == store.BufferRow(
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
    assert db.read_sync(count_buffers) == {"open": 1, "closed": 0}


def test_append_stores_rows_in_message_order(db: Database) -> None:
    """Appended messages come back in id order with every field, and last_message_at moves."""
    buffer_id = open_with(db, 1, msg(12, "second"), msg(11, "first", reply_to=5, mentions=(8, 9)))
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None
    assert stored.messages == (msg(11, "first", reply_to=5, mentions=(8, 9)), msg(12, "second"))
    assert stored.row.last_message_at == WALL0 + 60


def test_one_open_buffer_per_channel(db: Database) -> None:
    """A second open buffer on the same channel is refused; other channels are independent."""
    open_with(db, 1)
    with pytest.raises(StorageError, match="UNIQUE"):
        open_with(db, 1)
    open_with(db, 2)
    assert db.read_sync(count_buffers) == {"open": 2, "closed": 0}


def test_message_id_held_elsewhere_is_skipped_and_reported(db: Database) -> None:
    """An id another buffer already holds is not appended again; the rest of the batch is."""
    first = open_with(db, 1, msg(1))
    other = open_with(db, 2)
    taken = db.write_sync(store.append_messages, other, [msg(2), msg(1)], WALL0 + 99)
    assert taken == frozenset({1})
    kept = db.read_sync(store.load_buffer, other)
    original = db.read_sync(store.load_buffer, first)
    assert kept is not None and [m.message_id for m in kept.messages] == [2]
    assert original is not None and [m.message_id for m in original.messages] == [1]


def test_edit_replaces_text_wherever_the_message_is(db: Database) -> None:
    """Editing a stored message changes its text and edited_at; an unknown id reports False."""
    buffer_id = open_with(db, 1, msg(1, "typo"), msg(2, "fine"))
    assert db.write_sync(store.edit_stored_message, 1, "fixed", WALL0 + 120) is True
    assert db.write_sync(store.edit_stored_message, 99, "ghost", WALL0 + 120) is False
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None
    assert [m.text for m in stored.messages] == ["fixed", "fine"]
    edited = db.read_sync(
        lambda c: [tuple(r) for r in c.execute("SELECT message_id, edited_at FROM buffer_messages")]
    )
    assert sorted(edited) == [(1, WALL0 + 120), (2, None)]


def test_delete_removes_the_row(db: Database) -> None:
    """Deleting a stored message removes its row; an unknown id reports False."""
    buffer_id = open_with(db, 1, msg(1), msg(2))
    assert db.write_sync(store.delete_stored_message, 1) is True
    assert db.write_sync(store.delete_stored_message, 1) is False
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None and [m.message_id for m in stored.messages] == [2]


def test_close_buffer_makes_an_outbox_row_and_advances_watermark(db: Database) -> None:
    """Closing records reason and time, queues the buffer for its note and sets the watermark."""
    buffer_id = open_with(db, 5, msg(30), msg(31))
    assert db.read_sync(store.watermark, 5) == 0
    db.write_sync(store.close_buffer, buffer_id, WALL0 + 1500, CloseReason.INACTIVITY)
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None
    row = stored.row
    assert (row.status, row.closed_at, row.close_reason) == ("closed", WALL0 + 1500, "inactivity")
    assert row.next_attempt_at == WALL0 + 1500
    assert len(stored.messages) == 2
    assert db.read_sync(store.watermark, 5) == 31
    assert db.read_sync(store.closed_buffer_ids) == [(buffer_id, WALL0 + 1500)]
    assert db.read_sync(count_buffers) == {"open": 0, "closed": 1}
    assert db.read_sync(store.open_buffer_rows, 5) == []


def test_closing_twice_changes_nothing(db: Database) -> None:
    """A second close of the same buffer keeps its first reason and time."""
    buffer_id = open_with(db, 5, msg(30))
    db.write_sync(store.close_buffer, buffer_id, WALL0 + 10, CloseReason.CAP)
    db.write_sync(store.close_buffer, buffer_id, WALL0 + 20, CloseReason.MAX_AGE)
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None
    assert (stored.row.closed_at, stored.row.close_reason) == (WALL0 + 10, "cap")


def test_watermark_never_moves_back(db: Database) -> None:
    """Closing a buffer with older messages keeps the channel's higher watermark."""
    newer = open_with(db, 5, msg(50))
    db.write_sync(store.close_buffer, newer, WALL0 + 10, CloseReason.CAP)
    older = open_with(db, 5, msg(40))
    db.write_sync(store.close_buffer, older, WALL0 + 20, CloseReason.INACTIVITY)
    assert db.read_sync(store.watermark, 5) == 50
    assert db.read_sync(store.watermark, 6) == 0


def test_closed_buffer_ids_follow_note_failures(db: Database) -> None:
    """Closed buffers are listed oldest first with their next attempt time, after failures too."""
    first = open_with(db, 1, msg(1))
    second = open_with(db, 2, msg(2))
    open_with(db, 3, msg(3))
    db.write_sync(store.close_buffer, first, WALL0 + 100, CloseReason.INACTIVITY)
    db.write_sync(store.close_buffer, second, WALL0 + 200, CloseReason.MAX_AGE)
    db.write_sync(store.record_note_failure, first, "llm down " * 100, WALL0 + 900)
    assert db.read_sync(store.closed_buffer_ids) == [(first, WALL0 + 900), (second, WALL0 + 200)]
    stored = db.read_sync(store.load_buffer, first)
    assert stored is not None and stored.row.attempts == 1
    error = db.read_sync(
        lambda c: c.execute(
            "SELECT last_error FROM channel_buffers WHERE id = ?", (first,)
        ).fetchone()[0]
    )
    assert error.startswith("llm down") and len(error) == 500
    assert db.read_sync(count_buffers) == {"open": 1, "closed": 2}


def test_open_buffer_rows_by_channel_and_all(db: Database) -> None:
    """Open buffers are listed per channel or all together, oldest first, closed ones left out."""
    a = open_with(db, 1)
    b = open_with(db, 2)
    c = open_with(db, 3)
    db.write_sync(store.close_buffer, b, WALL0, CloseReason.CAP)
    assert [r.id for r in db.read_sync(store.open_buffer_rows)] == [a, c]
    assert [r.id for r in db.read_sync(store.open_buffer_rows, 3)] == [c]
    assert db.read_sync(store.open_buffer_rows, 2) == []


def test_load_buffer_of_unknown_id_is_none(db: Database) -> None:
    """Loading a buffer that does not exist returns None."""
    assert db.read_sync(store.load_buffer, 12345) is None


def test_row_snapshot_is_the_machines_view(db: Database) -> None:
    """A stored row turns into the snapshot the state machine restores from."""
    buffer_id = open_with(db, 1, msg(1), msg(2))
    stored = db.read_sync(store.load_buffer, buffer_id)
    assert stored is not None
    ids = frozenset(m.message_id for m in stored.messages)
    assert stored.row.snapshot(ids) == BufferSnapshot(
        started_at=WALL0,
        last_message_at=WALL0 + 60,
        message_ids=frozenset({1, 2}),
        inactivity_s=1500.0,
    )


def test_deleting_a_buffer_cascades_to_its_messages(db: Database) -> None:
    """Foreign keys are enforced: removing a buffer row removes its message rows."""
    buffer_id = open_with(db, 1, msg(1), msg(2))
    keep = open_with(db, 2, msg(3))
    db.write_sync(lambda c: c.execute("DELETE FROM channel_buffers WHERE id = ?", (buffer_id,)))
    assert db.read_sync(message_count) == 1
    stored = db.read_sync(store.load_buffer, keep)
    assert stored is not None and [m.message_id for m in stored.messages] == [3]


def test_message_for_missing_buffer_is_refused(db: Database) -> None:
    """A message row must belong to an existing buffer."""
    with pytest.raises(StorageError, match="FOREIGN KEY"):
        db.write_sync(store.append_messages, 999, [msg(1)], WALL0)
    assert db.read_sync(message_count) == 0
