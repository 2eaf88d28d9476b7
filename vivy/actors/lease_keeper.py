"""The LeaseKeeper actor: holds this process's shard leases in a fleet sharing PostgreSQL.

At start it takes the lease of every shard the process runs, waiting out the lease of a
process that died (it expires) and refusing to start beside a fleet of another shard count.
Only then does the app start its other actors, so a new owner restores a shard's open buffers,
closed buffers and pending profile updates after the previous owner can no longer write them.
It renews the leases every third of their term; when a renewal finds a shard taken over (this
process paused past the expiry, or was cut off from the database that long), it raises
:class:`~vivy.errors.LeaseLost`, which stops the app. Its writes were already refused by the
fence, which every buffer write checks in its own transaction. On a graceful stop it releases
the leases so that a successor starts at once.
"""

from __future__ import annotations

from typing import Protocol

import anyio
import anyio.abc
import structlog

from vivy.clock import Clock
from vivy.errors import ConfigError, LeaseLost, StorageError
from vivy.shards import Fence
from vivy.storage.port import LeaseStore

__all__ = ["LeaseKeeper", "LeaseObserver"]

log = structlog.get_logger(__name__)


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

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Take every lease, report started, then renew until cancelled or a lease is lost."""
        try:
            await self._acquire_all()
            task_status.started()
            while True:
                await anyio.sleep(self._ttl_s / 3)
                await self._renew()
        finally:
            with anyio.CancelScope(shield=True):
                await self._release()

    async def _acquire_all(self) -> None:
        """Take each shard's lease, waiting while another live process holds one."""
        shards = self._fence.shards
        others = await self._leases.other_fleet(shards.count, self._clock.now())
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
            for shard in sorted(waiting):
                epoch = await self._leases.acquire(
                    shard, shards.count, self._fence.owner, now, self._ttl_s
                )
                if epoch is not None:
                    self._fence.hold(shard, epoch)
                    self._observer.lease_acquired(shard, epoch)
                    waiting.discard(shard)
            if not waiting:
                log.info("shard leases taken", shards=shards.describe(), epochs=self._fence.held)
                return
            holders = [h for h in await self._leases.holders(sorted(waiting)) if h.expires_at > now]
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
        """Extend every lease held; raise :class:`LeaseLost` if one was taken over."""
        held = self._fence.held
        try:
            kept = await self._leases.renew(self._fence.owner, held, self._clock.now(), self._ttl_s)
        except StorageError as exc:
            # The fence still guards every write; try again at the next beat.
            log.warning("shard leases not renewed", error=str(exc))
            return
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
