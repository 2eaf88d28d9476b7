"""Waiting out a database that went away: retry with backoff, and say so every few seconds.

A restart, a failover, terminated backends or a partition make storage calls fail for a while;
none of them is a reason for a process to exit. The storage layer raises
:class:`~vivy.errors.DatabaseUnavailable` for exactly these (a lost or refused connection, a
server shutting down, a missed client-side deadline, SQLite's "database is locked"); every
other :class:`~vivy.errors.StorageError` (a read-only file, a full disk, a schema mismatch, a
constraint violation) no wait cures, so it is raised at once. An actor whose call failed with
:class:`~vivy.errors.DatabaseUnavailable` waits and tries again: the first retry after
:data:`FIRST_DELAY_S`, doubling up to :data:`MAX_DELAY_S`, so work resumes within a few seconds
of the database coming back. One warning goes out at the first failure and then once per
:data:`LOG_EVERY_S` of waiting, and one line when the database answers again. Times are read
from :func:`anyio.current_time`, the monotonic time of Vivy's :class:`~vivy.clock.Clock`
(trio's MockClock in tests). One :class:`Outage` may serve many callers (the router's for all
its channel actors): the warnings stay one every few seconds however many fail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import structlog

from vivy.errors import DatabaseUnavailable

__all__ = ["FIRST_DELAY_S", "LOG_EVERY_S", "MAX_DELAY_S", "Outage", "until_stored"]

T = TypeVar("T")

log = structlog.get_logger(__name__)

#: Seconds before the first retry of a failed call.
FIRST_DELAY_S = 0.5

#: Longest wait between retries.
MAX_DELAY_S = 5.0

#: Seconds of waiting between two warnings of one outage.
LOG_EVERY_S = 5.0


class Outage:
    """One caller's run of failed storage calls: the next delay and when to warn again."""

    def __init__(self, what: str) -> None:
        self.what = what
        #: Failed calls since the database last answered.
        self.failures = 0
        self._since = 0.0
        self._logged_at = 0.0
        self._delay_s = FIRST_DELAY_S

    def failed(self, error: BaseException) -> float:
        """Count a failed call (warning when one is due); returns the seconds to wait before
        the next try."""
        now = anyio.current_time()
        if self.failures == 0:
            self._since = now
        if self.failures == 0 or now - self._logged_at >= LOG_EVERY_S:
            log.warning(
                "database unavailable; retrying",
                what=self.what,
                error=str(error),
                waited_s=round(now - self._since, 1),
            )
            self._logged_at = now
        self.failures += 1
        delay = self._delay_s
        self._delay_s = min(self._delay_s * 2, MAX_DELAY_S)
        return delay

    def recovered(self) -> None:
        """The database answered: log it if calls had failed, and start afresh."""
        if self.failures:
            waited = anyio.current_time() - self._since
            log.info("database available again", what=self.what, waited_s=round(waited, 1))
        self.failures = 0
        self._delay_s = FIRST_DELAY_S


async def until_stored(call: Callable[[], Awaitable[T]], *, what: str) -> T:
    """``await call()``, retried with backoff while it raises :class:`DatabaseUnavailable`;
    any other error (a permanent storage error included) is raised at once. ``what`` names
    the call in the log."""
    outage = Outage(what)
    while True:
        try:
            result = await call()
        except DatabaseUnavailable as exc:
            await anyio.sleep(outage.failed(exc))
            continue
        outage.recovered()
        return result
