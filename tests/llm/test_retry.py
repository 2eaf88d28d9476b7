"""The retry policy: a pure backoff schedule, error classification and the retry loop."""

from __future__ import annotations

import random

import pytest
import trio
from trio.testing import MockClock

from vivy.errors import ConfigError, LLMError, LLMInvalidOutput, LLMUnavailable
from vivy.llm.retry import Backoff, call_with_retries, is_retryable, retryable_status


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, object]]:
    """Trio with a virtual clock, so retry waits take no real time and are exact."""
    return ("trio", {"clock": MockClock(autojump_threshold=0)})


@pytest.mark.parametrize(
    ("attempt", "ceiling"),
    [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 10.0), (60, 10.0)],
)
def test_ceiling_doubles_up_to_the_cap(attempt: int, ceiling: float) -> None:
    """The longest wait doubles per failed attempt and stops at the cap."""
    assert Backoff(base_s=0.5, cap_s=10.0).ceiling(attempt) == ceiling


def test_delay_is_full_jitter_within_the_ceiling() -> None:
    """Every delay lies in [0, ceiling] and the draws actually spread out."""
    backoff = Backoff(base_s=1.0, cap_s=30.0)
    rng = random.Random(7)
    draws = [backoff.delay(3, rng) for _ in range(500)]
    assert all(0.0 <= draw <= 4.0 for draw in draws)
    assert min(draws) < 0.5 and max(draws) > 3.5


def test_delay_is_reproducible_from_the_seed() -> None:
    """The same seed gives the same schedule, which is what makes retries testable."""
    backoff = Backoff()
    first = [backoff.delay(n, random.Random(42)) for n in range(1, 5)]
    again = [backoff.delay(n, random.Random(42)) for n in range(1, 5)]
    assert first == again
    assert first[0] == random.Random(42).uniform(0.0, 1.0)


def test_invalid_backoff_is_refused() -> None:
    """Negative delays, zero attempts and attempt numbers below 1 are errors."""
    with pytest.raises(ConfigError):
        Backoff(base_s=-1.0)
    with pytest.raises(ConfigError):
        Backoff(max_attempts=0)
    with pytest.raises(ValueError):
        Backoff().ceiling(0)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (408, True),
        (429, True),
        (500, True),
        (503, True),
        (599, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (200, False),
    ],
)
def test_retryable_statuses(status: int, retryable: bool) -> None:
    """Only time-outs, rate limits and server errors are worth retrying."""
    assert retryable_status(status) is retryable


def test_error_classification() -> None:
    """Unavailability and invalid output are retried; other LLM errors are final."""
    assert is_retryable(LLMUnavailable("down"))
    assert is_retryable(LLMInvalidOutput("garbled"))
    assert not is_retryable(LLMError("bad request"))
    assert not is_retryable(ValueError("bug"))


class Flaky:
    """An attempt function that fails with scripted errors, then returns ``"done"``."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls: list[float] = []

    async def __call__(self) -> str:
        self.calls.append(trio.current_time())
        if self.errors:
            raise self.errors.pop(0)
        return "done"


@pytest.mark.anyio
async def test_retries_wait_the_backoff_schedule_exactly() -> None:
    """Attempts happen at the virtual times the seeded backoff schedule says."""
    backoff = Backoff(base_s=1.0, cap_s=30.0, max_attempts=4)
    flaky = Flaky(LLMUnavailable("429"), LLMInvalidOutput("bad json"), LLMUnavailable("503"))
    start = trio.current_time()
    result = await call_with_retries(flaky, backoff, random.Random(3), operation="note")
    expected = random.Random(3)
    waits = [backoff.delay(n, expected) for n in (1, 2, 3)]
    assert result == "done"
    assert flaky.calls == [
        start,
        start + waits[0],
        start + waits[0] + waits[1],
        start + waits[0] + waits[1] + waits[2],
    ]


@pytest.mark.anyio
async def test_last_error_is_raised_after_max_attempts() -> None:
    """After max_attempts failures the last error propagates and no more calls are made."""
    flaky = Flaky(LLMUnavailable("one"), LLMUnavailable("two"), LLMUnavailable("three"))
    with pytest.raises(LLMUnavailable, match="two"):
        await call_with_retries(flaky, Backoff(max_attempts=2), random.Random(0), operation="x")
    assert len(flaky.calls) == 2


@pytest.mark.anyio
async def test_final_errors_are_not_retried() -> None:
    """A non-retryable LLMError is raised at once without waiting."""
    flaky = Flaky(LLMError("400 bad request"))
    start = trio.current_time()
    with pytest.raises(LLMError, match="400"):
        await call_with_retries(flaky, Backoff(), random.Random(0), operation="x")
    assert flaky.calls == [start]
    assert trio.current_time() == start
