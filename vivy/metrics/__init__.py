"""Prometheus metrics for Vivy and the HTTP server that exposes them.

:class:`Metrics` holds every metric family on an injected ``CollectorRegistry``; label values
are the bounded enums defined here. :class:`MetricsServer` serves ``/metrics`` and the
read-only operator memory API backed by an :class:`OperatorAPI`.
"""

from __future__ import annotations

__all__ = [
    "LLM_DURATION_BUCKETS",
    "RETRIEVAL_BUCKETS",
    "SCHEDULER_BUCKETS",
    "ActorKind",
    "BoundedFamily",
    "CloseReason",
    "CommandName",
    "CommandOutcome",
    "DiscardReason",
    "IngestOutcome",
    "LLMOperation",
    "LLMOutcome",
    "LLMProvider",
    "Metrics",
    "MetricsServer",
    "NoteType",
    "OperatorAPI",
    "ProfileUpdateOutcome",
    "Rejection",
    "ReplyOutcome",
    "RetrievalPath",
    "SchedulerPass",
    "TokenDirection",
]

from vivy.metrics.registry import (
    LLM_DURATION_BUCKETS,
    RETRIEVAL_BUCKETS,
    SCHEDULER_BUCKETS,
    ActorKind,
    BoundedFamily,
    CloseReason,
    CommandName,
    CommandOutcome,
    DiscardReason,
    IngestOutcome,
    LLMOperation,
    LLMOutcome,
    LLMProvider,
    Metrics,
    NoteType,
    ProfileUpdateOutcome,
    Rejection,
    ReplyOutcome,
    RetrievalPath,
    SchedulerPass,
    TokenDirection,
)
from vivy.metrics.server import MetricsServer, OperatorAPI
