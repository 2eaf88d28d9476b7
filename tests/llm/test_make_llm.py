"""make_llm: Gemini when a key is set, otherwise the offline provider with one warning."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from vivy.clock import Clock
from vivy.config import Settings
from vivy.llm import (
    CountingMeter,
    GeminiLLM,
    MeteredLLM,
    OfflineLLM,
    gemini_config_from_env,
    make_llm,
)
from vivy.llm.port import EmbeddingTask, ModelTier

CLOCK = Clock(wall_origin=1_771_869_600.0, mono_origin=0.0)


@pytest.mark.anyio
async def test_no_key_gives_offline_with_one_warning() -> None:
    """Without a key the offline provider is used and one warning says so."""
    meter = CountingMeter()
    with capture_logs() as logs:
        llm = make_llm({}, meter=meter, clock=CLOCK)
    assert logs == [
        {
            "event": "no Gemini key set; using the offline provider (offline quality)",
            "log_level": "warning",
        }
    ]
    assert isinstance(llm, MeteredLLM) and isinstance(llm.inner, OfflineLLM)
    assert llm.quality == "offline"
    await llm.embed(["hello"], EmbeddingTask.QUERY)
    assert meter.calls(operation="embed", outcome="ok") == 1


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
