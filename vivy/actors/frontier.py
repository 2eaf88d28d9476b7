"""How far in time the notes are written: the order that makes a replay deterministic.

A member's profile update coalesces the notes that closed before it came due. Live, a note's
model call is over long before its profile update is due; in a replay on virtual time, many
calls are in flight while virtual time runs ahead, so an update could come due while a note
that closed before it is still being written, and which notes ride along would depend on
model latency. :class:`WriteFrontier` closes that gap: the NoteWriter registers each buffer
with its close time when it takes it and releases it when its first attempt ends, and a
ProfileUpdater waits until no buffer that closed at or before its due time is still being
written. Notes are also committed in close order (:meth:`WriteFrontier.wait_turn`), so their
ids are the same run after run. A buffer whose first attempt failed is released too, so an
outage never holds profile updates back (they then follow live timing, as before).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import anyio

__all__ = ["WriteFrontier"]


class WriteFrontier:
    """Buffers whose note is being written, by close time; see the module docstring."""

    def __init__(self) -> None:
        self._closed_at: dict[int, float] = {}
        self._heap: list[tuple[float, int]] = []  # (closed_at, buffer_id), lazily pruned
        self._changed = anyio.Event()
        #: Called after every :meth:`done` (the importer wakes its waits with it).
        self.on_done: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._closed_at)

    def add(self, buffer_id: int, closed_at: float) -> None:
        """Buffer ``buffer_id``, closed at wall time ``closed_at``, is being written."""
        if buffer_id not in self._closed_at:
            self._closed_at[buffer_id] = closed_at
            heapq.heappush(self._heap, (closed_at, buffer_id))

    def done(self, buffer_id: int) -> None:
        """The first attempt at the buffer's note ended (note, discard or failure)."""
        if self._closed_at.pop(buffer_id, None) is not None:
            self._changed.set()
            self._changed = anyio.Event()
            if self.on_done is not None:
                self.on_done()

    def _first(self) -> tuple[float, int] | None:
        heap = self._heap
        while heap and self._closed_at.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # done already
        return heap[0] if heap else None

    def written_through(self, wall: float) -> bool:
        """Whether every registered buffer that closed at or before ``wall`` is done."""
        first = self._first()
        return first is None or first[0] > wall

    async def wait_at_most(self, count: int) -> None:
        """Wait until at most ``count`` buffers are being written."""
        while len(self._closed_at) > count:
            await self._changed.wait()

    async def wait_turn(self, buffer_id: int) -> None:
        """Wait until no registered buffer closed before ``buffer_id`` (ties: lower id).

        The NoteWriter commits in that order, so note ids follow close times and do not
        depend on which model call answered first. Returns at once for an unknown buffer.
        """
        while buffer_id in self._closed_at:
            first = self._first()
            if first is None or first[1] == buffer_id:
                return
            await self._changed.wait()

    async def wait_written_through(self, wall: float) -> None:
        """Wait until :meth:`written_through` holds for ``wall``; returns at once if it does."""
        while not self.written_through(wall):
            await self._changed.wait()
