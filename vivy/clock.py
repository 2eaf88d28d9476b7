"""The one time source of Vivy.

Monotonic time comes from :func:`anyio.current_time`, which trio's ``MockClock`` controls in
tests; UTC wall time is derived from it through a fixed origin taken once at start-up. Every
component reads time here and nowhere else, so virtual time drives the whole system.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio

__all__ = ["Clock", "parse_utc", "system_now"]


@dataclass(frozen=True, slots=True)
class Clock:
    """Maps the event loop's monotonic clock onto UTC wall time.

    ``wall_origin`` is the UTC time (seconds since the epoch) that corresponded to the
    monotonic time ``mono_origin``. Create it inside the event loop: with :meth:`wall` at an
    entry point that runs on the system's time, with :meth:`starting_at` on virtual time.
    """

    wall_origin: float
    mono_origin: float

    @classmethod
    def starting_at(cls, wall: float) -> Clock:
        """A clock whose wall time is ``wall`` (UTC epoch seconds) right now."""
        return cls(wall_origin=wall, mono_origin=anyio.current_time())

    @classmethod
    def wall(cls) -> Clock:
        """A clock reading the system's UTC time right now: an entry point's one wall read."""
        return cls.starting_at(system_now())

    def monotonic(self) -> float:
        """The event loop's monotonic time."""
        return anyio.current_time()

    def now(self) -> float:
        """The current UTC wall time in epoch seconds."""
        return self.wall_origin + (anyio.current_time() - self.mono_origin)

    def to_monotonic(self, wall: float) -> float:
        """The monotonic instant at which wall time ``wall`` is reached."""
        return self.mono_origin + (wall - self.wall_origin)


def system_now() -> float:
    """The system's UTC wall time in epoch seconds.

    Only an entry point reads it, once: to start a :class:`Clock`, or to stamp a one-shot
    command that runs outside an event loop.
    """
    return time.time()


def parse_utc(text: str) -> float:
    """Epoch seconds for ISO-8601 text with an offset; naive text is taken as UTC."""
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
