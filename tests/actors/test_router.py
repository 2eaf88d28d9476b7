"""Channel actors under trio's MockClock: exact virtual times, no real sleeping."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.storage import count_buffers
from vivy.config import BufferSettings
from vivy.state.gate import CapturePolicy, IncomingDelete, IncomingEdit, IngestOutcome
from vivy.storage import buffers as store
from vivy.storage.sqlite.db import Connection, Database

from .harness import GUILD, RecordingHandOff, message, running_router

pytestmark = pytest.mark.anyio


def texts(conn: Connection) -> list[str]:
    """Texts of every buffered message in id order."""
    return [r[0] for r in conn.execute("SELECT text FROM buffer_messages ORDER BY message_id")]


async def test_flush_exactly_at_inactivity_window(tmp_path: Path) -> None:
    """A lone conversation is handed off exactly one inactivity window after its last message."""
    async with running_router(tmp_path / "v.db") as h:
        assert await h.router.ingest(message(1)) is IngestOutcome.STORED
        await anyio.sleep(5000)
        assert [t for _, t in h.hand_off.received] == [1500.0]
        assert h.observer.closed == {"inactivity": 1}


async def test_window_resets_on_each_message(tmp_path: Path) -> None:
    """Each message pushes the flush to a full window after it."""
    async with running_router(tmp_path / "v.db") as h:
        await h.router.ingest(message(1))
        await anyio.sleep(1000)
        await h.router.ingest(message(2))
        await anyio.sleep(1000)
        await h.router.ingest(message(3))
        await anyio.sleep(4000)
        assert [t for _, t in h.hand_off.received] == [2000.0 + 1500.0]


async def test_chatty_channel_flushes_at_exactly_two_hours(tmp_path: Path) -> None:
    """A channel that never goes quiet is closed by the max-age timer at exactly 2 h."""
    async with running_router(tmp_path / "v.db") as h:
        for i in range(1, 100):
            await h.router.ingest(message(i))
            await anyio.sleep(90)
            if h.hand_off.received:
                break
        assert h.hand_off.received[0][1] == 7200.0
        assert h.observer.closed["max_age"] == 1


async def test_max_age_timer_then_next_message_opens_a_new_buffer(tmp_path: Path) -> None:
    """The max-age timer closes a busy buffer; the next message starts a new one."""
    settings = BufferSettings(
        inactivity_min_s=5000.0, inactivity_max_s=5000.0, max_age_s=600.0, cap=100
    )
    async with running_router(tmp_path / "v.db", settings=settings) as h:
        await h.router.ingest(message(1))
        await anyio.sleep(599)
        await h.router.ingest(message(2))
        await anyio.sleep(10)
        assert [t for _, t in h.hand_off.received] == [600.0]
        await h.router.ingest(message(3))
        rows = await h.db.read(store.open_buffer_rows)
        assert len(rows) == 1 and rows[0].started_at == h.clock.wall_origin + 609.0


async def test_cap_closes_buffer(tmp_path: Path) -> None:
    """The hundredth message closes the buffer at once."""
    async with running_router(tmp_path / "v.db") as h:
        for i in range(1, 101):
            await h.router.ingest(message(i))
        assert [t for _, t in h.hand_off.received] == [0.0]
        buffer = await h.db.read(store.load_buffer, h.hand_off.received[0][0])
        assert buffer is not None and len(buffer.messages) == 100
        assert buffer.row.close_reason == "cap"


async def test_submitted_messages_keep_their_order_across_the_cap(tmp_path: Path) -> None:
    """150 messages submitted without waiting fill the first buffer with exactly the first 100.

    The order in which a channel's messages are submitted is the order its actor sees them,
    so the cap cuts the stream at the hundredth message; every ack resolves once durable.
    """
    async with running_router(tmp_path / "v.db") as h:
        acks = [await h.router.submit(message(i)) for i in range(1, 151)]
        assert not any(ack.done for ack in acks)  # queued, none stored yet
        assert [await ack.wait() for ack in acks] == [IngestOutcome.STORED] * 150
        assert len(h.hand_off.received) == 1
        first = await h.db.read(store.load_buffer, h.hand_off.received[0][0])
        assert first is not None
        assert [m.message_id for m in first.messages] == list(range(1, 101))
        rest = await h.db.read(
            lambda c: [r[0] for r in c.execute("SELECT message_id FROM buffer_messages")]
        )
        assert sorted(rest) == list(range(1, 151))
        assert h.observer.outcomes == {IngestOutcome.STORED: 150}


async def test_a_burst_answers_each_message_and_stores_each_id_once(tmp_path: Path) -> None:
    """Messages taken as one burst get their own outcomes; a repeated id is stored once."""
    async with running_router(tmp_path / "v.db") as h:
        long = message(4, text="z" * 4100)
        burst = [message(1), message(2), message(2), long, message(1), message(3)]
        acks = [await h.router.submit(m) for m in burst]
        assert [await ack.wait() for ack in acks] == [
            IngestOutcome.STORED,
            IngestOutcome.STORED,
            IngestOutcome.DUPLICATE,
            IngestOutcome.TRUNCATED,
            IngestOutcome.DUPLICATE,
            IngestOutcome.STORED,
        ]
        ids = await h.db.read(
            lambda c: [r[0] for r in c.execute("SELECT message_id FROM buffer_messages")]
        )
        assert sorted(ids) == [1, 2, 3, 4]
        assert h.observer.outcomes == {
            IngestOutcome.STORED: 3,
            IngestOutcome.TRUNCATED: 1,
            IngestOutcome.DUPLICATE: 2,
        }


async def test_a_redelivery_after_the_cap_in_the_same_burst_is_a_duplicate(
    tmp_path: Path,
) -> None:
    """A burst that fills a buffer and then repeats one of its ids opens no buffer for it."""
    async with running_router(tmp_path / "v.db") as h:
        burst = [message(i) for i in range(1, 101)] + [message(50), message(101)]
        acks = [await h.router.submit(m) for m in burst]
        outcomes = [await ack.wait() for ack in acks]
        assert outcomes == [IngestOutcome.STORED] * 100 + [
            IngestOutcome.DUPLICATE,
            IngestOutcome.STORED,
        ]
        counts = await h.db.read(count_buffers)
        assert counts == {"open": 1, "closed": 1}
        (open_row,) = await h.db.read(store.open_buffer_rows)
        stored = await h.db.read(store.load_buffer, open_row.id)
        assert stored is not None
        assert [m.message_id for m in stored.messages] == [101]


async def test_a_gated_submission_is_answered_at_once(tmp_path: Path) -> None:
    """A bot's or an empty message never reaches an actor: its ack is already resolved."""
    async with running_router(tmp_path / "v.db") as h:
        bot = await h.router.submit(message(1, bot=True))
        empty = await h.router.submit(message(2, text=" "))
        assert bot.done and empty.done
        assert await bot.wait() is IngestOutcome.EXCLUDED_BOT
        assert await empty.wait() is IngestOutcome.EMPTY
        assert h.router.statistics().active_actors == 0


