"""make_llm: the configured providers (Gemini with a key, else offline, or an OpenAI-compatible
endpoint), composed when generation and embeddings differ, metered per provider."""

from __future__ import annotations

import threading

import pytest
from structlog.testing import capture_logs

from vivy.clock import Clock
from vivy.config import Settings
from vivy.llm import (
    OFFLINE_EMBEDDING_MODEL,
    ComposedLLM,
    CountingMeter,
    GeminiLLM,
    MeteredLLM,
    OfflineLLM,
    OpenAILLM,
    Provider,
    chat_request,
    configured_embedding,
    gemini_config_from_env,
    make_llm,
)
from vivy.llm.offline import LocalEmbedder
from vivy.llm.port import ChatTurn, EmbeddingTask, ModelTier
from vivy_lab.fakes.openai import FakeOpenAI

CLOCK = Clock(wall_origin=1_771_869_600.0, mono_origin=0.0)


@pytest.mark.anyio
async def test_no_key_gives_offline_with_one_info_line() -> None:
    """Without a key the offline provider is used and one info line says so (not a warning:
    every one-shot command would print it)."""
    meter = CountingMeter()
    with capture_logs() as logs:
        llm = make_llm({}, meter=meter, clock=CLOCK)
    assert logs == [
        {
            "event": "no Gemini key set; using the offline provider (offline quality)",
            "log_level": "info",
        }
    ]
    assert isinstance(llm, MeteredLLM) and isinstance(llm.inner, OfflineLLM)
    assert llm.quality == "offline"
    await llm.embed(["hello"], EmbeddingTask.QUERY)
    assert meter.calls(operation="embed", outcome="ok") == 1


@pytest.mark.anyio
@pytest.mark.sentence_model
@pytest.mark.parametrize("on_thread", [True, False])
async def test_offline_embeddings_run_on_a_worker_thread_when_asked(
    on_thread: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``embed_on_thread`` (what the live bot's app asks for) the local model embeds
    on a worker thread, so the event loop keeps serving meanwhile; without it (tests under
    the mock clock, the importer) on the loop's own thread. The vectors are the same."""
    threads: list[int] = []
    embed = LocalEmbedder.embed

    def recording(self: LocalEmbedder, texts: list[str]) -> list[list[float]]:
        threads.append(threading.get_ident())
        return embed(self, texts)

    monkeypatch.setattr(LocalEmbedder, "embed", recording)
    llm = make_llm({}, clock=CLOCK, embed_on_thread=on_thread)
    text = ["who lives next door to Sam?"]
    vectors = await llm.embed(text, EmbeddingTask.QUERY)
    assert len(threads) == 1
    assert (threads[0] != threading.get_ident()) is on_thread
    assert vectors == embed(LocalEmbedder(), text)


@pytest.mark.anyio
async def test_key_gives_gemini_without_warning() -> None:
    """With MEMORY_GEMINI_TOKEN set, Gemini is used and nothing is logged."""
    with capture_logs() as logs:
        llm = make_llm({"MEMORY_GEMINI_TOKEN": "k"}, clock=CLOCK)
    assert logs == []
    assert isinstance(llm, MeteredLLM) and isinstance(llm.inner, GeminiLLM)
    assert (llm.quality, llm.dimension) == ("gemini", 768)
    await llm.aclose()


def test_config_from_env_reads_key_models_and_base_url() -> None:
    """Model names and the endpoint can be overridden from the environment."""
    config = gemini_config_from_env(
        {
            "GEMINI_API_KEY": " fallback ",
            "VIVY_GEMINI_FLASH_MODEL": "gemini-2.5-flash",
            "VIVY_GEMINI_PRO_MODEL": " ",
            "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9/",
        }
    )
    assert config is not None
    assert config.api_key == "fallback"
    assert (config.flash_model, config.pro_model) == ("gemini-2.5-flash", "gemini-2.5-pro")
    assert config.base_url == "http://127.0.0.1:9/"
    assert gemini_config_from_env({"GEMINI_API_KEY": ""}) is None


@pytest.mark.anyio
async def test_the_settings_key_is_the_one_used() -> None:
    """Given Settings, make_llm uses their Gemini key and models, not the environment."""
    llm = make_llm(Settings(gemini_key="k", gemini_flash_model="flash-x"), clock=CLOCK)
    assert isinstance(llm, MeteredLLM) and isinstance(llm.inner, GeminiLLM)
    assert llm.model_for(ModelTier.FLASH) == "flash-x"
    await llm.aclose()
    assert isinstance(make_llm(Settings(), clock=CLOCK).inner, OfflineLLM)


@pytest.mark.anyio
@pytest.mark.sentence_model
async def test_openai_chat_with_offline_embeddings_is_composed_and_labelled() -> None:
    """Chat on an OpenAI-compatible endpoint and embeddings offline: one port, two providers,
    each call metered under its own provider."""
    with FakeOpenAI() as fake:
        env = {
            "VIVY_LLM_PROVIDER": "openai",
            "VIVY_EMBEDDING_PROVIDER": "offline",
            "VIVY_OPENAI_BASE_URL": fake.base_url,
            "VIVY_OPENAI_FLASH_MODEL": "llama3.2",
        }
        meter = CountingMeter()
        llm = make_llm(env, meter=meter, clock=CLOCK)
        assert isinstance(llm, MeteredLLM) and isinstance(llm.inner, ComposedLLM)
        assert isinstance(llm.inner.generator, OpenAILLM)
        assert isinstance(llm.inner.embedder, OfflineLLM)
        assert (llm.quality, llm.embedding_model) == ("openai", OFFLINE_EMBEDDING_MODEL)
        try:
            await llm.embed(["hello"], EmbeddingTask.QUERY)
            await llm.chat(chat_request([ChatTurn("user", "Alex", "hi")]))
        finally:
            await llm.aclose()
        assert [(o.operation, o.provider, o.model) for o in meter.observations] == [
            ("embed", "offline", OFFLINE_EMBEDDING_MODEL),
            ("chat", "openai", "llama3.2"),
        ]
        assert [r.endpoint for r in fake.requests] == ["chat"]


@pytest.mark.anyio
async def test_one_openai_endpoint_serves_both_without_composition() -> None:
    """VIVY_LLM_PROVIDER=openai alone: one client writes and embeds, at the set dimension."""
    settings = Settings.from_env(
        {
            "VIVY_LLM_PROVIDER": "openai",
            "VIVY_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "VIVY_OPENAI_EMBEDDING_MODEL": "nomic-embed-text",
            "VIVY_OPENAI_EMBEDDING_DIMENSION": "1024",
        }
    )
    llm = make_llm(settings, clock=CLOCK)
    assert isinstance(llm, MeteredLLM) and isinstance(llm.inner, OpenAILLM)
    assert (llm.embedding_model, llm.dimension) == ("nomic-embed-text", 1024)
    assert llm.provider == llm.embedding_provider == Provider.OPENAI
    assert configured_embedding(settings) == ("nomic-embed-text", 1024)
    await llm.aclose()
