"""GeminiLLM driven through the real google-genai SDK against the fake Gemini server."""

from __future__ import annotations

import json
import math
import re
import socket
from typing import Any

import pytest

from vivy.errors import ConfigError, LLMError, LLMInvalidOutput, LLMUnavailable
from vivy.llm.gemini import (
    GeminiConfig,
    GeminiLLM,
    gemini_key_from_env,
    gemini_response_schema,
)
from vivy.llm.port import ChatTurn, EmbeddingTask, ModelTier
from vivy.llm.prompts import (
    CHAT_PERSONA,
    NOTE_PROFILES_SYSTEM,
    NOTE_SYSTEM,
    chat_request,
    cluster_request,
    consolidation_request,
    note_request,
)
from vivy.llm.retry import Backoff
from vivy.llm.schemas import (
    AddFact,
    ClusterDraft,
    ClusterInput,
    ConversationDraft,
    FactView,
    InvalidateFact,
    MemberFacts,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperations,
    TranscriptLine,
)
from vivy_lab.fakes.gemini import (
    FakeGemini,
    answer,
    conversation_answer,
    embeddings,
    error,
    prompt_blocked,
    safety_block,
    slow,
    text_answer,
)

pytestmark = pytest.mark.anyio

NOTE = {
    "title": "Elden Ring co-op night",
    "summary": "Alex and Sam planned a co-op session.",
    "topics": ["elden ring"],
    "decisions": ["Play on Saturday"],
    "open_questions": [],
    "entities": ["Elden Ring"],
}

LINES = (
    TranscriptLine(1, "Alex", "Anyone up for Elden Ring?", 1_771_869_600.0),
    TranscriptLine(2, "Sam", "Let's play on Saturday", 1_771_869_660.0),
)


def gemini(fake: FakeGemini, *, attempts: int = 3, timeout_s: float = 5.0) -> GeminiLLM:
    """A GeminiLLM pointed at ``fake`` with zero backoff."""
    config = GeminiConfig(
        api_key="test-key",
        base_url=fake.base_url,
        timeout_s=timeout_s,
        backoff=Backoff(base_s=0.0, cap_s=0.0, max_attempts=attempts),
    )
    return GeminiLLM(config)


def note_payload() -> NoteInput:
    """A two-line conversation to write up."""
    return NoteInput(guild_id=1, channel_id=10, channel_name="gaming", lines=LINES)


def wire(node: dict[str, Any], camel: str) -> Any:
    """``node[camel]``, or its snake_case spelling (the SDK sends proto field names)."""
    if camel in node:
        return node[camel]
    return node[re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()]


def generation_config(body: dict[str, Any]) -> dict[str, Any]:
    """The generationConfig of a recorded generateContent body."""
    config: dict[str, Any] = body["generationConfig"]
    return config


async def test_generate_returns_validated_note_with_usage(fake_gemini: FakeGemini) -> None:
    """A valid JSON answer comes back parsed, with token usage and the flash model name."""
    fake_gemini.script_generate(answer(NOTE, prompt_tokens=120, output_tokens=40))
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(note_request(note_payload()))
    assert result.value == ConversationDraft.model_validate(NOTE)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (120, 40)
    assert result.model == "gemini-2.0-flash"
    assert result.quality == "gemini"


async def test_generate_request_carries_schema_system_and_key(fake_gemini: FakeGemini) -> None:
    """The request names the model, asks for JSON with a schema and sends the API key."""
    fake_gemini.script_generate(answer(NOTE))
    async with gemini(fake_gemini) as llm:
        await llm.generate(note_request(note_payload()))
    (sent,) = fake_gemini.requests
    assert (sent.model, sent.method) == ("gemini-2.0-flash", "generateContent")
    config = generation_config(sent.body)
    assert config["responseMimeType"] == "application/json"
    schema = config["responseSchema"]
    assert set(schema["properties"]) == set(ConversationDraft.model_fields)
    assert wire(schema["properties"]["title"], "maxLength") == 80
    assert wire(schema, "propertyOrdering")[:2] == ["title", "summary"]
    assert sent.body["systemInstruction"]["parts"][0]["text"] == NOTE_SYSTEM
    assert "Let's play on Saturday" in sent.body["contents"][0]["parts"][0]["text"]
    assert sent.headers["x-goog-api-key"] == "test-key"


