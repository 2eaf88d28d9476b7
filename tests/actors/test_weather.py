"""Actors through a database outage, under trio's MockClock: nothing accepted is dropped, no
actor ends the app, and a lease keeper cut off from the database fences itself in time; a
permanent storage error (a read-only file) is not waited for but raised at once."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from vivy.actors.lease_keeper import LeaseKeeper, SelfFenced
from vivy.actors.outage import until_stored
from vivy.actors.router import Router
from vivy.clock import Clock
from vivy.errors import AppStopped, DatabaseUnavailable, LeaseLost, StorageError
from vivy.memory.database import LeaseHolder
from vivy.shards import Fence, Shards
from vivy.state.gate import CapturePolicy, IncomingDelete, IncomingEdit, IngestOutcome
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import sqlite_store

from .harness import FIXED, GUILD, WALL0, CountingObserver, RecordingHandOff, message

pytestmark = pytest.mark.anyio


def read_only() -> StorageError:
    """What SQLite says of a write to a file this user may not write: no wait cures it."""
    return StorageError("database v.db: attempt to write a readonly database")


class Weather:
    """Whether the database answers; a flaky area fails every call while it does not, as a
    database that went away or, when ``broken``, as one that refuses for good."""

    def __init__(self) -> None:
        self.down = False
        self.broken = False
        self.refused = 0

    def check(self) -> None:
        """Fail like a database that went away, or like a read-only one."""
        if self.broken:
            self.refused += 1
            raise read_only()
        if self.down:
            self.refused += 1
            raise DatabaseUnavailable("database: server closed the connection unexpectedly")


async def test_a_transient_error_is_retried_with_backoff_until_the_database_answers() -> None:
    """A call that finds the database unavailable is tried again 0.5, 1, 2, 4 and 5 s later,
    with one warning at the first failure and one after five seconds of waiting, until it
    answers; its result is returned and the recovery logged."""
    weather = Weather()
    weather.down = True
    calls: list[float] = []

    async def call() -> str:
        calls.append(anyio.current_time())
        weather.check()
        return "stored"

    async def lift() -> None:
        await anyio.sleep(10.0)
        weather.down = False

    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lift)
            result = await until_stored(call, what="test call")
    assert result == "stored"
    assert calls == [0.0, 0.5, 1.5, 3.5, 7.5, 12.5]
    assert weather.refused == 5
    warnings = [e for e in logs if e["event"] == "database unavailable; retrying"]
    assert [(e["what"], e["waited_s"]) for e in warnings] == [
        ("test call", 0.0),
        ("test call", 7.5),
    ]
    [back] = [e for e in logs if e["event"] == "database available again"]
    assert back["waited_s"] == 12.5


async def test_a_permanent_storage_error_is_raised_at_once() -> None:
    """A storage error that is not :class:`DatabaseUnavailable` (a read-only file, a full
    disk, a schema mismatch) is raised by the first call, without a wait or a warning."""
    weather = Weather()
    weather.broken = True

    async def call() -> None:
        weather.check()

    with capture_logs() as logs, pytest.raises(StorageError, match="readonly") as raised:
        await until_stored(call, what="test call")
    assert not isinstance(raised.value, DatabaseUnavailable)
    assert weather.refused == 1
    assert anyio.current_time() == 0.0
    assert [e for e in logs if e["log_level"] == "warning"] == []


class FlakyArea:
    """A storage area whose calls fail while ``weather`` is down."""

    def __init__(self, inner: Any, weather: Weather) -> None:
        self._inner = inner
        self._weather = weather

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._inner, name)

        async def flaky(*args: Any, **kwargs: Any) -> Any:
            self._weather.check()
            return await call(*args, **kwargs)

        return flaky


@asynccontextmanager
async def flaky_router(path: Path, weather: Weather) -> AsyncIterator[tuple[Router, Database]]:
    """A router over an inline SQLite database whose buffer and member calls fail while
    ``weather`` is down."""
    db = Database.open(path, inline=True)
    store = sqlite_store(db)
    store = dataclasses.replace(
        store,
        buffers=FlakyArea(store.buffers, weather),
        members=FlakyArea(store.members, weather),
    )
    clock = Clock(wall_origin=WALL0, mono_origin=0.0)
    router = Router(
        store=store,
        clock=clock,
        buffers=FIXED,
        policy=CapturePolicy(own_user_id=1),
        hand_off=RecordingHandOff(clock),
        observer=CountingObserver(),
    )
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(router.run)
            yield router, db
            tg.cancel_scope.cancel()
    finally:
        db.close()


def stored_texts(db: Database) -> list[str]:
    """Texts of every buffered message, in id order."""
    rows = db.read_sync(lambda tx: tx.all("SELECT text FROM buffer_messages ORDER BY message_id"))
    return [str(text) for (text,) in rows]


async def test_events_sent_during_an_outage_are_stored_in_order_when_it_ends(
    tmp_path: Path,
) -> None:
    """Messages, an edit and a deletion that reach the channel while the database is down
    wait in its mailbox and are stored in order at the first retry after it is back; the
    retries come 0.5, 1, 2, 4 and 5 s apart."""
    weather = Weather()
    async with flaky_router(tmp_path / "v.db", weather) as (router, db):
        assert await router.ingest(message(1, text="before")) is IngestOutcome.STORED
        weather.down = True
        outcomes: list[IngestOutcome] = []
        stored_at: list[float] = []

        async def send(item: Any) -> None:
            if isinstance(item, IncomingEdit):
                outcomes.append(await router.edit(item))
            elif isinstance(item, IncomingDelete):
                outcomes.append(await router.delete(item))
            else:
                outcomes.append(await router.ingest(item))
            stored_at.append(anyio.current_time())

        async with anyio.create_task_group() as tg:
            for item in (
                message(2, text="during one"),
                message(3, text="during two"),
                IncomingEdit(GUILD, 1, 2, "during one, edited", 7),
                IncomingDelete(GUILD, 1, 3),
            ):
                tg.start_soon(send, item)
                await anyio.lowlevel.checkpoint()
            await anyio.sleep(10.0)
            assert outcomes == []  # nothing answered while the database is down
            weather.down = False
        assert stored_texts(db) == ["before", "during one, edited"]
        assert stored_at == [0.5 + 1 + 2 + 4 + 5] * 4
        assert IngestOutcome.STORED in outcomes
        assert weather.refused == 5


async def test_the_router_waits_for_the_database_at_start(tmp_path: Path) -> None:
    """A router started while the database is down starts once it answers, and says so in
    one warning for the first failure and one every five seconds after."""
    weather = Weather()
    weather.down = True
    db = Database.open(tmp_path / "v.db", inline=True)

    async def lift() -> None:
        await anyio.sleep(9.0)
        weather.down = False

    store = sqlite_store(db)
    store = dataclasses.replace(store, members=FlakyArea(store.members, weather))
    clock = Clock(wall_origin=WALL0, mono_origin=0.0)
    router = Router(
        store=store,
        clock=clock,
        buffers=FIXED,
        policy=CapturePolicy(own_user_id=1),
        hand_off=RecordingHandOff(clock),
        observer=CountingObserver(),
    )
    try:
        with capture_logs() as logs:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lift)
                await tg.start(router.run)
                started = anyio.current_time()
                tg.cancel_scope.cancel()
    finally:
        db.close()
    assert started == 0.5 + 1 + 2 + 4 + 5
    warnings = [e for e in logs if e["event"] == "database unavailable; retrying"]
    assert [e["waited_s"] for e in warnings] == [0.0, 7.5]
    assert [e["event"] for e in logs if e["log_level"] == "info"] == ["database available again"]


async def test_a_permanent_error_fails_the_message_instead_of_holding_it(tmp_path: Path) -> None:
    """A write refused for good (a read-only file) is not put back to wait for the database:
    its sender gets the error at once, and the channel's later messages are stored."""
    weather = Weather()
    async with flaky_router(tmp_path / "v.db", weather) as (router, db):
        assert await router.ingest(message(1, text="before")) is IngestOutcome.STORED
        weather.broken = True
        with capture_logs() as logs, pytest.raises(StorageError, match="readonly"):
            await router.ingest(message(2, text="refused"))
        assert anyio.current_time() == 0.0
        weather.broken = False
        assert await router.ingest(message(3, text="after")) is IngestOutcome.STORED
        assert stored_texts(db) == ["before", "after"]
    assert [e for e in logs if e["event"] == "database unavailable; retrying"] == []


