"""The openai SDK's errors and answers as Vivy reads them, through OpenAILLM and the fake server."""

from __future__ import annotations

import json
import math

import pytest

from tests.llm.conftest import NOTE, PAYLOAD, openai_llm
from vivy.errors import LLMError, LLMUnavailable
from vivy.llm.port import ModelTier
from vivy.llm.prompts import chat_request, note_request
from vivy.llm.retry import LLMRateLimited
from vivy_lab.fakes.brain import brain_answer
from vivy_lab.fakes.openai import FakeOpenAI, answer, error, slow

pytestmark = pytest.mark.anyio


async def test_429_carries_retry_after_and_is_retried(fake: FakeOpenAI) -> None:
    """A 429's ``Retry-After`` reaches the retry loop; the next attempt succeeds."""
    fake.script_chat(error(429, "slow down", retry_after="7"))
    async with openai_llm(fake, attempts=1) as llm:
        with pytest.raises(LLMRateLimited) as caught:
            await llm.generate(note_request(PAYLOAD))
    assert caught.value.retry_after_s == 7.0
    fake.script_chat(error(429, "slow down", retry_after="0"), error(500), answer(NOTE))
    async with openai_llm(fake, attempts=3) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert result.value.title == NOTE["title"]
    assert len(fake.calls("chat")) == 4


async def test_server_errors_are_retried_until_the_attempts_run_out(fake: FakeOpenAI) -> None:
    """500s are retried; after the last attempt the service is unavailable."""
    fake.script_chat(error(500), error(503), error(502))
    async with openai_llm(fake, attempts=3) as llm:
        with pytest.raises(LLMUnavailable, match="HTTP 502"):
            await llm.generate(note_request(PAYLOAD))
    assert len(fake.calls("chat")) == 3


async def test_a_slow_answer_times_out_as_unavailable(fake: FakeOpenAI) -> None:
    """An answer slower than the time-out is a retryable unavailability, in one line."""
    fake.script_chat(slow(answer(NOTE), 5.0))
    async with openai_llm(fake, attempts=1, timeout_s=0.2) as llm:
        with pytest.raises(LLMUnavailable, match=r"timed out after 0\.2 s"):
            await llm.generate(note_request(PAYLOAD))


async def test_a_client_error_is_not_retried(fake: FakeOpenAI) -> None:
    """A 400 that is not about the format fails at once."""
    fake.script_chat(error(400, "context length exceeded"))
    async with openai_llm(fake) as llm:
        with pytest.raises(LLMError, match="context length exceeded"):
            await llm.generate(note_request(PAYLOAD))
    assert len(fake.calls("chat")) == 1


async def test_an_unknown_model_names_its_setting(fake: FakeOpenAI) -> None:
    """A 404 for the pro model says which variable to change."""
    fake.script_chat(error(404, "model 'qwen2.5:14b' not found"))
    async with openai_llm(fake) as llm:
        with pytest.raises(LLMError, match="set VIVY_OPENAI_PRO_MODEL") as caught:
            await llm.chat(chat_request([], tier=ModelTier.PRO))
    assert "\n" not in str(caught.value)


async def test_usage_is_estimated_when_the_server_reports_none(fake: FakeOpenAI) -> None:
    """Without ``usage`` in the answer, tokens are estimated at four characters a token."""
    fake.usage = False
    async with openai_llm(fake) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    sent = fake.calls("chat")[0]
    expected = math.ceil(len(sent.system) / 4) + math.ceil(len(sent.prompt) / 4)
    answered = json.dumps(brain_answer(sent.system, sent.prompt))
    assert result.usage.input_tokens == expected
    assert result.usage.output_tokens == math.ceil(len(answered) / 4)
