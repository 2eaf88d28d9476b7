"""The LeaseKeeper actor: holds this process's shard leases in a fleet sharing PostgreSQL.

At start it takes the lease of every shard the process runs, waiting out the lease of a
process that died (it expires), waiting for a database that does not answer, and refusing to
start beside a fleet of another shard count. Only then does the app start its other actors,
so a new owner restores a shard's open buffers, closed buffers and pending profile updates
after the previous owner can no longer write them.

It renews the leases every third of their term, on a connection of its own, each call bounded
by a deadline. When a renewal finds a shard taken over (this process paused past the expiry),
it raises :class:`~vivy.errors.LeaseLost`, which stops the app and the process: another process
runs those shards now. When renewals fail (the database is unreachable) until another attempt
could no longer end before the leases expire, the keeper fences itself: it forgets its epochs
(so no write leaves the process) and raises :class:`SelfFenced` before any other process can be
granted the leases; ``vivy run`` then stops its gateway shards and takes the leases again
through the normal path once the database answers. Either way the writes of a process that
lost its shards are also refused by the fence, which every buffer write checks in its own
transaction. On a graceful stop it releases the leases so that a successor starts at once.
"""

from __future__ import annotations

from typing import Protocol

import anyio
import anyio.abc
import structlog

from vivy.actors.outage import Outage, until_stored
from vivy.clock import Clock
from vivy.errors import ConfigError, DatabaseUnavailable, LeaseLost, StorageError
from vivy.shards import Fence
from vivy.storage.port import LeaseStore

__all__ = ["LeaseKeeper", "LeaseObserver", "SelfFenced"]

log = structlog.get_logger(__name__)

#: Seconds between attempts to renew after a failed renewal, at most.
RETRY_S = 1.0


class SelfFenced(LeaseLost):
    """This process could not renew its leases within their term (the database did not
    answer), so it stopped writing before they could pass to another process; it may lease
    its shards again once the database answers."""


class LeaseObserver(Protocol):
    """What the LeaseKeeper reports."""

    def lease_acquired(self, shard: int, epoch: int) -> None:
        """This process took the shard's lease at ``epoch``."""

    def lease_lost(self, shard: int) -> None:
        """Another process took the shard's lease over."""


