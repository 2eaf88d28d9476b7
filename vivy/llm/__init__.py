"""Vivy's access to language models: the port, its implementations and the prompts.

Actors depend on :class:`LLM` and the request builders in :mod:`vivy.llm.prompts`.
:func:`make_llm` picks the implementation once at start-up: Gemini when a key is set, the
offline provider otherwise, always wrapped in :class:`MeteredLLM`. The Gemini implementation
(and google-genai, a second of imports) is loaded on first use, so commands that never call
Gemini start fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from vivy.clock import Clock
from vivy.config import Settings, gemini_key_from_env
from vivy.llm.metered import (
    CountingMeter,
    LLMMeter,
    LLMObservation,
    MeteredLLM,
    MeterStatistics,
    NullMeter,
)
from vivy.llm.offline import OFFLINE_EMBEDDING_MODEL, OFFLINE_MODEL, OfflineLLM
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
    from vivy.llm.gemini import GeminiConfig, GeminiLLM

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
    "Operation",
    "ProfileInput",
    "ProfileOperation",
    "ProfileOperations",
    "TranscriptLine",
    "Usage",
    "chat_request",
    "cluster_request",
    "consolidation_request",
    "gemini_config",
    "gemini_config_from_env",
    "gemini_key_from_env",
    "make_llm",
    "note_request",
    "profile_update_request",
]

_log = structlog.get_logger(__name__)

#: Names served from :mod:`vivy.llm.gemini`, imported when first asked for.
_GEMINI_NAMES = frozenset({"GeminiConfig", "GeminiLLM"})


def __getattr__(name: str) -> Any:
    """Load the Gemini implementation on first use of one of its names."""
    if name in _GEMINI_NAMES:
        return getattr(importlib.import_module("vivy.llm.gemini"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def make_llm(
    settings: Settings | Mapping[str, str],
    *,
    meter: LLMMeter | None = None,
    clock: Clock,
) -> LLM:
    """The metered LLM for these settings (or this environment): Gemini with a key, offline
    without one.

    Without a key, one warning says that the offline provider (and its offline-quality
    notes) is in use, so an operator who forgot the key finds out from the first log lines.
    """
    config = gemini_config(
        settings if isinstance(settings, Settings) else Settings.from_env(settings)
    )
    inner: LLM
    if config is None:
        _log.warning("no Gemini key set; using the offline provider (offline quality)")
        inner = OfflineLLM()
    else:
        from vivy.llm.gemini import GeminiLLM

        inner = GeminiLLM(config)
    return MeteredLLM(inner, meter if meter is not None else NullMeter(), clock)
