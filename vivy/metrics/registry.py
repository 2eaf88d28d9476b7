"""Vivy's Prometheus metric families, registered on an injected ``CollectorRegistry``.

Rules of this module:

* Nothing here touches the process-wide default registry: :class:`Metrics` registers every
  family on the registry it is given, so each test builds a fresh one and two ``Metrics``
  never collide.
* Names follow Prometheus conventions: a ``vivy_`` prefix, base units (``_seconds``,
  ``_bytes``), ``_total`` on counters.
* Label values are bounded. Every label except the configured LLM model name takes a member
  of one of the ``StrEnum`` classes below, and :meth:`BoundedFamily.labels` refuses anything
  else, so a guild, channel or user id can never become a label value by accident.
* Every combination of enum label values of the fixed-label counters exists at 0 from the
  start, so ``rate()`` and ``increase()`` see the first event and alerts can tell "nothing
  happened" from "no data".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Generic, TypeVar

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

import vivy
from vivy.llm.metered import Outcome as LLMOutcome
from vivy.llm.metered import Provider as LLMProvider
from vivy.llm.port import Operation as LLMOperation
from vivy.memory.buffers import CloseReason
from vivy.memory.notes import NoteType
from vivy.retrieval.paths import RetrievalPath
from vivy.state.gate import IngestOutcome
from vivy.state.profile import ProfileUpdateOutcome, Rejection
from vivy.state.schedule import SchedulerPass

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


class DiscardReason(StrEnum):
    """Why a closed buffer was dropped without a note (label ``reason``)."""

    #: Too few messages to be worth a note.
    TOO_FEW_MESSAGES = "too_few_messages"


class TokenDirection(StrEnum):
    """Which side of an LLM call tokens were counted on (label ``direction``)."""

    INPUT = "input"
    OUTPUT = "output"


class ActorKind(StrEnum):
    """Kind of long-lived actor (label ``actor``)."""

    ROUTER = "router"
    CHANNEL = "channel"
    NOTE_WRITER = "note_writer"
    PROFILE_UPDATER = "profile_updater"
    SCHEDULER = "scheduler"


class ReplyOutcome(StrEnum):
    """How a mention or reply to the bot ended (label ``outcome``)."""

    ANSWERED = "answered"
    RATE_LIMITED = "rate_limited"
    FAILED = "failed"


class CommandName(StrEnum):
    """A bot command (label ``command``)."""

    PROFILE = "profile"
    REMEMBER = "remember"
    FORGET = "forget"
    FORGET_ME = "forget_me"
    OPT_OUT = "opt_out"
    OPT_IN = "opt_in"
    LORE = "lore"
    STATUS = "status"


class CommandOutcome(StrEnum):
    """How a bot command ended (label ``outcome``)."""

    OK = "ok"
    DENIED = "denied"
    ERROR = "error"


#: LLM call latency buckets, 50 ms to 2 min (flash answers in about a second, pro in tens).
LLM_DURATION_BUCKETS: tuple[float, ...] = (
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    40.0,
    60.0,
    120.0,
)
#: Retrieval latency buckets, 1 ms to 1 s (SQLite plus one embedding call).
RETRIEVAL_BUCKETS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
)
#: Nightly run duration buckets, 1 s to 2 h.
SCHEDULER_BUCKETS: tuple[float, ...] = (
    1.0,
    5.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1200.0,
    1800.0,
    3600.0,
    7200.0,
)

M = TypeVar("M", Counter, Gauge, Histogram)

_log = structlog.get_logger(__name__)


class BoundedFamily(Generic[M]):
    """A labelled metric whose label values must come from fixed enums.

    ``label_types`` maps each label name, in order, to the ``StrEnum`` class its values must
    be members of, or to ``str`` for a label bounded by configuration (the LLM model name).
    :meth:`labels` returns the prometheus_client child to ``inc()``, ``set()`` or
    ``observe()``.
    """

    __slots__ = ("_label_types", "_metric", "_name")

    _metric: M
    _label_types: dict[str, type[str]]
    _name: str

    def __init__(self, metric: M, label_types: Mapping[str, type[str]]) -> None:
        self._metric = metric
        self._label_types = dict(label_types)
        self._name = next(iter(metric.describe())).name

    @property
    def metric(self) -> M:
        """The underlying prometheus_client metric (for reading samples in tests)."""
        return self._metric

    @property
    def label_names(self) -> tuple[str, ...]:
        """The label names, in positional order."""
        return tuple(self._label_types)

    def enum_combinations(self) -> list[tuple[StrEnum, ...]]:
        """Every combination of label values when all labels are enums, else ``[]``."""
        members: list[list[StrEnum]] = []
        for expected in self._label_types.values():
            if not issubclass(expected, StrEnum):
                return []
            members.append(list(expected))
        return list(itertools.product(*members))

    def labels(self, *values: str, **by_name: str) -> M:
        """The child for these label values, given positionally or by name, not both.

        Raises ``TypeError`` when a value is not a member of its label's enum (a plain
        ``"stored"`` is refused; ``IngestOutcome.STORED`` is accepted) or when labels are
        missing or unknown; raises ``ValueError`` for an empty free-form value.
        """
        names = self.label_names
        if values and by_name:
            raise TypeError(f"{self._name}: pass label values by position or by name")
        if values:
            if len(values) != len(names):
                raise TypeError(
                    f"{self._name}: expected {len(names)} label values {names}, got {len(values)}"
                )
            by_name = dict(zip(names, values, strict=True))
        elif set(by_name) != set(names):
            raise TypeError(f"{self._name}: expected labels {names}, got {tuple(sorted(by_name))}")
        for name, value in by_name.items():
            expected = self._label_types[name]
            if not isinstance(value, expected):
                raise TypeError(
                    f"{self._name}: label {name!r} takes a {expected.__name__}"
                    f" member, got {value!r}"
                )
            if expected is str and not value:
                raise ValueError(f"{self._name}: label {name!r} must not be empty")
        return self._metric.labels(*(str(by_name[name]) for name in names))


def _llm_observation_problem(
    operation: str,
    provider: str,
    model: str,
    outcome: str,
    input_tokens: int,
    output_tokens: int,
    seconds: float,
) -> str | None:
    """Why an LLM observation cannot be recorded, or ``None`` when it can."""
    if operation not in {member.value for member in LLMOperation}:
        return f"unknown operation {operation!r}"
    if provider not in {member.value for member in LLMProvider}:
        return f"unknown provider {provider!r}"
    if outcome not in {member.value for member in LLMOutcome}:
        return f"unknown outcome {outcome!r}"
    if not isinstance(model, str) or not model:
        return f"empty or non-string model name {model!r}"
    if input_tokens < 0 or output_tokens < 0:
        return f"negative token count (input={input_tokens}, output={output_tokens})"
    if not seconds >= 0:
        return f"negative or NaN duration {seconds!r}"
    return None


class Metrics:
    """Every Vivy metric family, registered on ``registry``.

    ``llm_models`` lists the configured (provider, model name) pairs so their LLM series exist
    at 0 from the start; ``version`` and ``llm_quality`` (for example ``"gemini"`` or
    ``"offline"``) fill ``vivy_build_info`` and can be changed later with
    :meth:`set_build_info`.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        llm_models: Iterable[tuple[LLMProvider, str]] = (),
        version: str = vivy.__version__,
        llm_quality: str = "unknown",
    ) -> None:
        self.registry = registry
        self._register_pipeline(registry)
        self._register_llm(registry)
        self._register_actors(registry)
        self._register_scheduler(registry)
        self._register_process(registry)

        self._initialise_series(tuple(llm_models))
        self.set_build_info(version=version, llm_quality=llm_quality)

    def _register_pipeline(self, r: CollectorRegistry) -> None:
        """Registers the memory pipeline's metrics: messages, buffers, notes, profile updates."""
        self.messages_ingested = BoundedFamily(
            Counter(
                "vivy_messages_ingested_total",
                "Gateway message events by what Vivy did with them.",
                ["outcome"],
                registry=r,
            ),
            {"outcome": IngestOutcome},
        )
        self.open_buffers = Gauge(
            "vivy_open_buffers", "Channel buffers currently open.", registry=r
        )
        self.buffer_flushes = BoundedFamily(
            Counter(
                "vivy_buffer_flushes_total",
                "Channel buffers closed, by reason.",
                ["reason"],
                registry=r,
            ),
            {"reason": CloseReason},
        )
        self.buffers_discarded = BoundedFamily(
            Counter(
                "vivy_buffers_discarded_total",
                "Closed buffers dropped without a note, by reason.",
                ["reason"],
                registry=r,
            ),
            {"reason": DiscardReason},
        )
        self.notes_written = BoundedFamily(
            Counter("vivy_notes_written_total", "Notes committed, by type.", ["type"], registry=r),
            {"type": NoteType},
        )
        self.profile_updates = BoundedFamily(
            Counter(
                "vivy_profile_updates_total",
                "Profile update attempts, by outcome.",
                ["outcome"],
                registry=r,
            ),
            {"outcome": ProfileUpdateOutcome},
        )
        self.profile_facts_rejected = BoundedFamily(
            Counter(
                "vivy_profile_facts_rejected_total",
                "Proposed profile facts refused by the guards, by reason.",
                ["reason"],
                registry=r,
            ),
            {"reason": Rejection},
        )

    def _register_llm(self, r: CollectorRegistry) -> None:
        """Registers the LLM calls' metrics: requests, tokens and latency."""
        llm_labels: dict[str, type[str]] = {
            "operation": LLMOperation,
            "provider": LLMProvider,
            "model": str,
            "outcome": LLMOutcome,
        }
        self.llm_requests = BoundedFamily(
            Counter(
                "vivy_llm_requests_total",
                "LLM calls, by operation, provider, model and outcome.",
                list(llm_labels),
                registry=r,
            ),
            llm_labels,
        )
        token_labels: dict[str, type[str]] = {
            "operation": LLMOperation,
            "provider": LLMProvider,
            "model": str,
            "direction": TokenDirection,
        }
        self.llm_tokens = BoundedFamily(
            Counter(
                "vivy_llm_tokens_total",
                "LLM tokens, by operation, provider, model and direction (input or output).",
                list(token_labels),
                registry=r,
            ),
            token_labels,
        )
        self.llm_request_duration = BoundedFamily(
            Histogram(
                "vivy_llm_request_duration_seconds",
                "LLM call latency, including retries inside one call.",
                list(llm_labels),
                buckets=LLM_DURATION_BUCKETS,
                registry=r,
            ),
            llm_labels,
        )

    def _register_actors(self, r: CollectorRegistry) -> None:
        """Registers retrieval latency, the actors' inboxes and restarts, the outbox's backlog."""
        self.retrieval_duration = BoundedFamily(
            Histogram(
                "vivy_retrieval_duration_seconds",
                "Time to build the background facts for one reply, by retrieval path.",
                ["path"],
                buckets=RETRIEVAL_BUCKETS,
                registry=r,
            ),
            {"path": RetrievalPath},
        )
        self.actor_inbox_depth = BoundedFamily(
            Gauge(
                "vivy_actor_inbox_depth",
                "Items waiting in the inboxes of all actors of a kind.",
                ["actor"],
                registry=r,
            ),
            {"actor": ActorKind},
        )
        self.actor_restarts = BoundedFamily(
            Counter(
                "vivy_actor_restarts_total",
                "Actors restarted after a crash, by kind.",
                ["actor"],
                registry=r,
            ),
            {"actor": ActorKind},
        )
        self.outbox_buffers_pending = Gauge(
            "vivy_outbox_buffers_pending",
            "Closed buffers waiting for their note.",
            registry=r,
        )
        self.outbox_profile_updates_pending = Gauge(
            "vivy_outbox_profile_updates_pending",
            "Profile updates waiting to be applied.",
            registry=r,
        )

    def _register_scheduler(self, r: CollectorRegistry) -> None:
        """Registers the nightly job's metrics: last success, duration and failures."""
        self.scheduler_last_success = Gauge(
            "vivy_scheduler_last_success_timestamp_seconds",
            "UTC time of the last fully successful nightly run (0 before the first one).",
            registry=r,
        )
        self.scheduler_duration = Histogram(
            "vivy_scheduler_run_duration_seconds",
            "Duration of nightly runs.",
            buckets=SCHEDULER_BUCKETS,
            registry=r,
        )
        self.scheduler_failures = BoundedFamily(
            Counter(
                "vivy_scheduler_failures_total",
                "Nightly passes that failed for a guild, by pass.",
                ["pass"],
                registry=r,
            ),
            {"pass": SchedulerPass},
        )

    def _register_process(self, r: CollectorRegistry) -> None:
        """Registers the process's metrics: database size, gateway, shard leases, replies,
        commands, catch-up and build."""
        self.database_size = Gauge(
            "vivy_database_size_bytes", "Size of the SQLite database files.", registry=r
        )
        self.gateway_connected = Gauge(
            "vivy_gateway_connected",
            "1 while the Discord gateway is connected, else 0.",
            registry=r,
        )
        self.shard_lease_held = Gauge(
            "vivy_shard_lease_held",
            "1 while this process holds the shard's lease, 0 after it lost it (a fleet on "
            "PostgreSQL; the shard label takes only this process's shard ids).",
            ["shard"],
            registry=r,
        )
        self.shard_lease_epoch = Gauge(
            "vivy_shard_lease_epoch",
            "Epoch of the shard's lease this process holds (bumped at every takeover).",
            ["shard"],
            registry=r,
        )
        self.shard_leases_lost = Counter(
            "vivy_shard_leases_lost_total",
            "Shard leases this process lost to another process (it stops writing and exits).",
            registry=r,
        )
        self.replies = BoundedFamily(
            Counter(
                "vivy_replies_total",
                "Mentions and replies to the bot, by outcome.",
                ["outcome"],
                registry=r,
            ),
            {"outcome": ReplyOutcome},
        )
        self.commands = BoundedFamily(
            Counter(
                "vivy_commands_total",
                "Bot commands, by command and outcome.",
                ["command", "outcome"],
                registry=r,
            ),
            {"command": CommandName, "outcome": CommandOutcome},
        )
        self.catchup_messages = Counter(
            "vivy_catchup_messages_total",
            "Messages stored from Discord's channel history when a guild became available "
            "(sent while Vivy was not listening).",
            registry=r,
        )
        self.build_info = Gauge(
            "vivy_build_info",
            "Always 1; labels carry the Vivy version and the LLM quality in use.",
            ["version", "llm_quality"],
            registry=r,
        )

    def _initialise_series(self, llm_models: tuple[tuple[LLMProvider, str], ...]) -> None:
        """Create every enum label combination (and each configured model's) at 0."""
        fixed: list[BoundedFamily[Counter] | BoundedFamily[Gauge] | BoundedFamily[Histogram]]
        fixed = [
            self.messages_ingested,
            self.buffer_flushes,
            self.buffers_discarded,
            self.notes_written,
            self.profile_updates,
            self.profile_facts_rejected,
            self.retrieval_duration,
            self.actor_inbox_depth,
            self.actor_restarts,
            self.scheduler_failures,
            self.replies,
            self.commands,
        ]
        for family in fixed:
            for combination in family.enum_combinations():
                family.labels(*combination)
        for provider, model in llm_models:
            for operation in LLMOperation:
                for outcome in LLMOutcome:
                    self.llm_requests.labels(operation, provider, model, outcome)
                    self.llm_request_duration.labels(operation, provider, model, outcome)
                for direction in TokenDirection:
                    self.llm_tokens.labels(operation, provider, model, direction)

    def set_build_info(self, *, version: str, llm_quality: str) -> None:
        """Replace the ``vivy_build_info`` series with one for these labels, set to 1."""
        self.build_info.clear()
        self.build_info.labels(version=version, llm_quality=llm_quality).set(1)

    def observe_llm(
        self,
        *,
        operation: str,
        provider: str,
        model: str,
        outcome: str,
        input_tokens: int,
        output_tokens: int,
        seconds: float,
    ) -> None:
        """Record one finished LLM call (implements the LLM port's ``LLMMeter``).

        ``operation``, ``provider`` and ``outcome`` are values of :class:`LLMOperation`,
        :class:`LLMProvider` and :class:`LLMOutcome` (plain strings or members). As the meter
        protocol requires, this never raises: an observation with an unknown operation,
        provider or outcome, an empty model, a negative token count or a negative duration is
        dropped with a warning log, so it cannot create an unbounded series.
        """
        problem = _llm_observation_problem(
            operation, provider, model, outcome, input_tokens, output_tokens, seconds
        )
        if problem is not None:
            _log.warning("llm_observation_dropped", reason=problem)
            return
        op = LLMOperation(operation)
        who = LLMProvider(provider)
        result = LLMOutcome(outcome)
        self.llm_requests.labels(op, who, model, result).inc()
        self.llm_request_duration.labels(op, who, model, result).observe(seconds)
        self.llm_tokens.labels(op, who, model, TokenDirection.INPUT).inc(input_tokens)
        self.llm_tokens.labels(op, who, model, TokenDirection.OUTPUT).inc(output_tokens)