async def test_note_call_parses_members_profile_operations(fake_gemini: FakeGemini) -> None:
    """The note call's schema asks for per-member operations, and the answer carries them."""
    ops = [
        {"op": "invalidate", "fact_id": 4, "reason": "moved"},
        {"op": "add", "section": "bio", "text": "Lives in Oslo", "note_id": None, "evidence": ""},
        {"op": "keep", "fact_id": 5},
    ]
    fake_gemini.script_generate(conversation_answer(NOTE, {1: ops, 2: []}))
    members = (
        MemberFacts(1, "Alex", (FactView(4, "bio", "Lives in Bergen", "s"),)),
        MemberFacts(2, "Sam", ()),
    )
    payload = NoteInput(1, 10, "gaming", LINES, members)
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(note_request(payload))
    assert [p.user_id for p in result.value.profiles] == [1, 2]
    first = result.value.profiles[0].operations
    assert [op.op for op in first] == ["invalidate", "add", "keep"]
    assert result.value.title == NOTE["title"]
    (sent,) = fake_gemini.requests
    schema = generation_config(sent.body)["responseSchema"]
    entry = schema["properties"]["profiles"]["items"]
    assert set(entry["properties"]) == {"user_id", "operations"}
    assert len(wire(entry["properties"]["operations"]["items"], "anyOf")) == 4
    assert sent.body["systemInstruction"]["parts"][0]["text"] == NOTE_PROFILES_SYSTEM


async def test_tokens_of_refused_attempts_count_toward_the_call(fake_gemini: FakeGemini) -> None:
    """An answer refused and retried still cost tokens; the accepted usage includes them."""
    fake_gemini.script_generate(
        text_answer("not json", prompt_tokens=100, output_tokens=5),
        answer(NOTE, prompt_tokens=120, output_tokens=40),
    )
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(note_request(note_payload()))
    assert (result.usage.input_tokens, result.usage.output_tokens) == (220, 45)


async def test_pro_tier_parses_profile_operations(fake_gemini: FakeGemini) -> None:
    """A consolidation goes to the pro model and its discriminated union parses."""
    operations = {
        "operations": [
            {"op": "invalidate", "fact_id": 3, "reason": "moved"},
            {"op": "add", "section": "bio", "text": "Lives in Denver", "note_id": 9},
        ]
    }
    fake_gemini.script_generate(answer(operations))
    payload = ProfileInput(
        user_id=1,
        user_name="Alex",
        facts=(FactView(3, "bio", "Lives in Austin", "Gaming, Feb 23"),),
        notes=(NoteView(9, "Move", "Alex moved", "2026-02-24", ("Alex",)),),
    )
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(consolidation_request(payload))
    assert fake_gemini.requests[0].model == "gemini-2.5-pro"
    assert result.value.operations == [
        InvalidateFact(op="invalidate", fact_id=3, reason="moved"),
        AddFact(op="add", section="bio", text="Lives in Denver", note_id=9),
    ]
    schema = generation_config(fake_gemini.requests[0].body)["responseSchema"]
    variants = wire(schema["properties"]["operations"]["items"], "anyOf")
    assert [variant["properties"]["op"]["enum"] for variant in variants] == [
        ["add"],
        ["merge"],
        ["invalidate"],
        ["keep"],
    ]


async def test_rate_limit_and_server_error_are_retried(fake_gemini: FakeGemini) -> None:
    """A 429 and a 500 are retried, and the third attempt's answer is returned."""
    fake_gemini.script_generate(error(429), error(500), answer(NOTE))
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(note_request(note_payload()))
    assert result.value.title == NOTE["title"]
    assert len(fake_gemini.requests) == 3