async def test_restart_restores_remaining_deadline(tmp_path: Path) -> None:
    """A buffer 10 minutes from its deadline at shutdown fires 10 minutes after start."""
    path = tmp_path / "v.db"
    async with running_router(path) as h:
        await h.router.ingest(message(1))
        await anyio.sleep(900)  # 600 s of the 1500 s window remain
    assert h.hand_off.received == []
    start = anyio.current_time()
    async with running_router(path, wall0=h.clock.wall_origin + 900 - start) as h2:
        await anyio.sleep(3000)
        assert [t - start for _, t in h2.hand_off.received] == [600.0]


async def test_deadline_passed_while_down_closes_at_start(tmp_path: Path) -> None:
    """A buffer whose deadline passed while Vivy was down closes as soon as Vivy starts."""
    path = tmp_path / "v.db"
    async with running_router(path) as h:
        await h.router.ingest(message(1))
    start = anyio.current_time()
    async with running_router(path, wall0=h.clock.wall_origin + 86400 - start) as h2:
        await anyio.sleep(1)
        assert [t - start for _, t in h2.hand_off.received] == [0.0]
        assert h2.observer.closed == {"inactivity": 1}


async def test_edits_and_deletes_change_the_buffer(tmp_path: Path) -> None:
    """Edits replace text, deletes remove rows, unknown ids are counted and dropped."""
    async with running_router(tmp_path / "v.db") as h:
        await h.router.ingest(message(1, text="first"))
        await h.router.ingest(message(2, text="second"))
        edit = IncomingEdit(GUILD, 1, 1, "first, edited")
        assert await h.router.edit(edit) is IngestOutcome.EDITED
        assert await h.router.delete(IncomingDelete(GUILD, 1, 2)) is IngestOutcome.DELETED
        assert await h.router.delete(IncomingDelete(GUILD, 1, 55)) is IngestOutcome.UNKNOWN_DELETE
        unknown = IncomingEdit(GUILD, 1, 56, "x")
        assert await h.router.edit(unknown) is IngestOutcome.UNKNOWN_EDIT
        assert await h.db.read(texts) == ["first, edited"]