async def test_a_router_on_a_read_only_database_ends_at_start(tmp_path: Path) -> None:
    """A router whose first reads are refused for good raises the error at once, so ``vivy
    run`` exits with its line instead of waiting for a database that will not change."""
    weather = Weather()
    weather.broken = True
    with pytest.raises(BaseExceptionGroup) as raised:
        async with flaky_router(tmp_path / "v.db", weather):
            pytest.fail("the router started")
    error = only(raised.value)
    assert isinstance(error, StorageError) and "readonly" in str(error)
    assert weather.refused == 1
    assert anyio.current_time() == 0.0


class ScriptedLeases:
    """A lease table in memory whose renewals can fail fast, hang, or find shards taken."""

    def __init__(self) -> None:
        #: "ok", "refused" (fails at once), "black hole" (never answers), "taken" or
        #: "read-only" (fails for good).
        self.renewals = "ok"
        self.released: list[dict[int, int]] = []
        self.epoch = 0

    async def acquire(
        self, shard_id: int, shard_count: int, owner: str, now: float, ttl_s: float
    ) -> int | None:
        self.epoch += 1
        return self.epoch

    async def renew(
        self, owner: str, held: Mapping[int, int], now: float, ttl_s: float
    ) -> set[int]:
        if self.renewals == "refused":
            raise DatabaseUnavailable("cannot open database: Connection refused")
        if self.renewals == "read-only":
            raise read_only()
        if self.renewals == "black hole":
            await anyio.sleep_forever()
        if self.renewals == "taken":
            return set()
        return set(held)

    async def release(self, owner: str, held: Mapping[int, int]) -> None:
        if self.renewals != "ok":
            raise DatabaseUnavailable("cannot open database: Connection refused")
        self.released.append(dict(held))

    async def holders(self, shard_ids: Sequence[int]) -> list[LeaseHolder]:
        return []

    async def other_fleet(self, shard_count: int, now: float) -> list[LeaseHolder]:
        return []

    async def live(self, now: float) -> list[LeaseHolder]:
        return []


