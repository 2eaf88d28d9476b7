"""OpenAILLM driven through the real openai SDK against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from vivy.errors import ConfigError, EndpointUnreachable, LLMError, LLMUnavailable
from vivy.llm.openai_compat import OpenAIConfig, OpenAILLM, WrongDimension, check_endpoint
from vivy.llm.port import ChatTurn, EmbeddingTask, ModelTier
from vivy.llm.prompts import chat_request, note_request
from vivy.llm.retry import Backoff, LLMRateLimited
from vivy.llm.schemas import ConversationDraft, NoteInput, TranscriptLine
from vivy.llm.structured import StructuredMode, StructuredModes
from vivy_lab.fakes.brain import brain_answer
from vivy_lab.fakes.openai import FakeOpenAI, answer, embeddings, error, slow, text_answer

pytestmark = pytest.mark.anyio

NOTE: dict[str, Any] = {
    "title": "Elden Ring co-op night",
    "summary": "Alex and Sam planned an Elden Ring co-op session for Friday.",
    "topics": ["Elden Ring"],
    "decisions": ["Play Friday at 8"],
    "open_questions": [],
    "entities": ["Elden Ring"],
}

PAYLOAD = NoteInput(
    1,
    10,
    "gaming",
    (
        TranscriptLine(1, "Alex", "Elden Ring co-op Friday?", 1_771_869_600.0),
        TranscriptLine(2, "Sam", "Yes, let's play Friday at 8", 1_771_869_660.0),
    ),
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server that enforces both structured formats."""
    with FakeOpenAI() as server:
        yield server


def openai_llm(
    server: FakeOpenAI, *, attempts: int = 3, timeout_s: float = 5.0, **changes: Any
) -> OpenAILLM:
    """An OpenAILLM pointed at ``server`` with zero backoff and modes of its own."""
    config = OpenAIConfig(
        base_url=server.base_url,
        flash_model="qwen2.5:7b",
        pro_model="qwen2.5:14b",
        embedding_model="nomic-embed-text",
        timeout_s=timeout_s,
        backoff=Backoff(base_s=0.0, cap_s=0.0, max_attempts=attempts),
        **changes,
    )
    return OpenAILLM(config, modes=StructuredModes())


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


async def test_chat_sends_persona_memory_and_named_turns(fake: FakeOpenAI) -> None:
    """The system message holds persona and memory; users' turns carry their names."""
    fake.script_chat(text_answer("<think>recall</think>  You live in Austin, Alex.  "))
    request = chat_request(
        [ChatTurn("user", "Alex", "where do I live?"), ChatTurn("model", "Vivy", "Hmm?")],
        "<background_facts>\n- Lives in Austin\n</background_facts>",
    )
    async with openai_llm(fake) as llm:
        result = await llm.chat(request)
    assert result.text == "You live in Austin, Alex."
    messages = fake.calls("chat")[0].body["messages"]
    assert messages[0]["role"] == "system" and "<background_facts>" in messages[0]["content"]
    assert messages[1:] == [
        {"role": "user", "content": "Alex: where do I live?"},
        {"role": "assistant", "content": "Hmm?"},
    ]


async def test_an_empty_or_filtered_chat_answer_is_invalid(fake: FakeOpenAI) -> None:
    """Empty text and a content filter stop are invalid output, retried."""
    fake.script_chat(text_answer("  "), text_answer("x", finish_reason="content_filter"))
    async with openai_llm(fake, attempts=2) as llm:
        with pytest.raises(LLMError, match="content_filter"):
            await llm.chat(chat_request([ChatTurn("user", "Alex", "hi")]))


async def test_embeddings_are_normalised_with_prefixes_and_dimensions(fake: FakeOpenAI) -> None:
    """Vectors come back unit length in order; the task's prefix and ``dimensions`` are sent."""
    async with openai_llm(fake, query_prefix="search_query:") as llm:
        vectors = await llm.embed(["where is Alex", " "], EmbeddingTask.QUERY)
    assert [len(v) for v in vectors] == [768, 768]
    assert all(abs(math.fsum(x * x for x in v) - 1.0) < 1e-9 for v in vectors)
    (sent,) = fake.calls("embeddings")
    assert sent.body["input"] == ["search_query: where is Alex", "search_query: (empty)"]
    assert (sent.body["dimensions"], sent.body["encoding_format"]) == (768, "float")


