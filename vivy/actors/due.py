"""A set of keys, each due at a wall time, that a task waits on.

The NoteWriter's work items that failed come back later (backoff) and new ones are due at once;
the router keeps every channel actor's next deadline here. Waiting uses the injected clock's
monotonic deadlines, so trio's MockClock drives both in tests.
"""

from __future__ import annotations

import heapq
import math
import random
from typing import Generic, TypeVar

import anyio

from vivy.clock import Clock
from vivy.llm.retry import Backoff

__all__ = ["DueQueue", "retry_delay"]

K = TypeVar("K")


class DueQueue(Generic[K]):
    """Keys with due times; a key queued twice keeps its earlier time."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._due: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._counter = 0
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return len(self._due)

    def put(self, key: K, due: float) -> None:
        """Queue ``key`` for wall time ``due`` (never blocks).

        Only a time earlier than every queued one wakes the waiting task: channel actors
        re-arm after every batch, nearly always later than some other channel.
        """
        current = self._due.get(key)
        if current is not None and current <= due:
            return
        self._due[key] = due
        self._counter += 1
        heap = self._heap
        if not heap or due < heap[0][0]:
            self._changed.set()
        heapq.heappush(heap, (due, self._counter, key))

    async def get(self) -> K:
        """Wait until some key is due and take it (earliest first)."""
        key, _ = await self.get_due()
        return key

    async def get_due(self) -> tuple[K, float]:
        """Wait until some key is due and take it (earliest first), with its due wall time.

        A key is due once the monotonic clock reaches its deadline: the comparison uses the
        clock the wait itself uses, so the key whose deadline ended the wait is always due.
        """
        while True:
            while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
                heapq.heappop(self._heap)  # superseded entry
            deadline = math.inf
            if self._heap:
                due, _, key = self._heap[0]
                deadline = self._clock.to_monotonic(due)
                if deadline <= self._clock.monotonic():
                    heapq.heappop(self._heap)
                    del self._due[key]
                    return key, due
            self._changed = anyio.Event()
            with anyio.move_on_at(deadline):
                await self._changed.wait()


def retry_delay(backoff: Backoff, attempts: int, rng: random.Random) -> float:
    """Seconds until a failed outbox item is tried again: at least ``base_s``, jittered.

    The floor keeps an outage from turning into a busy loop of retries.
    """
    return backoff.base_s + backoff.delay(attempts, rng)
