"""Shard leases and fencing on PostgreSQL: one owner per shard at every moment, writes refused
after a takeover, each process's pending work scoped to its shards, and the LeaseKeeper under
trio's MockClock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date

import anyio
import psycopg
import psycopg.errors
import pytest

from tests.storage.test_profiles import new_note
from vivy.actors.lease_keeper import LeaseKeeper
from vivy.clock import Clock
from vivy.errors import ConfigError, LeaseLost
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.shards import Fence, parse_shard_ids
from vivy.storage.port import LeaseStore, Store
from vivy.storage.postgres.db import PgDatabase, connect
from vivy.storage.postgres.dialect import postgres_tx
from vivy.storage.postgres.leases import acquire, check_fence, epoch_history
from vivy.storage.postgres.stores import postgres_store

pytestmark = pytest.mark.anyio

TTL = 15.0
#: Guilds whose events Discord sends to shard 0 and to shard 1 of 2.
ON_0, ON_1 = 10 << 22, 11 << 22
HALVES = (parse_shard_ids("0", 2), parse_shard_ids("1", 2))


@pytest.fixture
def pg(pg_uri: str) -> Iterator[PgDatabase]:
    """The PostgreSQL owner of a fresh schema, run inline (for the mock clock)."""
    database = PgDatabase.open(pg_uri, inline=True)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def fenced(pg_uri: str) -> Iterator[Callable[[Fence], Store]]:
    """Opens the store of another process on the same database, scoped and fenced by its
    fence (each on a connection of its own, as a process of a fleet)."""
    opened: list[PgDatabase] = []

    def open_store(fence: Fence) -> Store:
        opened.append(PgDatabase.open(pg_uri, inline=True, fence=fence))
        return postgres_store(opened[-1])

    yield open_store
    for database in opened:
        database.close()


def leases_of(store: Store) -> LeaseStore:
    assert store.leases is not None
    return store.leases


def message(message_id: int) -> BufferedMessage:
    return BufferedMessage(message_id, 7, "ann", f"line {message_id}", 100.0 + message_id)


async def test_a_live_lease_has_one_owner_and_a_takeover_bumps_the_epoch(pg: PgDatabase) -> None:
    """The first owner gets epoch 1; another owner gets nothing while it is live, and epoch 2
    once it expired; the first owner's renewal then keeps nothing."""
    leases = leases_of(postgres_store(pg))
    assert await leases.acquire(0, 2, "a", 100.0, TTL) == 1
    assert await leases.acquire(0, 2, "b", 100.0 + TTL - 0.1, TTL) is None
    assert await leases.renew("a", {0: 1}, 110.0, TTL) == {0}  # now live until 125
    assert await leases.acquire(0, 2, "b", 124.9, TTL) is None
    assert await leases.acquire(0, 2, "b", 125.0, TTL) == 2
    assert await leases.renew("a", {0: 1}, 126.0, TTL) == set()
    assert [(h.owner, h.epoch) for h in await leases.holders([0, 1])] == [("b", 2)]
    await leases.release("b", {0: 2})
    assert await leases.acquire(0, 2, "c", 126.0, TTL) == 3  # released: free at once


async def test_a_fleet_of_another_shard_count_is_visible_while_live(pg: PgDatabase) -> None:
    """Live leases taken with another count are reported; expired ones are not."""
    leases = leases_of(postgres_store(pg))
    await leases.acquire(3, 4, "old", 100.0, TTL)
    assert [h.owner for h in await leases.other_fleet(2, 110.0)] == ["old"]
    assert await leases.other_fleet(4, 110.0) == []
    assert await leases.other_fleet(2, 100.0 + TTL) == []


