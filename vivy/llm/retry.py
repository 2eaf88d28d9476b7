"""Retry policy for LLM calls: which failures are worth another attempt, and when.

The policy is pure (:class:`Backoff` computes delays from an injected random generator,
:func:`retryable_status` classifies HTTP statuses), so its schedule is tested without
sleeping. :func:`call_with_retries` is the one loop that applies it; it sleeps with
:func:`anyio.sleep`, so trio's ``MockClock`` controls the waits in tests.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

import anyio
import structlog

from vivy.errors import ConfigError, LLMError, LLMInvalidOutput, LLMUnavailable

__all__ = [
    "MAX_RETRY_AFTER_S",
    "RETRYABLE_STATUSES",
    "Backoff",
    "LLMRateLimited",
    "call_with_retries",
    "is_retryable",
    "retry_after",
    "retryable_status",
]

R = TypeVar("R")

#: HTTP statuses that mean "try again later": time-out, rate limit and server errors.
RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 429})

#: Longest server-requested wait honoured before the next attempt (a longer one is capped).
MAX_RETRY_AFTER_S = 300.0

_log = structlog.get_logger(__name__)

_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


class LLMRateLimited(LLMUnavailable):
    """The service answered 429; ``retry_after_s`` is the wait it asked for, if it said.

    :func:`call_with_retries` waits at least that long before the next attempt, so a bulk
    import backs off exactly as much as the quota requires instead of hammering it.
    """

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def retry_after(headers: Mapping[str, str], body: object) -> float | None:
    """The wait a 429 asks for, in seconds: the ``Retry-After`` header, else Google's
    ``RetryInfo.retryDelay`` (``"31s"``) in the error body; ``None`` when neither says.

    ``Retry-After`` may be seconds or an HTTP date; a date is measured from the response's
    own ``Date`` header (no clock is read here), and ignored without one.
    """
    by_name = {k.lower(): v.strip() for k, v in headers.items()}
    header = by_name.get("retry-after")
    if header is not None:
        seconds = _seconds(header, by_name.get("date"))
        if seconds is not None:
            return seconds
    for detail in _details(body):
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and (match := _DELAY.match(delay)):
            return float(match.group(1))
    return None


def _seconds(value: str, date: str | None) -> float | None:
    """A ``Retry-After`` value in seconds, or ``None`` when it cannot be read."""
    try:
        seconds = float(value)
    except ValueError:
        if date is None:
            return None
        try:
            seconds = (parsedate_to_datetime(value) - parsedate_to_datetime(date)).total_seconds()
        except (TypeError, ValueError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _details(body: object) -> list[dict[str, object]]:
    """The ``error.details`` entries of a Google API error body."""
    if not isinstance(body, dict):
        return []
    error = body.get("error", body)
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with full jitter and a cap.

    Attempt ``n`` (1-based) that failed is followed by a wait drawn uniformly from
    ``[0, min(cap_s, base_s * 2 ** (n - 1))]``; at most ``max_attempts`` attempts are made.
    Full jitter spreads the retries of many callers hit by the same outage. Negative delays
    or fewer than one attempt raise :class:`~vivy.errors.ConfigError`.
    """

    base_s: float = 1.0
    cap_s: float = 30.0
    max_attempts: int = 4

    def __post_init__(self) -> None:
        if self.base_s < 0 or self.cap_s < 0:
            raise ConfigError("backoff delays must not be negative")
        if self.max_attempts < 1:
            raise ConfigError("max_attempts must be at least 1")

    def ceiling(self, attempt: int) -> float:
        """The longest wait after failed attempt ``attempt`` (1-based)."""
        if attempt < 1:
            raise ValueError("attempt numbers start at 1")
        exponent = min(attempt - 1, 62)
        return min(self.cap_s, self.base_s * float(2**exponent))

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait after failed attempt ``attempt`` (1-based), drawn from ``rng``."""
        return rng.uniform(0.0, self.ceiling(attempt))


def retryable_status(status: int) -> bool:
    """Whether an HTTP error status is transient (408, 429 or any 5xx)."""
    return status in RETRYABLE_STATUSES or 500 <= status <= 599


def is_retryable(error: BaseException) -> bool:
    """Whether a translated LLM error deserves another attempt.

    Unavailability (time-outs, 408/429/5xx) and invalid output (blocked, empty, unparsable
    or off-schema answers) are retried; any other :class:`LLMError` (a 400, a bad key) is
    not, because repeating the same request cannot fix it.
    """
    return isinstance(error, LLMUnavailable | LLMInvalidOutput)


async def call_with_retries(
    attempt: Callable[[], Awaitable[R]],
    backoff: Backoff,
    rng: random.Random,
    *,
    operation: str,
) -> R:
    """Run ``attempt`` until it succeeds, retrying retryable :class:`LLMError` s.

    ``attempt`` must translate foreign exceptions into :class:`LLMError` first. The last
    error is re-raised once ``backoff.max_attempts`` attempts have failed; a non-retryable
    error is re-raised at once. After a :class:`LLMRateLimited` that names a wait, the next
    attempt comes no sooner than that (capped at :data:`MAX_RETRY_AFTER_S`).
    """
    number = 1
    while True:
        try:
            return await attempt()
        except LLMError as error:
            if not is_retryable(error) or number >= backoff.max_attempts:
                raise
            wait = backoff.delay(number, rng)
            if isinstance(error, LLMRateLimited) and error.retry_after_s is not None:
                wait = max(wait, min(error.retry_after_s, MAX_RETRY_AFTER_S))
            _log.info(
                "llm_retry",
                operation=operation,
                attempt=number,
                error=type(error).__name__,
                detail=str(error),
                wait_s=round(wait, 3),
            )
        await anyio.sleep(wait)
        number += 1