async def test_a_refused_dimensions_parameter_is_dropped_for_good(fake: FakeOpenAI) -> None:
    """A server refusing ``dimensions`` is asked again without it, and not asked with it again."""
    fake.takes_dimensions = False
    async with openai_llm(fake, attempts=1) as llm:
        await llm.embed(["a"], EmbeddingTask.DOCUMENT)
        await llm.embed(["b"], EmbeddingTask.DOCUMENT)
    assert ["dimensions" in r.body for r in fake.calls("embeddings")] == [True, False, False]


async def test_an_embedding_of_the_wrong_dimension_is_one_line_naming_the_setting(
    fake: FakeOpenAI,
) -> None:
    """1024-dimensional vectors against a 768 setting fail at once, naming the variable."""
    fake.dimension = 1024
    async with openai_llm(fake) as llm:
        with pytest.raises(WrongDimension) as caught:
            await llm.embed(["a"], EmbeddingTask.DOCUMENT)
    message = str(caught.value)
    assert message.startswith("VIVY_OPENAI_EMBEDDING_DIMENSION=768 but nomic-embed-text")
    assert "set VIVY_OPENAI_EMBEDDING_DIMENSION=1024" in message and "\n" not in message
    assert len(fake.calls("embeddings")) == 1


async def test_embeddings_retry_a_rate_limit(fake: FakeOpenAI) -> None:
    """A 429 on embeddings is retried like any call."""
    fake.script_embed(error(429, retry_after="0"), embeddings([[3.0, 4.0] + [0.0] * 766]))
    async with openai_llm(fake) as llm:
        (vector,) = await llm.embed(["a"], EmbeddingTask.DOCUMENT)
    assert vector[:2] == [0.6, 0.8]


async def test_the_check_names_an_unreachable_url() -> None:
    """Nothing listening at the URL: one line naming VIVY_OPENAI_BASE_URL."""
    with FakeOpenAI() as server:
        url = server.base_url
    config = OpenAIConfig(base_url=url)
    with pytest.raises(EndpointUnreachable, match=f"VIVY_OPENAI_BASE_URL={url} cannot be"):
        await check_endpoint(config, ["generation"])


async def test_the_check_names_a_model_the_server_lacks(fake: FakeOpenAI) -> None:
    """A listed server without the flash model: the variable, the models it has, the fix."""
    fake.models = ["llama3.2:latest", "nomic-embed-text:latest"]
    ok = OpenAIConfig(
        base_url=fake.base_url,
        flash_model="llama3.2",
        pro_model="llama3.2",
        embedding_model="nomic-embed-text",
    )
    await check_endpoint(ok, ["generation", "embeddings"])
    missing = OpenAIConfig(base_url=fake.base_url, flash_model="qwen2.5:7b")
    with pytest.raises(ConfigError) as caught:
        await check_endpoint(missing, ["generation"])
    assert str(caught.value) == (
        f"VIVY_OPENAI_FLASH_MODEL='qwen2.5:7b' is not served by {fake.base_url} (it serves "
        "llama3.2:latest, nomic-embed-text:latest): pull it there (ollama pull qwen2.5:7b), "
        "or set VIVY_OPENAI_FLASH_MODEL to a model it serves"
    )


async def test_the_check_finds_a_wrong_dimension_and_a_missing_v1(fake: FakeOpenAI) -> None:
    """The embedding probe compares the dimension; a URL without /v1 is named."""
    fake.dimension = 384
    config = OpenAIConfig(base_url=fake.base_url, embedding_model="all-minilm")
    with pytest.raises(ConfigError, match="set VIVY_OPENAI_EMBEDDING_DIMENSION=384"):
        await check_endpoint(config, ["embeddings"])
    bare = OpenAIConfig(base_url=fake.base_url.removesuffix("/v1"))
    with pytest.raises(ConfigError, match="servers answer under /v1"):
        await check_endpoint(bare, ["generation"])