async def test_a_buffer_write_after_a_takeover_is_refused_and_changes_nothing(
    pg: PgDatabase, fenced: Callable[[Fence], Store]
) -> None:
    """The old owner's fenced writes fail with LeaseLost once another process took the shard;
    the buffer keeps what the new owner wrote, and every accepted write is counted under the
    epoch that made it."""
    leases = leases_of(postgres_store(pg))
    old, new = Fence(HALVES[0], "old"), Fence(HALVES[0], "new")
    old.hold(0, await leases.acquire(0, 2, "old", 100.0, TTL) or 0)
    old_store, new_store = fenced(old), fenced(new)
    buffer_id = await old_store.buffers.open_buffer(ON_0, 5, "general", 100.0, 1500.0)
    await old_store.buffers.append_messages(buffer_id, [message(1)], 101.0)

    new.hold(0, await leases.acquire(0, 2, "new", 100.0 + TTL, TTL) or 0)
    await new_store.buffers.append_messages(buffer_id, [message(2)], 102.0)
    with pytest.raises(LeaseLost, match="shard 0"):
        await old_store.buffers.append_messages(buffer_id, [message(3)], 103.0)
    with pytest.raises(LeaseLost):
        await old_store.buffers.close_buffer(buffer_id, 104.0, CloseReason.INACTIVITY)
    with pytest.raises(LeaseLost):
        await old_store.buffers.delete_message(1)
    with pytest.raises(LeaseLost, match="does not hold"):  # shard 1: never leased
        await new_store.buffers.open_buffer(ON_1, 6, "other", 100.0, 1500.0)

    stored = await new_store.buffers.load_buffer(buffer_id)
    assert stored is not None and stored.row.status == "open"
    assert [m.message_id for m in stored.messages] == [1, 2]
    writes = {(e.owner, e.epoch): e.writes for e in await pg.read(epoch_history)}
    assert writes == {("old", 1): 2, ("new", 2): 1}


def test_a_takeover_waits_for_the_write_in_flight(pg_uri: str) -> None:
    """A fenced write holds the lease row: a takeover cannot happen until it commits, so the
    old epoch's last write is numbered before the new epoch's grant (what the fleet benchmark
    counts as double-owner writes, which must be none)."""
    PgDatabase.open(pg_uri).close()
    writer, taker = connect(pg_uri), connect(pg_uri)
    try:
        with writer.transaction():
            assert acquire(postgres_tx(writer), 0, 2, "old", 100.0, TTL) == 1
        with writer.transaction():
            check_fence(writer, 0, 1)
            # The lease is expired by the taker's clock, yet its row is locked by the write.
            with pytest.raises(psycopg.errors.LockNotAvailable), taker.transaction():
                taker.execute("SET LOCAL lock_timeout = '1ms'")
                acquire(postgres_tx(taker), 0, 2, "new", 100.0 + TTL, TTL)
        with taker.transaction():
            assert acquire(postgres_tx(taker), 0, 2, "new", 100.0 + TTL, TTL) == 2
        with writer.transaction():
            history = {e.epoch: e for e in epoch_history(postgres_tx(writer))}
        last_write = history[1].last_write_seq
        assert last_write is not None and last_write < history[2].acquired_seq
        with pytest.raises(LeaseLost), writer.transaction():
            check_fence(writer, 0, 1)
    finally:
        writer.close()
        taker.close()


async def test_each_process_sees_only_the_pending_work_of_its_shards(
    pg: PgDatabase, fenced: Callable[[Fence], Store]
) -> None:
    """Open and closed buffers, pending profile updates and the nightly job's guilds are
    listed to the owner of the guild's shard only."""
    everything = postgres_store(pg)
    ids = {}
    for guild in (ON_0, ON_1):
        closed = await everything.buffers.open_buffer(guild, guild + 1, "c", 100.0, 1500.0)
        await everything.buffers.close_buffer(closed, 200.0, CloseReason.INACTIVITY)
        ids[guild] = await everything.buffers.open_buffer(guild, guild + 2, "o", 100.0, 1500.0)
        noted = await everything.buffers.open_buffer(guild, guild + 3, "n", 100.0, 1500.0)
        await everything.buffers.close_buffer(noted, 200.0, CloseReason.INACTIVITY)
        await everything.notes.commit_conversation_note(
            noted, replace(new_note(7), guild_id=guild), updates_due_at=0.0
        )
    for half, guild in zip(HALVES, (ON_0, ON_1), strict=True):
        mine = fenced(Fence(half, "me"))
        assert [g for g, _ in await mine.buffers.open_channels()] == [guild]
        assert len(await mine.buffers.closed_buffer_ids()) == 1
        assert {u.guild_id for u in await mine.profiles.pending_updates()} == {guild}
        assert await mine.jobs.guilds_with_notes(0.0, 1000.0) == [guild]
    assert len(await everything.buffers.closed_buffer_ids()) == 2