async def test_unavailable_after_last_attempt_and_sdk_does_not_retry(
    fake_gemini: FakeGemini,
) -> None:
    """Three 503s give LLMUnavailable after exactly three requests: only Vivy retries."""
    fake_gemini.script_generate(error(503), error(503), error(503), answer(NOTE))
    async with gemini(fake_gemini, attempts=3) as llm:
        with pytest.raises(LLMUnavailable, match="503"):
            await llm.generate(note_request(note_payload()))
    assert len(fake_gemini.requests) == 3


async def test_client_error_is_not_retried(fake_gemini: FakeGemini) -> None:
    """A 400 raises a plain LLMError at once, without a second request."""
    fake_gemini.script_generate(error(400, "bad request"), answer(NOTE))
    async with gemini(fake_gemini) as llm:
        with pytest.raises(LLMError) as caught:
            await llm.generate(note_request(note_payload()))
    assert not isinstance(caught.value, LLMUnavailable | LLMInvalidOutput)
    assert len(fake_gemini.requests) == 1


async def test_unparsable_answer_is_retried_then_invalid_output(fake_gemini: FakeGemini) -> None:
    """Text that is not JSON is retried and finally raises LLMInvalidOutput."""
    fake_gemini.script_generate(*[text_answer("Sure! Here is your note.")] * 3)
    async with gemini(fake_gemini, attempts=3) as llm:
        with pytest.raises(LLMInvalidOutput, match="ConversationDraft"):
            await llm.generate(note_request(note_payload()))
    assert len(fake_gemini.requests) == 3


async def test_schema_violation_is_retried(fake_gemini: FakeGemini) -> None:
    """A title over 80 characters and an extra field fail validation; the retry succeeds."""
    too_long = {**NOTE, "title": "x" * 81}
    extra = {**NOTE, "mood": "happy"}
    fake_gemini.script_generate(answer(too_long), answer(extra), answer(NOTE))
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(note_request(note_payload()))
    assert result.value.title == NOTE["title"]
    assert len(fake_gemini.requests) == 3


async def test_safety_blocks_are_invalid_output(fake_gemini: FakeGemini) -> None:
    """A SAFETY finish reason and a blocked prompt both end in LLMInvalidOutput."""
    fake_gemini.script_generate(safety_block(), prompt_blocked())
    async with gemini(fake_gemini, attempts=2) as llm:
        with pytest.raises(LLMInvalidOutput, match="blocked the prompt"):
            await llm.generate(note_request(note_payload()))
    assert len(fake_gemini.requests) == 2


async def test_fenced_json_is_accepted(fake_gemini: FakeGemini) -> None:
    """JSON wrapped in a Markdown code fence still parses."""
    fake_gemini.script_generate(text_answer(f"```json\n{json.dumps(NOTE)}\n```"))
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(note_request(note_payload()))
    assert result.value.summary == NOTE["summary"]


async def test_slow_answer_times_out_as_unavailable(fake_gemini: FakeGemini) -> None:
    """An answer slower than the time-out raises LLMUnavailable; the retry gets through."""
    fake_gemini.script_generate(slow(answer(NOTE), 5.0), answer(NOTE))
    async with gemini(fake_gemini, attempts=1, timeout_s=0.2) as llm:
        with pytest.raises(LLMUnavailable, match="timed out"):
            await llm.generate(note_request(note_payload()))
        result = await llm.generate(note_request(note_payload()))
    assert result.value.title == NOTE["title"]


