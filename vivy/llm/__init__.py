"""Vivy's access to language models: the port, its implementations and the prompts.

Actors depend on :class:`LLM` and the request builders in :mod:`vivy.llm.prompts`.
:func:`make_llm` picks the providers once at start-up from the settings
(``VIVY_LLM_PROVIDER``, ``VIVY_EMBEDDING_PROVIDER``; by default Gemini when its key is set,
the offline provider otherwise), composes generation and embeddings when they come from
different providers (:class:`ComposedLLM`), and wraps the result in :class:`MeteredLLM`.
:func:`check_llm` checks an OpenAI-compatible endpoint before work starts. The network
implementations (google-genai and openai, slow to import) are loaded on first use,
so commands that never call them start fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from vivy.clock import Clock
from vivy.config import Settings, gemini_key_from_env
from vivy.errors import ConfigError
from vivy.llm.composed import ComposedLLM
from vivy.llm.metered import (
    CountingMeter,
    LLMMeter,
    LLMObservation,
    MeteredLLM,
    MeterStatistics,
    NullMeter,
    Provider,
)
from vivy.llm.offline import OFFLINE_EMBEDDING_MODEL, OFFLINE_MODEL, OfflineLLM
from vivy.llm.offline.provider import shared_embedder
from vivy.llm.port import (
    LLM,
    ChatAnswer,
    ChatRequest,
    ChatTurn,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    Operation,
    Usage,
)
from vivy.llm.prompts import (
    chat_request,
    cluster_request,
    consolidation_request,
    note_request,
    profile_update_request,
)
from vivy.llm.retry import Backoff
from vivy.llm.schemas import (
    AddFact,
    ClusterDraft,
    ClusterInput,
    DraftCluster,
    FactView,
    InvalidateFact,
    KeepFact,
    MergeFacts,
    NoteDraft,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperation,
    ProfileOperations,
    TranscriptLine,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vivy.llm.gemini import GeminiConfig, GeminiLLM
    from vivy.llm.openai_compat import OpenAIConfig, OpenAILLM, Role

__all__ = [
    "LLM",
    "OFFLINE_EMBEDDING_MODEL",
    "OFFLINE_MODEL",
    "AddFact",
    "Backoff",
    "ChatAnswer",
    "ChatRequest",
    "ChatTurn",
    "ClusterDraft",
    "ClusterInput",
    "ComposedLLM",
    "CountingMeter",
    "DraftCluster",
    "EmbeddingTask",
    "FactView",
    "GeminiConfig",
    "GeminiLLM",
    "Generation",
    "GenerationRequest",
    "InvalidateFact",
    "KeepFact",
    "LLMMeter",
    "LLMObservation",
    "MergeFacts",
    "MeterStatistics",
    "MeteredLLM",
    "ModelTier",
    "NoteDraft",
    "NoteInput",
    "NoteView",
    "NullMeter",
    "OfflineLLM",
    "OpenAIConfig",
    "OpenAILLM",
    "Operation",
    "ProfileInput",
    "ProfileOperation",
    "ProfileOperations",
    "Provider",
    "TranscriptLine",
    "Usage",
    "build_llm",
    "chat_request",
    "check_llm",
    "cluster_request",
    "configured_embedding",
    "consolidation_request",
    "gemini_config",
    "gemini_config_from_env",
    "gemini_key_from_env",
    "local_word_array",
    "make_llm",
    "note_request",
    "openai_config",
    "profile_update_request",
]

_log = structlog.get_logger(__name__)

#: Names served by the network implementations, imported when first asked for.
_LAZY_NAMES = {
    "GeminiConfig": "vivy.llm.gemini",
    "GeminiLLM": "vivy.llm.gemini",
    "OpenAIConfig": "vivy.llm.openai_compat",
    "OpenAILLM": "vivy.llm.openai_compat",
}


def __getattr__(name: str) -> Any:
    """Load a network implementation on first use of one of its names."""
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def local_word_array(words: Sequence[str]) -> npt.NDArray[np.float32]:
    """Unit vectors of single words from the local model's word tables (loaded on first use):
    ranking's word match and the quoted lines compare words with them, whichever provider
    embeds the texts."""
    return shared_embedder().word_array(words)


def gemini_config(settings: Settings) -> GeminiConfig | None:
    """The :class:`GeminiConfig` of ``settings``, or None when no Gemini key is set."""
    if settings.gemini_key is None:
        return None
    from vivy.llm.gemini import GeminiConfig

    return GeminiConfig(
        api_key=settings.gemini_key,
        flash_model=settings.gemini_flash_model,
        pro_model=settings.gemini_pro_model,
        embedding_model=settings.gemini_embedding_model,
        base_url=settings.gemini_base_url,
    )


def gemini_config_from_env(environ: Mapping[str, str]) -> GeminiConfig | None:
    """:func:`gemini_config` of the settings read (and validated) from ``environ``."""
    return gemini_config(Settings.from_env(environ))


def openai_config(settings: Settings) -> OpenAIConfig:
    """The :class:`OpenAIConfig` of ``settings`` (whether or not a provider uses it)."""
    from vivy.llm.openai_compat import OpenAIConfig

    chosen = settings.providers
    return OpenAIConfig(
        base_url=chosen.openai_base_url,
        api_key=chosen.openai_api_key,
        flash_model=chosen.openai_flash_model,
        pro_model=chosen.openai_pro_model,
        embedding_model=chosen.openai_embedding_model,
        dimension=chosen.openai_embedding_dimension,
        timeout_s=chosen.openai_timeout_s,
        document_prefix=chosen.openai_document_prefix,
        query_prefix=chosen.openai_query_prefix,
    )


def _settings(settings: Settings | Mapping[str, str]) -> Settings:
    return settings if isinstance(settings, Settings) else Settings.from_env(settings)


def _provider(name: str, settings: Settings, embed_on_thread: bool) -> LLM:
    """A new, unmetered LLM of provider ``name``, configured by ``settings``."""
    if name == Provider.OPENAI:
        from vivy.llm.openai_compat import OpenAILLM

        return OpenAILLM(openai_config(settings))
    if name == Provider.GEMINI:
        from vivy.llm.gemini import GeminiLLM

        config = gemini_config(settings)
        if config is None:  # Settings.from_env refuses this; Settings built by hand may not
            raise ConfigError("the gemini provider needs a Gemini key (GEMINI_API_KEY)")
        return GeminiLLM(config)
    return OfflineLLM(embed_on_thread=embed_on_thread)


def build_llm(settings: Settings | Mapping[str, str], *, embed_on_thread: bool = False) -> LLM:
    """The unmetered LLM these settings configure: one provider, or two composed when
    generation and embeddings come from different providers. Network clients bind to the
    event loop they are first used on, so build it where it will be used.
    ``embed_on_thread``: the offline provider embeds on a worker thread (see
    :class:`~vivy.llm.offline.OfflineLLM`)."""
    chosen = _settings(settings)
    generator = _provider(chosen.llm_provider, chosen, embed_on_thread)
    if chosen.embedding_provider == chosen.llm_provider:
        return generator
    return ComposedLLM(generator, _provider(chosen.embedding_provider, chosen, embed_on_thread))


def make_llm(
    settings: Settings | Mapping[str, str],
    *,
    meter: LLMMeter | None = None,
    clock: Clock,
    embed_on_thread: bool = False,
) -> LLM:
    """The metered LLM for these settings (or this environment), from :func:`build_llm`.

    When the offline provider writes the notes, an info line says so, and ``vivy run``'s start
    line and the commands' reports name the provider, so an operator who forgot a key or a
    provider finds out without a warning on every command.
    """
    chosen = _settings(settings)
    if chosen.llm_provider == Provider.OFFLINE:
        if chosen.providers.generation is None:
            _log.info("no Gemini key set; using the offline provider (offline quality)")
        else:
            _log.info("VIVY_LLM_PROVIDER=offline; notes are offline extracts")
    return MeteredLLM(
        build_llm(chosen, embed_on_thread=embed_on_thread),
        meter if meter is not None else NullMeter(),
        clock,
        provider=Provider(chosen.llm_provider),
        embedding_provider=Provider(chosen.embedding_provider),
    )


async def check_llm(settings: Settings) -> None:
    """Check the OpenAI-compatible endpoint the settings use, if any, before work starts:
    reachable, serving the configured models, embedding at the configured dimension.

    Raises a one-line :class:`~vivy.errors.ConfigError` naming the setting to fix
    (:class:`~vivy.llm.openai_compat.EndpointUnreachable` when nothing answers).
    """
    roles: list[Role] = []
    if settings.llm_provider == Provider.OPENAI:
        roles.append("generation")
    if settings.embedding_provider == Provider.OPENAI:
        roles.append("embeddings")
    if roles:
        from vivy.llm.openai_compat import check_endpoint

        await check_endpoint(openai_config(settings), roles)


def configured_embedding(settings: Settings) -> tuple[str, int] | None:
    """The embedding model and dimension of the network provider the settings select for
    embeddings, without opening a client; None for the offline provider."""
    provider = settings.embedding_provider
    if provider == Provider.OPENAI:
        chosen = settings.providers
        return chosen.openai_embedding_model, chosen.openai_embedding_dimension
    config = gemini_config(settings) if provider == Provider.GEMINI else None
    return None if config is None else (config.embedding_model, config.dimension)
