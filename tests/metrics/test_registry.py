"""Tests for vivy.metrics.registry: families, bounded labels and the LLM meter."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from vivy.errors import LLMInvalidOutput, LLMUnavailable
from vivy.llm.metered import outcome_of
from vivy.metrics import (
    ActorKind,
    CommandName,
    CommandOutcome,
    IngestOutcome,
    LLMOperation,
    LLMOutcome,
    LLMProvider,
    Metrics,
    Rejection,
    RetrievalPath,
    SchedulerPass,
)
from vivy.metrics.observer import MetricsObserver

#: Every family Vivy exports, by exposition name, with its Prometheus type.
EXPECTED_FAMILIES = {
    "vivy_messages_ingested": "counter",
    "vivy_open_buffers": "gauge",
    "vivy_buffer_flushes": "counter",
    "vivy_buffers_discarded": "counter",
    "vivy_notes_written": "counter",
    "vivy_profile_updates": "counter",
    "vivy_profile_facts_rejected": "counter",
    "vivy_llm_requests": "counter",
    "vivy_llm_tokens": "counter",
    "vivy_llm_request_duration_seconds": "histogram",
    "vivy_retrieval_duration_seconds": "histogram",
    "vivy_actor_inbox_depth": "gauge",
    "vivy_actor_restarts": "counter",
    "vivy_outbox_buffers_pending": "gauge",
    "vivy_outbox_profile_updates_pending": "gauge",
    "vivy_scheduler_last_success_timestamp_seconds": "gauge",
    "vivy_scheduler_run_duration_seconds": "histogram",
    "vivy_scheduler_failures": "counter",
    "vivy_database_size_bytes": "gauge",
    "vivy_gateway_connected": "gauge",
    "vivy_shard_lease_held": "gauge",
    "vivy_shard_lease_epoch": "gauge",
    "vivy_shard_leases_lost": "counter",
    "vivy_replies": "counter",
    "vivy_commands": "counter",
    "vivy_catchup_messages": "counter",
    "vivy_build_info": "gauge",
}


@pytest.fixture
def metrics() -> Metrics:
    """A Metrics on a fresh registry."""
    return Metrics(CollectorRegistry(), version="1.2.3", llm_quality="offline")


def _families(metrics: Metrics) -> dict[str, str]:
    """Family name to type, parsed back from the text exposition."""
    text = generate_latest(metrics.registry).decode()
    return {
        family.name: family.type
        for family in text_string_to_metric_families(text)
        if not family.name.endswith("_created")
    }


def test_exposition_has_every_family_with_its_type(metrics: Metrics) -> None:
    """The text exposition contains exactly the expected families with the right types."""
    assert _families(metrics) == EXPECTED_FAMILIES


def test_counter_names_end_in_total(metrics: Metrics) -> None:
    """Counters are exposed with the _total suffix Prometheus expects."""
    text = generate_latest(metrics.registry).decode()
    assert "# TYPE vivy_messages_ingested_total counter" in text
    assert "# TYPE vivy_commands_total counter" in text


def test_two_instances_use_separate_registries() -> None:
    """Building Metrics twice on fresh registries does not collide (no global registry)."""
    first = Metrics(CollectorRegistry())
    second = Metrics(CollectorRegistry())
    first.open_buffers.set(3)
    assert second.registry.get_sample_value("vivy_open_buffers") == 0.0


def test_fixed_label_counters_start_at_zero(metrics: Metrics) -> None:
    """Every enum combination of a fixed-label counter exists at 0 before any event."""
    get = metrics.registry.get_sample_value
    for outcome in IngestOutcome:
        assert get("vivy_messages_ingested_total", {"outcome": outcome.value}) == 0.0
    for command in CommandName:
        for result in CommandOutcome:
            labels = {"command": command.value, "outcome": result.value}
            assert get("vivy_commands_total", labels) == 0.0
    for reason in Rejection:
        assert get("vivy_profile_facts_rejected_total", {"reason": reason.value}) == 0.0
    assert get("vivy_scheduler_failures_total", {"pass": "consolidation"}) == 0.0
    assert get("vivy_actor_restarts_total", {"actor": "note_writer"}) == 0.0
    assert get("vivy_retrieval_duration_seconds_count", {"path": "keyword_only"}) == 0.0


def test_configured_models_start_at_zero() -> None:
    """LLM series of the configured models exist at 0 before the first call."""
    metrics = Metrics(CollectorRegistry(), llm_models=[(LLMProvider.GEMINI, "gemini-2.5-flash")])
    labels = {
        "operation": "note",
        "provider": "gemini",
        "model": "gemini-2.5-flash",
        "outcome": "unavailable",
    }
    assert metrics.registry.get_sample_value("vivy_llm_requests_total", labels) == 0.0
    tokens = {
        "operation": "embed",
        "provider": "gemini",
        "model": "gemini-2.5-flash",
        "direction": "output",
    }
    assert metrics.registry.get_sample_value("vivy_llm_tokens_total", tokens) == 0.0


def test_enum_member_labels_count(metrics: Metrics) -> None:
    """Incrementing through an enum member moves exactly that series."""
    metrics.messages_ingested.labels(outcome=IngestOutcome.STORED).inc()
    metrics.messages_ingested.labels(IngestOutcome.STORED).inc(2)
    metrics.scheduler_failures.labels(SchedulerPass.CLUSTERING).inc()
    get = metrics.registry.get_sample_value
    assert get("vivy_messages_ingested_total", {"outcome": "stored"}) == 3.0
    assert get("vivy_messages_ingested_total", {"outcome": "edited"}) == 0.0
    assert get("vivy_scheduler_failures_total", {"pass": "clustering"}) == 1.0


@pytest.mark.parametrize(
    "value",
    ["stored", "123456789012345678", 42, RetrievalPath.FULL],
    ids=["plain-str", "snowflake", "int", "other-enum"],
)
def test_non_member_label_value_raises(metrics: Metrics, value: object) -> None:
    """A label value that is not a member of its enum is refused and creates no series."""
    before = generate_latest(metrics.registry)
    with pytest.raises(TypeError, match="outcome"):
        metrics.messages_ingested.labels(outcome=value)  # type: ignore[arg-type]
    assert generate_latest(metrics.registry) == before


def test_wrong_label_names_raise(metrics: Metrics) -> None:
    """Missing, unknown or mixed positional and named labels are refused."""
    with pytest.raises(TypeError):
        metrics.commands.labels(command=CommandName.LORE)
    with pytest.raises(TypeError):
        metrics.commands.labels(CommandName.LORE)
    with pytest.raises(TypeError):
        metrics.actor_restarts.labels(ActorKind.ROUTER, actor=ActorKind.ROUTER)
    with pytest.raises(TypeError):
        metrics.actor_restarts.labels(guild=ActorKind.ROUTER)


def test_free_model_label_rejects_empty(metrics: Metrics) -> None:
    """The model label takes any configured name but not an empty one."""
    chat, openai = LLMOperation.CHAT, LLMProvider.OPENAI
    metrics.llm_requests.labels(chat, openai, "my-model", LLMOutcome.OK).inc()
    with pytest.raises(ValueError, match="model"):
        metrics.llm_requests.labels(chat, openai, "", LLMOutcome.OK)
    with pytest.raises(TypeError, match="provider"):
        metrics.llm_requests.labels(chat, "ollama", "my-model", LLMOutcome.OK)
    labels = {"operation": "chat", "provider": "openai", "model": "my-model", "outcome": "ok"}
    assert metrics.registry.get_sample_value("vivy_llm_requests_total", labels) == 1.0


def test_observe_llm_updates_counters_and_histogram(metrics: Metrics) -> None:
    """observe_llm counts the request, both token directions and the latency."""
    metrics.observe_llm(
        operation="note",
        provider="openai",
        model="gemini-2.5-flash",
        outcome="ok",
        input_tokens=1200,
        output_tokens=300,
        seconds=1.5,
    )
    metrics.observe_llm(
        operation=LLMOperation.NOTE,
        provider=LLMProvider.OPENAI,
        model="gemini-2.5-flash",
        outcome=LLMOutcome.INVALID_OUTPUT,
        input_tokens=1000,
        output_tokens=0,
        seconds=0.2,
    )
    get = metrics.registry.get_sample_value
    ok = {"operation": "note", "provider": "openai", "model": "gemini-2.5-flash", "outcome": "ok"}
    bad = {**ok, "outcome": "invalid_output"}
    assert get("vivy_llm_requests_total", ok) == 1.0
    assert get("vivy_llm_requests_total", bad) == 1.0
    tokens = {"operation": "note", "provider": "openai", "model": "gemini-2.5-flash"}
    assert get("vivy_llm_tokens_total", {**tokens, "direction": "input"}) == 2200.0
    assert get("vivy_llm_tokens_total", {**tokens, "direction": "output"}) == 300.0
    assert get("vivy_llm_request_duration_seconds_count", ok) == 1.0
    assert get("vivy_llm_request_duration_seconds_sum", ok) == 1.5
    assert get("vivy_llm_request_duration_seconds_bucket", {**ok, "le": "1.0"}) == 0.0
    assert get("vivy_llm_request_duration_seconds_bucket", {**ok, "le": "2.5"}) == 1.0


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (LLMUnavailable("down"), "unavailable"),
        (LLMInvalidOutput("bad json"), "invalid_output"),
        (RuntimeError("bug"), "error"),
    ],
)
def test_llm_domain_outcome_is_the_label(metrics: Metrics, error: Exception, label: str) -> None:
    """The llm package's outcome of a failed call is taken as the label as it is."""
    metrics.llm_requests.labels(
        LLMOperation.EMBED, LLMProvider.OFFLINE, "embedding", outcome_of(error)
    ).inc()
    labels = {"operation": "embed", "provider": "offline", "model": "embedding", "outcome": label}
    assert metrics.registry.get_sample_value("vivy_llm_requests_total", labels) == 1.0


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("operation", "summarise", "unknown operation"),
        ("provider", "ollama", "unknown provider"),
        ("outcome", "timeout", "unknown outcome"),
        ("model", "", "empty or non-string model"),
        ("input_tokens", -1, "negative token"),
        ("seconds", -0.5, "negative or NaN duration"),
        ("seconds", float("nan"), "negative or NaN duration"),
    ],
)
def test_observe_llm_drops_bad_observations(
    metrics: Metrics, field: str, value: object, reason: str
) -> None:
    """observe_llm never raises (the meter contract): a bad observation is logged and dropped."""
    call: dict[str, object] = {
        "operation": "chat",
        "provider": "gemini",
        "model": "m",
        "outcome": "ok",
        "input_tokens": 1,
        "output_tokens": 1,
        "seconds": 0.1,
    }
    call[field] = value
    with capture_logs() as logs:
        metrics.observe_llm(**call)  # type: ignore[arg-type]
    assert [entry["event"] for entry in logs] == ["llm_observation_dropped"]
    assert reason in logs[0]["reason"]
    text = generate_latest(metrics.registry).decode()
    assert "vivy_llm_requests_total{" not in text
    assert "vivy_llm_tokens_total{" not in text


