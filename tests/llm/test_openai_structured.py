"""Structured answers from OpenAI-compatible servers: modes learned, prose read, one repair."""

from __future__ import annotations

import json

import pytest

from tests.llm.conftest import NOTE, PAYLOAD, openai_llm
from vivy.errors import LLMError
from vivy.llm.openai_compat import OpenAIConfig, OpenAILLM
from vivy.llm.prompts import note_request
from vivy.llm.retry import Backoff
from vivy.llm.schemas import ConversationDraft
from vivy.llm.structured import StructuredMode, StructuredModes
from vivy_lab.fakes.openai import FakeOpenAI, answer, text_answer

pytestmark = pytest.mark.anyio


async def test_schema_output_is_validated_with_usage(fake: FakeOpenAI) -> None:
    """The first request asks for the pydantic schema as ``json_schema``; the answer is parsed."""
    fake.script_chat(answer(NOTE, prompt_tokens=120, completion_tokens=40))
    async with openai_llm(fake) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert isinstance(result.value, ConversationDraft)
    assert result.value.title == "Elden Ring co-op night"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (120, 40)
    assert (result.model, result.quality) == ("qwen2.5:7b", "openai")
    (sent,) = fake.calls("chat")
    assert sent.body["model"] == "qwen2.5:7b"
    schema = sent.body["response_format"]["json_schema"]
    assert schema["name"] == "ConversationDraft" and schema["strict"] is False
    assert schema["schema"]["additionalProperties"] is False
    assert "title" in schema["schema"]["required"]
    assert sent.system.startswith("You write concise notes") and "JSON Schema" not in sent.system
    assert sent.headers["authorization"] == "Bearer unused"


async def test_a_json_mode_only_server_is_asked_in_json_mode_from_then_on(fake: FakeOpenAI) -> None:
    """A server refusing ``json_schema`` is asked again at once in JSON mode, with the schema
    in the system prompt; the next call goes straight to JSON mode."""
    fake.formats = frozenset({"json_object"})
    modes = StructuredModes()
    config = OpenAIConfig(base_url=fake.base_url, flash_model="m", backoff=Backoff(0, 0, 1))
    async with OpenAILLM(config, modes=modes) as llm:
        first = await llm.generate(note_request(PAYLOAD))
        second = await llm.generate(note_request(PAYLOAD))
    assert first.value == second.value
    assert [r.response_format for r in fake.calls("chat")] == [
        "json_schema",
        "json_object",
        "json_object",
    ]
    assert "matching this JSON Schema" in fake.calls("chat")[1].system
    assert modes.mode(fake.base_url, "m") is StructuredMode.JSON_OBJECT


async def test_a_server_without_formats_gets_the_schema_in_the_prompt(fake: FakeOpenAI) -> None:
    """A server refusing every ``response_format`` ends in prompt mode, and its
    prose-wrapped JSON is accepted."""
    fake.formats = frozenset()
    fake.prose = True
    async with openai_llm(fake, attempts=1) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert result.value.topics
    sent = fake.calls("chat")
    assert [r.response_format for r in sent] == ["json_schema", "json_object", None]
    assert "response_format" not in sent[-1].body


async def test_a_server_ignoring_the_format_is_moved_down(fake: FakeOpenAI) -> None:
    """Prose without any JSON in schema mode shows the server ignores the format: the same
    call is asked again in JSON mode, not repaired."""
    fake.script_chat(text_answer("Alex and Sam will play Elden Ring on Friday."), answer(NOTE))
    async with openai_llm(fake, attempts=1) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert result.value.title == NOTE["title"]
    assert [r.response_format for r in fake.calls("chat")] == ["json_schema", "json_object"]


async def test_prose_wrapped_json_is_accepted(fake: FakeOpenAI) -> None:
    """JSON inside a Markdown fence between sentences is found and validated."""
    fake.script_chat(text_answer(f"Here it is:\n```json\n{json.dumps(NOTE)}\n```\nEnjoy!"))
    async with openai_llm(fake, attempts=1) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert result.value.title == NOTE["title"]


async def test_a_reasoning_block_is_dropped(fake: FakeOpenAI) -> None:
    """A ``<think>`` block before the JSON is not taken for the answer."""
    fake.script_chat(text_answer(f"<think>They want {{a note}}.</think>\n{json.dumps(NOTE)}"))
    async with openai_llm(fake, attempts=1) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert result.value.title == NOTE["title"]


async def test_invalid_json_is_repaired_by_one_retry_quoting_the_error(fake: FakeOpenAI) -> None:
    """An answer failing its schema is followed by one request that carries the answer and
    the validation error; the repaired answer is accepted and both attempts' tokens count."""
    broken = {key: value for key, value in NOTE.items() if key != "title"}
    fake.script_chat(
        answer(broken, prompt_tokens=100, completion_tokens=30),
        answer(NOTE, prompt_tokens=140, completion_tokens=35),
    )
    async with openai_llm(fake, attempts=1) as llm:
        result = await llm.generate(note_request(PAYLOAD))
    assert result.value.title == NOTE["title"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (240, 65)
    repair = fake.calls("chat")[1].body["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert json.loads(repair[2]["content"]) == broken
    assert "does not match ConversationDraft" in repair[3]["content"]
    assert "title" in repair[3]["content"]


async def test_invalid_output_after_the_repair_is_retried_plainly(fake: FakeOpenAI) -> None:
    """The quoting retry happens once per call; after it, attempts start afresh and the last
    failure is raised as invalid output."""
    bad = text_answer(json.dumps({"title": ""}))
    fake.script_chat(bad, bad, bad, bad)
    async with openai_llm(fake, attempts=2) as llm:
        with pytest.raises(LLMError, match="does not match ConversationDraft"):
            await llm.generate(note_request(PAYLOAD))
    sizes = [len(r.body["messages"]) for r in fake.calls("chat")]
    assert sizes == [2, 4, 2]
