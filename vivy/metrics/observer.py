"""Reports of the actors, turned into Prometheus metrics.

The actors depend only on small observer protocols (``IngestObserver``, ``NoteObserver``,
``ProfileObserver``, ``SchedulerObserver``); :class:`MetricsObserver` implements them all on
top of :class:`~vivy.metrics.registry.Metrics`. The actors report in the domain's enums
(:class:`~vivy.memory.buffers.CloseReason`, :class:`~vivy.memory.notes.NoteType`, ...), which are
the metrics' label types, so no value is translated on the way.
"""

from __future__ import annotations

from collections.abc import Callable

from vivy.memory.buffers import CloseReason
from vivy.metrics.registry import (
    ActorKind,
    DiscardReason,
    Metrics,
    NoteType,
    ProfileUpdateOutcome,
    ReplyOutcome,
    RetrievalPath,
    SchedulerPass,
)
from vivy.state.gate import IngestOutcome
from vivy.state.profile import Rejection

__all__ = ["MetricsObserver"]


class MetricsObserver:
    """Counts what the actors report; see the module docstring."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        #: Called with the name of every report after it is counted (the app asks the
        #: NoteWriter to rescan after ``actor_restarted``; the importer follows progress).
        self.listeners: list[Callable[[str], None]] = []
        #: The ingest counter's child of each outcome, looked up once (not per message).
        self._ingested = {
            outcome: metrics.messages_ingested.labels(outcome=outcome) for outcome in IngestOutcome
        }

    def _tell(self, report: str) -> None:
        for listener in self.listeners:
            listener(report)

    def ingested(self, outcome: IngestOutcome, count: int = 1) -> None:
        """``count`` gateway events ended with ``outcome``."""
        self._ingested[outcome].inc(count)

    def buffer_opened(self) -> None:
        """A buffer opened."""
        self.metrics.open_buffers.inc()

    def buffer_closed(self, reason: CloseReason) -> None:
        """A buffer closed for ``reason``."""
        self.metrics.open_buffers.dec()
        self.metrics.buffer_flushes.labels(reason=reason).inc()
        self._tell("buffer_closed")

    def actor_restarted(self) -> None:
        """A channel actor crashed and was restarted."""
        self.metrics.actor_restarts.labels(actor=ActorKind.CHANNEL).inc()
        self._tell("actor_restarted")

    def note_written(self, note_type: NoteType) -> None:
        """A note was committed."""
        self.metrics.notes_written.labels(type=note_type).inc()
        self._tell("note_written")

    def buffer_discarded(self) -> None:
        """A buffer was too small for a note."""
        self.metrics.buffers_discarded.labels(reason=DiscardReason.TOO_FEW_MESSAGES).inc()
        self._tell("buffer_discarded")

    def profile_update(self, outcome: ProfileUpdateOutcome) -> None:
        """A profile update attempt ended."""
        self.metrics.profile_updates.labels(outcome=outcome).inc()
        self._tell("profile_update")

    def fact_rejected(self, reason: Rejection) -> None:
        """A proposed fact operation was refused."""
        self.metrics.profile_facts_rejected.labels(reason=reason).inc()

    def job_succeeded(self, completed_at: float, seconds: float) -> None:
        """The nightly job completed a day."""
        self.metrics.scheduler_last_success.set(completed_at)
        self.metrics.scheduler_duration.observe(seconds)

    def job_failed(self, job_pass: SchedulerPass) -> None:
        """A pass of the nightly job failed."""
        self.metrics.scheduler_failures.labels(job_pass).inc()

    def lease_acquired(self, shard: int, epoch: int) -> None:
        """This process took the shard's lease at ``epoch``."""
        self.metrics.shard_lease_held.labels(shard=str(shard)).set(1)
        self.metrics.shard_lease_epoch.labels(shard=str(shard)).set(epoch)

    def lease_lost(self, shard: int) -> None:
        """Another process took the shard's lease over."""
        self.metrics.shard_lease_held.labels(shard=str(shard)).set(0)
        self.metrics.shard_leases_lost.inc()

    def gateway_connected(self, connected: bool) -> None:
        """Whether any gateway shard is connected now."""
        self.metrics.gateway_connected.set(1 if connected else 0)

    def caught_up(self, messages: int) -> None:
        """``messages`` were stored from a channel's history."""
        self.metrics.catchup_messages.inc(messages)

    def replied(self, outcome: ReplyOutcome) -> None:
        """An answer to a message addressed to Vivy ended with ``outcome``."""
        self.metrics.replies.labels(outcome).inc()

    def retrieved(self, path: RetrievalPath, seconds: float) -> None:
        """A reply's memory was built along ``path`` in ``seconds``."""
        self.metrics.retrieval_duration.labels(path).observe(seconds)