async def test_edit_reaches_a_closed_buffer_awaiting_its_note(tmp_path: Path) -> None:
    """An edit after the buffer closed still updates the pending outbox row's message."""
    async with running_router(tmp_path / "v.db") as h:
        await h.router.ingest(message(1, text="typo"))
        await anyio.sleep(2000)
        assert len(h.hand_off.received) == 1
        assert await h.router.edit(IncomingEdit(GUILD, 1, 1, "fixed")) is IngestOutcome.EDITED
        assert await h.db.read(texts) == ["fixed"]


async def test_an_edit_in_the_batch_that_filled_the_cap_reaches_the_closed_buffer(
    tmp_path: Path,
) -> None:
    """A batch may go on after its messages filled the buffer: its edit is applied, no crash."""
    async with running_router(tmp_path / "v.db") as h:
        acks = [await h.router.submit(message(i, text=f"m{i}")) for i in range(1, 101)]
        assert await h.router.edit(IncomingEdit(GUILD, 1, 100, "fixed")) is IngestOutcome.EDITED
        assert [ack.result() for ack in acks] == [IngestOutcome.STORED] * 100
        assert len(h.hand_off.received) == 1
        assert (await h.db.read(texts))[-1] == "fixed"
        assert h.router.statistics().restarts == 0


async def test_bots_blacklisted_and_opted_out_are_never_stored(tmp_path: Path) -> None:
    """Vivy, other bots, blacklisted and opted-out members leave no row behind."""
    policy = CapturePolicy(own_user_id=1, blacklisted_users=frozenset({66}))
    async with running_router(tmp_path / "v.db", policy=policy) as h:
        h.router.set_opted_out(GUILD, 44, True)
        assert await h.router.ingest(message(1, author=1)) is IngestOutcome.EXCLUDED_BOT
        assert await h.router.ingest(message(2, bot=True)) is IngestOutcome.EXCLUDED_BOT
        assert await h.router.ingest(message(3, author=66)) is IngestOutcome.EXCLUDED_BLACKLIST
        assert await h.router.ingest(message(4, author=44)) is IngestOutcome.EXCLUDED_OPT_OUT
        assert await h.router.ingest(message(5, author=8)) is IngestOutcome.STORED
        authors = await h.db.read(
            lambda c: [r[0] for r in c.execute("SELECT author_id FROM buffer_messages")]
        )
        assert authors == [8]


