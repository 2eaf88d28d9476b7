"""An actor's mailbox: a bounded first-in-first-out queue of items, and a doorbell for timers.

A channel actor wakes once for a whole batch of messages and once when its timer rings. The
mailbox keeps both cheap: queueing an item is a deque append (plus one event when the actor
sleeps), and the actor takes everything queued in one call. A full mailbox makes senders wait
(backpressure); their items go in, in the order they waited, as the actor takes room, and a
new sender never overtakes a waiting one.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio

__all__ = ["Mailbox"]

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Items for one actor, at most ``capacity`` of them queued; see the module docstring."""

    __slots__ = ("_capacity", "_closed", "_items", "_senders", "_sleeper", "rung")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a mailbox holds at least one item")
        self._capacity = capacity
        self._items: deque[T] = deque()
        #: Senders waiting for room, oldest first, each with its item and its wake-up.
        self._senders: deque[tuple[T, anyio.Event]] = deque()
        #: Set while the actor sleeps in :meth:`wait`.
        self._sleeper: anyio.Event | None = None
        self._closed = False
        #: The UTC wall time of the deadline the actor's timer rang for, until the actor
        #: answers it (None while the timer is quiet).
        self.rung: float | None = None

    def __len__(self) -> int:
        """Items queued, not counting those of waiting senders."""
        return len(self._items)

    @property
    def waiting_senders(self) -> int:
        """Senders waiting for room."""
        return len(self._senders)

    @property
    def closed(self) -> bool:
        """Whether the actor has retired; a closed mailbox takes no items."""
        return self._closed

    def put_nowait(self, item: T) -> bool:
        """Queue ``item``; False, queueing nothing, when full or when senders are waiting.

        Raises :class:`anyio.ClosedResourceError` once the mailbox is closed.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if self._senders or len(self._items) >= self._capacity:
            return False
        self._items.append(item)
        self._wake()
        return True

    async def put(self, item: T) -> None:
        """Queue ``item``, waiting behind earlier senders while the mailbox is full."""
        if self.put_nowait(item):
            return
        delivered = anyio.Event()
        entry = (item, delivered)
        self._senders.append(entry)
        try:
            await delivered.wait()
        except BaseException:
            if not delivered.is_set():
                self._senders.remove(entry)
            raise

    def ring(self, at: float) -> None:
        """Tell the actor that its timer for the deadline at wall time ``at`` is due."""
        rung = self.rung
        self.rung = at if rung is None else max(rung, at)
        self._wake()

    async def wait(self) -> None:
        """Sleep until an item is queued or the timer rings (at once if either is so)."""
        while not self._items and self.rung is None:
            self._sleeper = anyio.Event()
            await self._sleeper.wait()

    def take(self, limit: int) -> list[T]:
        """Take up to ``limit`` items, oldest first, and let waiting senders' items in."""
        items = self._items
        if len(items) <= limit:
            batch = list(items)
            items.clear()
        else:
            batch = [items.popleft() for _ in range(limit)]
        senders = self._senders
        while senders and len(items) < self._capacity:
            item, delivered = senders.popleft()
            items.append(item)
            delivered.set()
        return batch

    def requeue(self, items: list[T]) -> None:
        """Put ``items``, taken but not carried out, back at the head in their order: the
        actor's store call failed, and its next incarnation takes them again."""
        self._items.extendleft(reversed(items))

    def abandon(self) -> list[T]:
        """Take every item, queued or of a waiting sender (whose wait ends), oldest first,
        and refuse further items: the actor is gone for good (the app stopped)."""
        items = list(self._items)
        self._items.clear()
        while self._senders:
            item, delivered = self._senders.popleft()
            items.append(item)
            delivered.set()
        self._closed = True
        return items

    def close(self) -> None:
        """Refuse further items (the actor retired). Only an empty mailbox may be closed."""
        if self._items or self._senders:
            raise RuntimeError("a mailbox with queued items cannot be closed")
        self._closed = True

    def _wake(self) -> None:
        sleeper = self._sleeper
        if sleeper is not None:
            self._sleeper = None
            sleeper.set()