class NoLeaseObserver:
    """Records the shards whose lease was lost."""

    def __init__(self) -> None:
        self.lost: list[int] = []

    def lease_acquired(self, shard: int, epoch: int) -> None:
        """Nothing to record."""

    def lease_lost(self, shard: int) -> None:
        """Record the shard."""
        self.lost.append(shard)


async def keep_until_it_ends(
    leases: ScriptedLeases, weather_at: float, weather: str, ttl_s: float = 15.0
) -> tuple[BaseException | None, float, Fence, NoLeaseObserver]:
    """Run a keeper of shards 0 and 1 on ``leases``; at ``weather_at`` renewals turn to
    ``weather``. Returns what ended it (None: it ran 60 s), when, its fence and observer."""
    fence = Fence(Shards((0, 1), 2), "test-owner")
    observer = NoLeaseObserver()
    keeper = LeaseKeeper(
        leases,
        fence,
        clock=Clock(wall_origin=WALL0, mono_origin=0.0),
        ttl_s=ttl_s,
        observer=observer,
    )

    async def turn() -> None:
        await anyio.sleep(weather_at)
        leases.renewals = weather

    ended: BaseException | None = None
    with anyio.move_on_after(60.0):
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn)
                await tg.start(keeper.run)
        except Exception as exc:
            ended = exc
    return ended, anyio.current_time(), fence, observer