def test_retrieval_buckets_span_a_millisecond_to_a_second(metrics: Metrics) -> None:
    """Retrieval latency is resolved from 1 ms to 1 s."""
    histogram = metrics.retrieval_duration.labels(RetrievalPath.FULL)
    histogram.observe(0.0004)
    histogram.observe(0.03)
    get = metrics.registry.get_sample_value
    assert get("vivy_retrieval_duration_seconds_bucket", {"path": "full", "le": "0.001"}) == 1.0
    assert get("vivy_retrieval_duration_seconds_bucket", {"path": "full", "le": "0.025"}) == 1.0
    assert get("vivy_retrieval_duration_seconds_bucket", {"path": "full", "le": "0.05"}) == 2.0
    assert get("vivy_retrieval_duration_seconds_bucket", {"path": "full", "le": "1.0"}) == 2.0


def test_build_info_is_one_series_set_to_one(metrics: Metrics) -> None:
    """vivy_build_info holds a single series at 1, replaced by set_build_info."""
    get = metrics.registry.get_sample_value
    assert get("vivy_build_info", {"version": "1.2.3", "llm_quality": "offline"}) == 1.0
    metrics.set_build_info(version="1.2.4", llm_quality="gemini")
    assert get("vivy_build_info", {"version": "1.2.3", "llm_quality": "offline"}) is None
    assert get("vivy_build_info", {"version": "1.2.4", "llm_quality": "gemini"}) == 1.0


