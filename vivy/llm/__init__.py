"""Vivy's access to language models: the port, its implementations and the prompts.

Actors depend on :class:`LLM` and the request builders in :mod:`vivy.llm.prompts`.
:func:`make_llm` picks the implementation once at start-up: Gemini when a key is set, the
offline provider otherwise, always wrapped in :class:`MeteredLLM`.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from vivy.clock import Clock
from vivy.llm.gemini import GeminiConfig, GeminiLLM, gemini_key_from_env
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
    "gemini_config_from_env",
    "gemini_key_from_env",
    "make_llm",
    "note_request",
    "profile_update_request",
]

_log = structlog.get_logger(__name__)


def _setting(environ: Mapping[str, str], name: str, default: str) -> str:
    """``environ[name]`` stripped, or ``default`` when it is unset or blank."""
    return environ.get(name, "").strip() or default


def gemini_config_from_env(environ: Mapping[str, str]) -> GeminiConfig | None:
    """A :class:`GeminiConfig` from the environment, or None when no key is set.

    The key comes from ``MEMORY_GEMINI_TOKEN`` or ``GEMINI_API_KEY``; model names may be
    overridden by ``VIVY_GEMINI_FLASH_MODEL``, ``VIVY_GEMINI_PRO_MODEL`` and
    ``VIVY_GEMINI_EMBEDDING_MODEL``; ``GOOGLE_GEMINI_BASE_URL`` redirects the endpoint.
    """
    key = gemini_key_from_env(environ)
    if key is None:
        return None
    defaults = GeminiConfig(api_key=key)
    return GeminiConfig(
        api_key=key,
        flash_model=_setting(environ, "VIVY_GEMINI_FLASH_MODEL", defaults.flash_model),
        pro_model=_setting(environ, "VIVY_GEMINI_PRO_MODEL", defaults.pro_model),
        embedding_model=_setting(environ, "VIVY_GEMINI_EMBEDDING_MODEL", defaults.embedding_model),
        base_url=environ.get("GOOGLE_GEMINI_BASE_URL", "").strip() or None,
    )


def make_llm(
    environ: Mapping[str, str],
    *,
    meter: LLMMeter | None = None,
    clock: Clock,
) -> LLM:
    """The metered LLM for this environment: Gemini with a key, offline without one.

    Without a key, one warning says that the offline provider (and its offline-quality
    notes) is in use, so an operator who forgot the key finds out from the first log lines.
    """
    config = gemini_config_from_env(environ)
    inner: LLM
    if config is None:
        _log.warning("no Gemini key set; using the offline provider (offline quality)")
        inner = OfflineLLM()
    else:
        inner = GeminiLLM(config)
    return MeteredLLM(inner, meter if meter is not None else NullMeter(), clock)