async def test_unreachable_server_is_unavailable() -> None:
    """A refused connection is translated into LLMUnavailable."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = GeminiConfig(
        api_key="k",
        base_url=f"http://127.0.0.1:{port}/",
        backoff=Backoff(0.0, 0.0, 2),
    )
    async with GeminiLLM(config) as llm:
        with pytest.raises(LLMUnavailable, match="unreachable"):
            await llm.generate(note_request(note_payload()))


async def test_cluster_request_uses_pro_model(fake_gemini: FakeGemini) -> None:
    """Topic clustering goes to the pro model and returns cluster drafts."""
    clusters = {"clusters": [{"title": "Games", "summary": "Games.", "source_note_ids": [4, 5]}]}
    fake_gemini.script_generate(answer(clusters))
    notes = (
        NoteView(4, "Elden Ring", "Bosses", "2026-02-23", ("Alex",)),
        NoteView(5, "Elden Ring builds", "Builds", "2026-02-23", ("Sam",)),
    )
    async with gemini(fake_gemini) as llm:
        result = await llm.generate(cluster_request(ClusterInput(1, "2026-02-23", notes)))
    assert result.model == "gemini-2.5-pro"
    assert result.value == ClusterDraft.model_validate(clusters)


async def test_embed_batches_by_100_with_task_and_dimension(fake_gemini: FakeGemini) -> None:
    """250 texts go out as batches of 100, 100 and 50 with the document task type."""
    texts = [f"note number {index}" for index in range(250)]
    async with gemini(fake_gemini) as llm:
        vectors = await llm.embed(texts, EmbeddingTask.DOCUMENT)
    sizes = [len(sent.body["requests"]) for sent in fake_gemini.requests]
    assert sizes == [100, 100, 50]
    first = fake_gemini.requests[0]
    assert (first.model, first.method) == ("gemini-embedding-001", "batchEmbedContents")
    item = first.body["requests"][0]
    assert item["taskType"] == "RETRIEVAL_DOCUMENT"
    assert item["outputDimensionality"] == 768
    assert item["content"]["parts"][0]["text"] == "note number 0"
    assert len(vectors) == 250
    assert all(len(vector) == 768 for vector in vectors)
    assert all(math.isclose(math.fsum(v * v for v in vector), 1.0) for vector in vectors)


async def test_embed_keeps_order_and_uses_query_task(fake_gemini: FakeGemini) -> None:
    """Query embeddings use RETRIEVAL_QUERY and come back in input order, normalised."""
    fake_gemini.script_embed(embeddings([[3.0, 4.0] + [0.0] * 766, [0.0] * 767 + [2.0]]))
    async with gemini(fake_gemini) as llm:
        vectors = await llm.embed(["first", "second"], EmbeddingTask.QUERY)
    assert fake_gemini.requests[0].body["requests"][1]["taskType"] == "RETRIEVAL_QUERY"
    assert vectors[0][:2] == pytest.approx([0.6, 0.8])
    assert vectors[1][-1] == pytest.approx(1.0)


async def test_embed_wrong_dimension_is_invalid_output(fake_gemini: FakeGemini) -> None:
    """A vector of the wrong length is invalid output, never silently stored."""
    fake_gemini.script_embed(embeddings([[1.0, 2.0, 3.0]]))
    async with gemini(fake_gemini, attempts=1) as llm:
        with pytest.raises(LLMInvalidOutput, match="3-dimensional"):
            await llm.embed(["text"], EmbeddingTask.DOCUMENT)


async def test_embed_retries_rate_limit(fake_gemini: FakeGemini) -> None:
    """A 429 on an embedding batch is retried and the batch succeeds."""
    fake_gemini.script_embed(error(429))
    async with gemini(fake_gemini) as llm:
        vectors = await llm.embed(["a", "b"], EmbeddingTask.DOCUMENT)
    assert len(vectors) == 2
    assert len(fake_gemini.requests) == 2


async def test_embed_of_nothing_sends_nothing(fake_gemini: FakeGemini) -> None:
    """An empty list of texts needs no request."""
    async with gemini(fake_gemini) as llm:
        assert await llm.embed([], EmbeddingTask.DOCUMENT) == []
    assert fake_gemini.requests == []


async def test_chat_sends_persona_memory_and_named_turns(fake_gemini: FakeGemini) -> None:
    """Chat puts memory in the system instruction and prefixes users' turns with names."""
    fake_gemini.script_generate(text_answer("  You live in Austin, Alex.  "))
    memory = (
        '<background_facts>\n<user name="Alex">\n- Lives in Austin\n</user>\n</background_facts>'
    )
    request = chat_request(
        [
            ChatTurn("user", "Alex", "hi Vivy"),
            ChatTurn("model", "Vivy", "Hello!"),
            ChatTurn("user", "Alex", "where do I live?"),
        ],
        memory,
    )
    async with gemini(fake_gemini) as llm:
        reply = await llm.chat(request)
    assert reply.text == "You live in Austin, Alex."
    assert reply.model == "gemini-2.0-flash"
    sent = fake_gemini.requests[0].body
    system = sent["systemInstruction"]["parts"][0]["text"]
    assert system.startswith(CHAT_PERSONA) and system.endswith(memory)
    assert [(c["role"], c["parts"][0]["text"]) for c in sent["contents"]] == [
        ("user", "Alex: hi Vivy"),
        ("model", "Hello!"),
        ("user", "Alex: where do I live?"),
    ]
    assert "responseSchema" not in sent.get("generationConfig", {})


