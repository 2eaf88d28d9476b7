"""Retrieval's settings: how much memory a reply gets, and how notes are searched and ranked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vivy.retrieval.context import EVIDENCE_TOKENS
from vivy.retrieval.ranking import Calibration, Gate, Weights

if TYPE_CHECKING:
    from vivy.config import Settings

__all__ = ["DEFAULT_SETTINGS", "RetrievalSettings"]


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """Limits and tuning of retrieval: how much of each kind of memory a reply's context
    holds, and how notes are searched and ranked."""

    enabled: bool = True
    #: Conversation notes and topic clusters in a context.
    conversation_notes: int = 5
    topic_clusters: int = 3
    #: Profiles: conversation members (most recent speakers), then extra mentions and
    #: extra note participants.
    conversation_profiles: int = 10
    mention_profiles: int = 3
    participant_profiles: int = 3
    #: Notes kept from the vector search, per search.
    candidates: int = 40
    #: Candidates of the approximate vector index (binary codes), which int8 codes shortlist
    #: for an exact cosine re-rank (:data:`vivy.storage.vector_index.EXACT_SHARE`), of which
    #: ``candidates`` are kept: with embeddings of real text the sign bits of a vector lose
    #: enough that the true nearest notes need a wide pool.
    reranked: int = 400
    #: Keyword matches taken from FTS5, per search.
    keyword_candidates: int = 30
    #: Search the notes' evidence (their kept messages); off with ``VIVY_EVIDENCE_DAYS=0``.
    evidence: bool = True
    #: Evidence windows taken by keyword and by vector, per search.
    window_candidates: int = 30
    #: Quoted evidence lines: at most this many per note, each clipped, all within a budget.
    evidence_lines: int = 6
    evidence_line_chars: int = 200
    evidence_tokens: int = EVIDENCE_TOKENS
    #: IANA zone in which "yesterday" or "in May" is understood.
    timezone: str = "UTC"
    #: Earlier conversation messages embedded with the current one, and their length cap.
    context_messages: int = 2
    context_message_chars: int = 300
    query_chars: int = 1000
    summary_chars: int = 300
    #: Recent activity (no LLM call): notes of the last days per conversation member.
    activity_days: float = 7.0
    activity_notes: int = 5
    lore_items: int = 20
    cache_size: int = 256
    cache_ttl_s: float = 300.0
    weights: Weights = field(default_factory=Weights)
    #: The relevance a note needs to enter a reply's memory (``VIVY_RELEVANCE_THRESHOLD``);
    #: search listings (``vivy search``, the operator API, the memory page) show the whole
    #: ranking with its scores.
    gate: Gate = field(default_factory=Gate)
    #: Similarity scale of the embedding model for every guild; None takes each guild's
    #: measured scale (the nightly job's), else the model's default.
    calibration: Calibration | None = None

    @classmethod
    def of(cls, settings: Settings) -> RetrievalSettings:
        """The retriever's settings under ``settings``: its switches, the reply's gate, the
        evidence kept and quoted, and the time zone."""
        return cls(
            enabled=settings.retrieval_enabled,
            evidence=settings.evidence_days != 0,
            evidence_tokens=(
                EVIDENCE_TOKENS if settings.evidence_tokens is None else settings.evidence_tokens
            ),
            gate=(
                Gate()
                if settings.relevance_threshold is None
                else Gate(settings.relevance_threshold)
            ),
            timezone=settings.timezone,
        )


#: The default settings, shared (they are immutable).
DEFAULT_SETTINGS = RetrievalSettings()
