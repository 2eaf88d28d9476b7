"""Prometheus metrics for Vivy.

:class:`Metrics` holds every metric family on an injected ``CollectorRegistry``; label values
are the bounded enums defined here. :class:`vivy.web.server.OperatorServer` serves them on
``/metrics``.
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
    "NoteType",
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