def test_no_label_carries_an_id(metrics: Metrics) -> None:
    """No family has a label named like a Discord id."""
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for sample in family.samples:
            assert not {"guild", "guild_id", "channel", "channel_id", "user", "user_id"} & set(
                sample.labels
            )


def test_observer_counts_a_batch_of_outcomes_at_once(metrics: Metrics) -> None:
    """An actor reports each outcome of a batch once, with its count."""
    observer = MetricsObserver(metrics)
    observer.ingested(IngestOutcome.STORED, 40)
    observer.ingested(IngestOutcome.DUPLICATE)
    observer.ingested(IngestOutcome.STORED, 2)
    get = metrics.registry.get_sample_value
    assert get("vivy_messages_ingested_total", {"outcome": "stored"}) == 42.0
    assert get("vivy_messages_ingested_total", {"outcome": "duplicate"}) == 1.0
    assert get("vivy_messages_ingested_total", {"outcome": "edited"}) == 0.0


def test_observer_shows_each_leased_shard(metrics: Metrics) -> None:
    """A fleet process shows a series per shard it leased, its epoch, and each lease lost."""
    observer = MetricsObserver(metrics)
    observer.lease_acquired(4, 1)
    observer.lease_acquired(5, 3)
    observer.lease_lost(5)
    get = metrics.registry.get_sample_value
    assert get("vivy_shard_lease_held", {"shard": "4"}) == 1.0
    assert get("vivy_shard_lease_held", {"shard": "5"}) == 0.0
    assert get("vivy_shard_lease_epoch", {"shard": "5"}) == 3.0
    assert get("vivy_shard_leases_lost_total") == 1.0
    assert get("vivy_shard_lease_held", {"shard": "6"}) is None