async def test_empty_chat_answer_is_invalid_output(fake_gemini: FakeGemini) -> None:
    """A blank chat answer is invalid output after its attempts."""
    fake_gemini.script_generate(text_answer("   "), text_answer(""))
    async with gemini(fake_gemini, attempts=2) as llm:
        with pytest.raises(LLMInvalidOutput, match="empty"):
            await llm.chat(chat_request([ChatTurn("user", "Alex", "hello")]))


def test_response_schema_is_gemini_compatible() -> None:
    """The converted schema has no refs, oneOf, const, titles or additionalProperties."""
    schema = gemini_response_schema(ProfileOperations)
    text = repr(schema)
    for banned in ("$ref", "$defs", "oneOf", "const", "additionalProperties", "title"):
        assert banned not in text
    add = schema["properties"]["operations"]["items"]["anyOf"][0]
    assert add["properties"]["note_id"] == {"type": "integer", "nullable": True}
    assert add["required"] == ["op", "section", "text", "note_id", "evidence"]
    assert schema["properties"]["operations"]["maxItems"] == 40


@pytest.mark.parametrize(
    "change",
    [{"api_key": " "}, {"timeout_s": 0.0}, {"dimension": 0}, {"embed_batch_size": 101}],
)
def test_config_refuses_unusable_values(change: dict[str, Any]) -> None:
    """A blank key, a zero time-out or dimension and oversized batches are config errors."""
    with pytest.raises(ConfigError):
        GeminiConfig(**{"api_key": "k", **change})


def test_key_resolution_prefers_memory_token() -> None:
    """MEMORY_GEMINI_TOKEN wins over GEMINI_API_KEY; blank values count as unset."""
    assert gemini_key_from_env({"MEMORY_GEMINI_TOKEN": "a", "GEMINI_API_KEY": "b"}) == "a"
    assert gemini_key_from_env({"MEMORY_GEMINI_TOKEN": "  ", "GEMINI_API_KEY": "b"}) == "b"
    assert gemini_key_from_env({}) is None


async def test_config_hides_key_and_picks_models() -> None:
    """The config's repr never shows the key, and tiers map to the configured models."""
    config = GeminiConfig(api_key="secret-key", flash_model="f", pro_model="p")
    assert "secret-key" not in repr(config)
    async with GeminiLLM(config) as llm:
        assert llm.model_for(ModelTier.FLASH) == "f"
        assert llm.model_for(ModelTier.PRO) == "p"
        assert (llm.dimension, llm.embedding_model) == (768, "gemini-embedding-001")
