"""429 answers: the wait the service asks for is read and honoured before the next attempt."""

from __future__ import annotations

import random

import pytest
import trio
from trio.testing import MockClock

from vivy.errors import LLMUnavailable
from vivy.llm.prompts import note_request
from vivy.llm.retry import (
    MAX_RETRY_AFTER_S,
    Backoff,
    LLMRateLimited,
    call_with_retries,
    retry_after,
)
from vivy_lab.fakes.gemini import FakeGemini, Reply, answer

from .test_gemini import NOTE, gemini, note_payload

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def quota_error(delay: str) -> Reply:
    """A Gemini-style 429 whose details carry a RetryInfo asking for ``delay``."""
    return Reply(
        status=429,
        body={
            "error": {
                "code": 429,
                "message": "quota exceeded",
                "status": "RESOURCE_EXHAUSTED",
                "details": [{"@type": RETRY_INFO, "retryDelay": delay}],
            }
        },
    )


@pytest.mark.parametrize(
    ("headers", "body", "wait"),
    [
        ({"Retry-After": "7"}, None, 7.0),
        ({"retry-after": " 2.5 "}, None, 2.5),
        (
            {
                "Retry-After": "Mon, 23 Nov 2026 18:00:30 GMT",
                "Date": "Mon, 23 Nov 2026 18:00:00 GMT",
            },
            None,
            30.0,
        ),
        ({"Retry-After": "Mon, 23 Nov 2026 18:00:30 GMT"}, None, None),
        ({}, {"error": {"details": [{"@type": RETRY_INFO, "retryDelay": "31s"}]}}, 31.0),
        ({"Retry-After": "4"}, {"error": {"details": [{"retryDelay": "31s"}]}}, 4.0),
        ({"Retry-After": "soon"}, {"error": {"details": "none"}}, None),
        ({}, None, None),
    ],
)
def test_retry_after_reads_header_then_retry_info(
    headers: dict[str, str], body: object, wait: float | None
) -> None:
    """Seconds or an HTTP date (against the response's Date) in the header, else RetryInfo."""
    assert retry_after(headers, body) == wait


class RateLimited:
    """An attempt function that answers 429 with the scripted waits, then ``"done"``."""

    def __init__(self, *waits: float | None) -> None:
        self.waits = list(waits)
        self.calls: list[float] = []

    async def __call__(self) -> str:
        self.calls.append(trio.current_time())
        if self.waits:
            raise LLMRateLimited("429", retry_after_s=self.waits.pop(0))
        return "done"


def test_next_attempt_waits_what_the_service_asked_for() -> None:
    """With no backoff of its own, the retries come exactly 20 s, then 0 s, then the cap later."""
    attempt = RateLimited(20.0, None, 10_000.0)

    async def main() -> str:
        return await call_with_retries(
            attempt,
            Backoff(base_s=0.0, cap_s=0.0, max_attempts=4),
            random.Random(1),
            operation="note",
        )

    assert trio.run(main, clock=MockClock(autojump_threshold=0)) == "done"
    start = attempt.calls[0]
    assert [t - start for t in attempt.calls] == [0.0, 20.0, 20.0, 20.0 + MAX_RETRY_AFTER_S]


@pytest.mark.anyio
async def test_gemini_429_carries_the_requested_wait(fake_gemini: FakeGemini) -> None:
    """The client turns a 429 with RetryInfo into LLMRateLimited naming the wait."""
    fake_gemini.script_generate(quota_error("2s"), answer(NOTE))
    async with gemini(fake_gemini, attempts=1) as llm:
        with pytest.raises(LLMRateLimited) as caught:
            await llm.generate(note_request(note_payload()))
    assert caught.value.retry_after_s == 2.0
    assert isinstance(caught.value, LLMUnavailable)