class LeaseKeeper:
    """Takes, renews and releases the leases of ``fence.shards``, keeping ``fence`` current."""

    def __init__(
        self,
        leases: LeaseStore,
        fence: Fence,
        *,
        clock: Clock,
        ttl_s: float,
        observer: LeaseObserver,
    ) -> None:
        self._leases = leases
        self._fence = fence
        self._clock = clock
        self._ttl_s = ttl_s
        self._observer = observer
        #: Longest a lease call may take; also a third of the term between renewals.
        self._deadline_s = ttl_s / 3
        #: Wall time at which the leases held expire, as last renewed.
        self._expires_at = 0.0
        self._outage = Outage("shard leases")

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Take every lease, report started, then renew until cancelled or a lease is lost
        (:class:`LeaseLost`) or could not be renewed in time (:class:`SelfFenced`)."""
        try:
            await self._acquire_all()
            task_status.started()
            while True:
                await anyio.sleep(self._ttl_s / 3 if self._renew_ok() else self._retry_s())
                await self._renew()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._deadline_s):
                await self._release()

    def _renew_ok(self) -> bool:
        return self._outage.failures == 0

    def _retry_s(self) -> float:
        return min(RETRY_S, self._ttl_s / 6)

    async def _acquire_all(self) -> None:
        """Take each shard's lease, waiting while another live process holds one."""
        shards = self._fence.shards
        others = await until_stored(
            lambda: self._leases.other_fleet(shards.count, self._clock.now()), what="shard leases"
        )
        if others:
            holder = others[0]
            raise ConfigError(
                f"shard {holder.shard_id} is leased by {holder.owner} of a fleet of "
                f"{holder.shard_count} shards, but this process runs {shards.count}: stop every "
                "process of the other fleet (or wait for its leases to expire) before resharding"
            )
        waiting = set(shards.ids)
        while True:
            now = self._clock.now()
            try:
                for shard in sorted(waiting):
                    epoch = await self._leases.acquire(
                        shard, shards.count, self._fence.owner, now, self._ttl_s
                    )
                    if epoch is not None:
                        self._expires_at = (
                            now + self._ttl_s
                            if not self._fence.held
                            else min(self._expires_at, now + self._ttl_s)
                        )
                        self._fence.hold(shard, epoch)
                        self._observer.lease_acquired(shard, epoch)
                        waiting.discard(shard)
                if not waiting:
                    self._outage.recovered()
                    log.info(
                        "shard leases taken", shards=shards.describe(), epochs=self._fence.held
                    )
                    return
                stored = await self._leases.holders(sorted(waiting))
            except DatabaseUnavailable as exc:
                await anyio.sleep(self._outage.failed(exc))
                if self._fence.held:
                    await self._renew()
                continue
            holders = [h for h in stored if h.expires_at > now]
            wake = min((h.expires_at for h in holders), default=now)
            log.info(
                "waiting for shard leases held by other processes",
                shards=sorted(waiting),
                owners=sorted({h.owner for h in holders}),
                expires_in_s=round(wake - now, 1),
            )
            # Wake when the first of them expires, renewing the leases already taken meanwhile.
            await anyio.sleep(min(max(wake - now, 0.0) + 0.05, self._ttl_s / 3))
            if self._fence.held:
                await self._renew()

    async def _renew(self) -> None:
        """Extend every lease held; raise :class:`LeaseLost` if one was taken over, and
        :class:`SelfFenced` if the leases may expire before another attempt could end. A
        database that does not answer is tried again; any other storage error (no wait cures
        it) ends the keeper, and the app with it."""
        held = self._fence.held
        started = self._clock.now()
        try:
            with anyio.fail_after(self._deadline_s):
                kept = await self._leases.renew(self._fence.owner, held, started, self._ttl_s)
        except (DatabaseUnavailable, TimeoutError) as exc:
            error = str(exc) or f"no answer within {self._deadline_s:g} s"
            self._outage.failed(exc if str(exc) else TimeoutError(error))
            now = self._clock.now()
            if now + self._retry_s() + self._deadline_s >= self._expires_at:
                self._fence_self(error)
            return
        self._outage.recovered()
        self._expires_at = started + self._ttl_s
        lost = sorted(set(held) - kept)
        for shard in lost:
            self._fence.drop(shard)
            self._observer.lease_lost(shard)
        if lost:
            raise LeaseLost(
                f"another process took over shard(s) {', '.join(map(str, lost))} while this one "
                f"({self._fence.owner}) was paused or cut off; stopping so that it alone writes "
                "their channels"
            )

    def _fence_self(self, error: str) -> None:
        """Stop every write of this process before its leases can expire, and say so."""
        held = sorted(self._fence.held)
        for shard in held:
            self._fence.drop(shard)
            self._observer.lease_lost(shard)
        log.error(
            "shard leases not renewed within their term; stopping these shards until they can "
            "be leased again",
            shards=held,
            owner=self._fence.owner,
            error=error,
        )
        raise SelfFenced(
            f"the leases of shard(s) {', '.join(map(str, held))} could not be renewed before "
            f"they expire ({error}); stopped writing"
        )

    async def _release(self) -> None:
        """Let go of the leases still held (after the app stopped writing)."""
        held = self._fence.held
        if not held:
            return
        try:
            await self._leases.release(self._fence.owner, held)
        except StorageError as exc:
            log.warning("shard leases not released; they expire on their own", error=str(exc))
            return
        for shard in held:
            self._fence.drop(shard)
        log.info("shard leases released", shards=sorted(held))