async def test_a_day_is_complete_for_the_shards_that_ran_it(
    pg: PgDatabase, fenced: Callable[[Fence], Store]
) -> None:
    """A fleet process's run completes the day for its shards only; a run of every shard
    completes it for all."""
    day, other = date(2026, 3, 2), date(2026, 3, 3)
    first, second = (fenced(Fence(half, "me")) for half in HALVES)
    await first.jobs.record_run(day, 10.0)
    assert await first.jobs.completed_days() == [day]
    assert await second.jobs.completed_days() == []
    await postgres_store(pg).jobs.record_run(other, 20.0)
    assert await second.jobs.completed_days() == [other]
    assert await first.jobs.completed_days() == [day, other]


class Reports:
    """What a LeaseKeeper reported."""

    def __init__(self) -> None:
        self.acquired: list[tuple[int, int, float]] = []
        self.lost: list[int] = []
        self.clock = Clock.starting_at(1000.0)

    def lease_acquired(self, shard: int, epoch: int) -> None:
        self.acquired.append((shard, epoch, self.clock.now()))

    def lease_lost(self, shard: int) -> None:
        self.lost.append(shard)


async def test_the_keeper_waits_out_a_dead_owner_then_renews_and_releases(
    pg: PgDatabase,
) -> None:
    """A shard a dead process held is taken when its lease expires (virtual time); the other
    is taken at once; the keeper renews while running and releases on a graceful stop."""
    reports = Reports()
    store = postgres_store(pg)
    await leases_of(store).acquire(1, 2, "dead", 1000.0, TTL)  # never renewed: expires at 1015
    fence = Fence(parse_shard_ids("0-1", 2), "me")
    keeper = LeaseKeeper(leases_of(store), fence, clock=reports.clock, ttl_s=TTL, observer=reports)
    async with anyio.create_task_group() as tg:
        await tg.start(keeper.run)
        assert [(s, e) for s, e, _ in reports.acquired] == [(0, 1), (1, 2)]
        assert reports.acquired[0][2] == 1000.0 and 1015.0 <= reports.acquired[1][2] <= 1015.1
        await anyio.sleep(100.0)
        assert await leases_of(store).acquire(0, 2, "rival", reports.clock.now(), TTL) is None
        tg.cancel_scope.cancel()
    assert fence.held == {}
    assert await leases_of(store).acquire(0, 2, "next", reports.clock.now(), TTL) == 2


async def test_the_keeper_stops_when_its_lease_was_taken_over(pg: PgDatabase) -> None:
    """A process that paused past its lease finds it taken at its next renewal: LeaseLost,
    the lease reported lost, and the fence no longer lets it write."""
    reports = Reports()
    store = postgres_store(pg)
    fence = Fence(HALVES[0], "me")
    keeper = LeaseKeeper(leases_of(store), fence, clock=reports.clock, ttl_s=TTL, observer=reports)
    with pytest.RaisesGroup(pytest.RaisesExc(LeaseLost, match="took over shard")):
        async with anyio.create_task_group() as tg:
            await tg.start(keeper.run)
            # Another process saw the lease expire (as if this one had paused for a minute).
            assert await leases_of(store).acquire(0, 2, "rival", reports.clock.now() + 60, TTL)
    assert reports.lost == [0] and fence.held == {}
    with pytest.raises(LeaseLost):
        fence.token(ON_0)


async def test_the_keeper_refuses_to_start_beside_a_fleet_of_another_size(pg: PgDatabase) -> None:
    """Resharding while the old fleet's leases live would give a guild two owners."""
    reports = Reports()
    store = postgres_store(pg)
    await leases_of(store).acquire(0, 3, "old fleet", 1000.0, TTL)
    keeper = LeaseKeeper(
        leases_of(store), Fence(HALVES[0], "me"), clock=reports.clock, ttl_s=TTL, observer=reports
    )
    with pytest.raises(ConfigError, match="fleet of 3 shards"):
        await keeper.run()
    assert reports.acquired == []