def only(exc: BaseException | None) -> BaseException | None:
    """The one error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        [exc] = exc.exceptions
    return exc


async def test_a_keeper_cut_off_by_a_black_hole_fences_itself_before_its_leases_expire() -> None:
    """Renewed at 0 (leases until 15), the renewal at 5 gets no answer: its deadline ends it
    at 10, when another attempt could not end before 15, so the keeper stops every write
    (its fence holds nothing) and says so at 10, five seconds before another could lease."""
    leases = ScriptedLeases()
    with capture_logs() as logs:
        ended, at, fence, observer = await keep_until_it_ends(leases, 1.0, "black hole")
    assert isinstance(only(ended), SelfFenced)
    assert at == 10.0
    assert fence.held == {}
    assert observer.lost == [0, 1]
    [line] = [e for e in logs if e["log_level"] == "error"]
    assert line["shards"] == [0, 1]
    assert line["event"].startswith("shard leases not renewed within their term")


async def test_a_refused_keeper_retries_each_second_then_fences_itself() -> None:
    """Refused renewals are retried every second from 5; at 9 another attempt (1 s away, up
    to 5 s long) could end past the expiry at 15, so it fences itself then."""
    leases = ScriptedLeases()
    ended, at, fence, _ = await keep_until_it_ends(leases, 1.0, "refused")
    assert isinstance(only(ended), SelfFenced)
    assert at == 9.0
    assert fence.held == {}


async def test_a_permanent_renewal_error_ends_the_keeper_at_once() -> None:
    """A renewal refused for good (not an unavailable database) is not retried until the
    term runs out: the first one, at 5, ends the keeper with that error."""
    leases = ScriptedLeases()
    ended, at, _, _ = await keep_until_it_ends(leases, 1.0, "read-only")
    error = only(ended)
    assert isinstance(error, StorageError) and "readonly" in str(error)
    assert at == 5.0


async def test_a_short_outage_keeps_the_leases() -> None:
    """Renewals refused from 4 s to 7 s: the one at 5 fails, the one at 6 too, the one at 7
    succeeds; the keeper holds its leases and releases them when it stops."""
    leases = ScriptedLeases()

    async def recover() -> None:
        await anyio.sleep(7.0)
        leases.renewals = "ok"

    fence = Fence(Shards((0, 1), 2), "test-owner")
    keeper = LeaseKeeper(
        leases,
        fence,
        clock=Clock(wall_origin=WALL0, mono_origin=0.0),
        ttl_s=15.0,
        observer=NoLeaseObserver(),
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(recover)
        await tg.start(keeper.run)
        await anyio.sleep(4.0)
        leases.renewals = "refused"
        await anyio.sleep(56.0)
        assert fence.held == {0: 1, 1: 2}
        tg.cancel_scope.cancel()
    assert leases.released == [{0: 1, 1: 2}]


async def test_a_lease_taken_over_still_stops_the_keeper_as_lost() -> None:
    """A renewal that finds the shards taken (this process was paused) raises LeaseLost, not
    SelfFenced: another process runs them, so this one stops."""
    leases = ScriptedLeases()
    ended, at, fence, _ = await keep_until_it_ends(leases, 1.0, "taken")
    error = only(ended)
    assert isinstance(error, LeaseLost) and not isinstance(error, SelfFenced)
    assert at == 5.0
    assert fence.held == {}


async def test_events_still_waiting_when_the_router_stops_are_answered(tmp_path: Path) -> None:
    """A message waiting for the database when the router stops (the app fenced itself or
    is shutting down) is answered with AppStopped, so its sender does not wait for ever."""
    weather = Weather()
    answers: list[BaseException] = []

    async def send(router: Router) -> None:
        try:
            await router.ingest(message(2, text="never stored"))
        except AppStopped as exc:
            answers.append(exc)

    async with (
        anyio.create_task_group() as outer,
        flaky_router(tmp_path / "v.db", weather) as (router, db),
    ):
        await router.ingest(message(1, text="stored"))
        weather.down = True
        outer.start_soon(send, router)
        await anyio.sleep(3.0)
        assert answers == []
        assert stored_texts(db) == ["stored"]
    [error] = answers
    assert "stopped before storing" in str(error)
