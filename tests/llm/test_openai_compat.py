"""OpenAILLM driven through the real openai SDK against the fake OpenAI-compatible server."""

from __future__ import annotations

import math

import pytest

from tests.llm.conftest import openai_llm
from vivy.errors import ConfigError, EndpointUnreachable, LLMError, LLMInvalidOutput
from vivy.llm.openai_compat import OpenAIConfig, WrongDimension, check_endpoint
from vivy.llm.port import ChatTurn, EmbeddingTask
from vivy.llm.prompts import chat_request
from vivy_lab.fakes.openai import FakeOpenAI, Reply, embeddings, error, text_answer

pytestmark = pytest.mark.anyio


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


async def test_an_embeddings_answer_that_is_not_vectors_is_invalid_output(
    fake: FakeOpenAI,
) -> None:
    """Numbers that are not numbers, or an answer without ``data``, are invalid output (one
    line naming the server), retried like any invalid answer, never a vector stored."""
    words = {"object": "embedding", "index": 0, "embedding": ["a"] * 768}
    fake.script_embed(
        Reply(body={"object": "list", "data": [words]}),
        Reply(body={"object": "list"}),
        embeddings([[3.0, 4.0] + [0.0] * 766]),
    )
    async with openai_llm(fake, attempts=2) as llm:
        match = "answer does not match EmbeddingsAnswer"
        with pytest.raises(LLMInvalidOutput, match=match) as caught:
            await llm.embed(["a"], EmbeddingTask.DOCUMENT)
        assert "\n" not in str(caught.value) and "nomic-embed-text at" in str(caught.value)
        (vector,) = await llm.embed(["a"], EmbeddingTask.DOCUMENT)
    assert vector[:2] == [0.6, 0.8]
    assert len(fake.calls("embeddings")) == 3


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