async def test_bad_input_is_handled_not_raised(tmp_path: Path) -> None:
    """Empty, attachment-only, over-long and duplicate messages are dropped or trimmed."""
    async with running_router(tmp_path / "v.db") as h:
        assert await h.router.ingest(message(1, text="   ")) is IngestOutcome.EMPTY
        assert await h.router.ingest(message(2, text="")) is IngestOutcome.EMPTY
        assert await h.router.ingest(message(3, text="y" * 5000)) is IngestOutcome.TRUNCATED
        assert await h.router.ingest(message(3, text="again")) is IngestOutcome.DUPLICATE
        assert await h.db.read(texts) == ["y" * 4000]


async def test_redelivery_after_flush_is_a_duplicate(tmp_path: Path) -> None:
    """A message redelivered after its buffer closed is recognised by the channel watermark."""
    async with running_router(tmp_path / "v.db") as h:
        await h.router.ingest(message(10))
        await anyio.sleep(2000)
        assert await h.router.ingest(message(10)) is IngestOutcome.DUPLICATE
        assert await h.router.ingest(message(11)) is IngestOutcome.STORED


async def test_thousand_channels_each_flush_once(tmp_path: Path) -> None:
    """1,000 concurrent channels each hand off exactly one buffer, and their actors retire."""
    async with running_router(tmp_path / "v.db") as h:
        async with anyio.create_task_group() as tg:
            for channel in range(1, 1001):
                for k in range(3):
                    tg.start_soon(h.router.ingest, message(channel * 10 + k, channel=channel))
        await anyio.sleep(1600)
        ids = [buffer_id for buffer_id, _ in h.hand_off.received]
        assert len(ids) == 1000 and len(set(ids)) == 1000
        assert {t for _, t in h.hand_off.received} == {1500.0}
        assert h.router.statistics().active_actors == 0
        counts = await h.db.read(count_buffers)
        assert counts == {"open": 0, "closed": 1000}


async def test_acknowledged_message_survives_reopen(tmp_path: Path) -> None:
    """After ingest returns, closing and reopening the database shows the message."""
    path = tmp_path / "v.db"
    async with running_router(path) as h:
        await h.router.ingest(message(1, text="durable"))
    db = Database.open(path)
    try:
        assert db.read_sync(texts) == ["durable"]
    finally:
        db.close()


async def test_inactivity_window_is_drawn_per_buffer(tmp_path: Path) -> None:
    """Default windows lie in 20–30 minutes, vary between buffers, and repeat with the seed."""
    settings = BufferSettings(seed=42)
    runs: list[list[float]] = []
    for name in ("a.db", "b.db"):
        async with running_router(tmp_path / name, settings=settings) as h:
            start = anyio.current_time()
            for channel in range(1, 6):
                await h.router.ingest(message(channel * 100, channel=channel))
            await anyio.sleep(3600)
            runs.append(sorted(t - start for _, t in h.hand_off.received))
    first, second = runs
    assert len(first) == 5 and all(1200.0 <= t <= 1800.0 for t in first)
    assert len(set(first)) > 1
    assert first == second


class FlakyHandOff(RecordingHandOff):
    """Fails the first hand-off, as a crash between closing and handing off would."""

    def hand_off(self, buffer_id: int) -> None:
        """Raise once, then record."""
        if not self.received and not getattr(self, "failed", False):
            self.failed = True
            raise RuntimeError("hand-off lost")
        super().hand_off(buffer_id)


async def test_crashed_actor_is_restarted_from_the_database(tmp_path: Path) -> None:
    """An actor that crashes is counted and restarted with its channel's state from the db."""
    async with running_router(tmp_path / "v.db", hand_off_type=FlakyHandOff) as h:
        await h.router.ingest(message(1))
        await anyio.sleep(1600)  # closes at 1500 s; the hand-off raises; the actor restarts
        assert h.observer.restarts == 1
        assert h.router.statistics().restarts == 1
        assert await h.router.ingest(message(2)) is IngestOutcome.STORED
        assert await h.router.ingest(message(1)) is IngestOutcome.DUPLICATE
        counts = await h.db.read(count_buffers)
        assert counts == {"open": 1, "closed": 1}
