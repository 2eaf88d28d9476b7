"""Real-component tests of the Prometheus side of ops/: promtool and a live Prometheus.

promtool and prometheus come from scripts/install-prometheus.sh. Without them these tests
skip, unless VIVY_REQUIRE_PROMETHEUS=1 (set in CI), in which case they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tests.machine import wait_for_machine_packages
from vivy.metrics import (
    ActorKind,
    CloseReason,
    CommandName,
    CommandOutcome,
    IngestOutcome,
    LLMProvider,
    Metrics,
    NoteType,
    ProfileUpdateOutcome,
    Rejection,
    ReplyOutcome,
    RetrievalPath,
    SchedulerPass,
)

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "ops" / "prometheus"
DASHBOARD = REPO / "ops" / "grafana" / "vivy-dashboard.json"
#: Upper bound for waiting on the live Prometheus (start-up, first scrapes, rule loading).
WAIT_SECONDS = 30.0
ALERT_NAMES = {
    "VivyDown",
    "VivySchedulerStale",
    "VivyLLMErrorRatio",
    "VivyOutboxBacklogGrowing",
    "VivyNothingIngested",
    "VivyShardLeaseLost",
}


def _binary(name: str) -> str:
    """Path of ``name``; skip without it, or fail when VIVY_REQUIRE_PROMETHEUS=1 (once
    ``scripts/check`` has had its chance to install it)."""
    wait_for_machine_packages()
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not on PATH; run scripts/install-prometheus.sh"
        if os.environ.get("VIVY_REQUIRE_PROMETHEUS") == "1":
            pytest.fail(f"VIVY_REQUIRE_PROMETHEUS=1 but {message}", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def promtool() -> str:
    """The promtool binary."""
    return _binary("promtool")


@pytest.fixture(scope="module")
def prometheus_binary() -> str:
    """The prometheus binary."""
    return _binary("prometheus")


def _sample_metrics() -> Metrics:
    """A Metrics on a fresh registry with every family holding some data."""
    metrics = Metrics(
        CollectorRegistry(),
        llm_models=[(LLMProvider.GEMINI, "gemini-2.5-flash")],
        llm_quality="gemini",
    )
    metrics.messages_ingested.labels(IngestOutcome.STORED).inc(40)
    metrics.messages_ingested.labels(IngestOutcome.EXCLUDED_BOT).inc(3)
    metrics.open_buffers.set(4)
    metrics.buffer_flushes.labels(CloseReason.INACTIVITY).inc(2)
    metrics.notes_written.labels(NoteType.CONVERSATION).inc(2)
    metrics.profile_updates.labels(ProfileUpdateOutcome.APPLIED).inc(3)
    metrics.profile_facts_rejected.labels(Rejection.UNGROUNDED).inc()
    for outcome, seconds in (("ok", 1.2), ("ok", 0.8), ("unavailable", 30.0)):
        metrics.observe_llm(
            operation="note",
            provider="gemini",
            model="gemini-2.5-flash",
            outcome=outcome,
            input_tokens=900,
            output_tokens=150,
            seconds=seconds,
        )
    metrics.retrieval_duration.labels(RetrievalPath.FULL).observe(0.012)
    metrics.actor_inbox_depth.labels(ActorKind.CHANNEL).set(7)
    metrics.actor_restarts.labels(ActorKind.NOTE_WRITER).inc()
    metrics.outbox_buffers_pending.set(1)
    metrics.outbox_profile_updates_pending.set(2)
    metrics.scheduler_last_success.set(time.time() - 3600)
    metrics.scheduler_duration.observe(95.0)
    metrics.scheduler_failures.labels(SchedulerPass.CONSOLIDATION).inc()
    metrics.database_size.set(12_345_678)
    metrics.gateway_connected.set(1)
    metrics.replies.labels(ReplyOutcome.ANSWERED).inc(5)
    metrics.commands.labels(CommandName.PROFILE, CommandOutcome.OK).inc()
    return metrics


#: Families with a series per leased shard, which only processes of a PostgreSQL fleet have.
FLEET_ONLY = {"vivy_shard_lease_held", "vivy_shard_lease_epoch"}


def _family_names(metrics: Metrics) -> set[str]:
    """Names of the time series families Vivy exposes (without _created)."""
    names = set()
    for family in metrics.registry.collect():
        suffix = "_total" if family.type == "counter" else ""
        names.add(family.name + suffix)
    return names


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a command with captured text output and a timeout."""
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def test_promtool_accepts_exposition(promtool: str) -> None:
    """promtool check metrics finds no problem in a real Vivy exposition."""
    exposition = generate_latest(_sample_metrics().registry).decode()
    result = subprocess.run(
        [promtool, "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""
    assert result.stderr.strip() == ""


def test_promtool_checks_rules(promtool: str) -> None:
    """promtool check rules accepts alerts.yml with its six rules."""
    result = _run(promtool, "check", "rules", str(PROMETHEUS_DIR / "alerts.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 7 rules found" in result.stdout


def test_promtool_unit_tests_pass(promtool: str) -> None:
    """promtool test rules runs alerts_test.yml and every case passes."""
    result = _run(promtool, "test", "rules", str(PROMETHEUS_DIR / "alerts_test.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_alert_unit_tests_cover_every_alert() -> None:
    """alerts_test.yml has firing and non-firing checks for every alert in alerts.yml."""
    rules = (PROMETHEUS_DIR / "alerts.yml").read_text()
    tests = (PROMETHEUS_DIR / "alerts_test.yml").read_text()
    assert set(re.findall(r"- alert: (\w+)", rules)) == ALERT_NAMES
    for name in ALERT_NAMES:
        checks = re.findall(
            rf"alertname: {name}\n\s+exp_alerts:(.*?)(?=\n\s+- eval_time|\n\s+- name|\Z)",
            tests,
            flags=re.S,
        )
        assert any(check.strip() == "[]" for check in checks), f"{name} never checked quiet"
        assert any("exp_labels" in check for check in checks), f"{name} never checked firing"


def test_promtool_checks_config(promtool: str) -> None:
    """promtool check config accepts prometheus.yml and finds its rule file."""
    result = _run(promtool, "check", "config", str(PROMETHEUS_DIR / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


# ----------------------------------------------------------------------------- live Prometheus


@dataclass(frozen=True)
class LivePrometheus:
    """A running Prometheus scraping a running MetricsServer."""

    url: str
    metrics: Metrics

    def api(self, path: str, **params: str) -> dict[str, Any]:
        """GET ``/api/v1/<path>`` and return the decoded JSON (also for 4xx answers)."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=5) as r:
                body: dict[str, Any] = json.load(r)
        except urllib.error.HTTPError as error:
            with error:
                raw = error.read()
            try:
                body = json.loads(raw)
            except ValueError:
                # Until it is ready, Prometheus answers 503 in plain text: not an answer yet.
                raise ConnectionError(f"{error.code} from Prometheus: {raw[:200]!r}") from error
        return body


def _free_port() -> int:
    """A currently unused loopback TCP port (Prometheus cannot report an ephemeral one)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for(condition: Any, what: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``condition()`` until true, failing after WAIT_SECONDS or if Prometheus exits."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"prometheus exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if condition():
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def live(
    prometheus_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LivePrometheus]:
    """Prometheus on loopback scraping a running ``vivy demo`` every second (its sentences
    hashed, ``tests.hashed_vivy``: the metrics are the test's subject, not the model)."""
    workdir = tmp_path_factory.mktemp("prometheus")
    shutil.copy(PROMETHEUS_DIR / "alerts.yml", workdir / "alerts.yml")
    vivy_port = _free_port()
    demo_log = workdir / "demo.log"
    with demo_log.open("wb") as demo_out:
        demo = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.hashed_vivy",
                "demo",
                "--metrics-port",
                str(vivy_port),
                "--linger",
                str(WAIT_SECONDS + 30),
            ],
            stdout=demo_out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={
                **os.environ,
                "GEMINI_API_KEY": "",
                "MEMORY_GEMINI_TOKEN": "",
                "PYTHONPATH": str(REPO),
            },
        )
    config = workdir / "prometheus.yml"
    config.write_text(
        "global:\n"
        "  scrape_interval: 1s\n"
        "  scrape_timeout: 1s\n"
        "  evaluation_interval: 1s\n"
        "rule_files: [alerts.yml]\n"
        "scrape_configs:\n"
        "  - job_name: vivy\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{vivy_port}']\n"
    )
    port = _free_port()
    log = workdir / "prometheus.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [
                prometheus_binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
    try:
        live = LivePrometheus(url=f"http://127.0.0.1:{port}", metrics=_sample_metrics())

        def scraped() -> bool:
            if demo.poll() is not None:
                pytest.fail(f"vivy demo exited ({demo.returncode}):\n{demo_log.read_text()}")
            up = live.api("query", query='up{job="vivy"} == 1')["data"]["result"]
            done = live.api("query", query="vivy_scheduler_last_success_timestamp_seconds > 0")
            return bool(up) and bool(done["data"]["result"])

        _wait_for(scraped, "vivy demo scraped after its nightly jobs ran", process, log)
        yield live
    finally:
        for child in (process, demo):
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=10)


def test_prometheus_scrapes_every_family(live: LivePrometheus) -> None:
    """Prometheus scraping ``vivy demo`` has the job up and a series for every Vivy family."""
    up = live.api("query", query='up{job="vivy"}')["data"]["result"]
    assert [sample["value"][1] for sample in up] == ["1"]
    series = live.api("series", **{"match[]": '{__name__=~"vivy_.+", job="vivy"}'})["data"]
    names = {entry["__name__"] for entry in series}
    scraped = {re.sub(r"_bucket$", "", name) for name in names}
    # A SQLite demo leases no shard: the per-shard lease series exist in a fleet only.
    assert _family_names(live.metrics) - FLEET_ONLY <= scraped
    assert not FLEET_ONLY & scraped
    stored = live.api("query", query='vivy_messages_ingested_total{outcome="stored"}')
    assert stored["data"]["result"][0]["value"][1] == "399"  # the demo's human messages


def _dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target, Grafana variables substituted."""
    dashboard = json.loads(DASHBOARD.read_text())
    substitutions = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h"}
    for variable in dashboard["templating"]["list"]:
        substitutions[variable["name"]] = variable.get("allValue") or ".*"
    expressions = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in sorted(substitutions.items(), key=lambda kv: -len(kv[0])):
                expr = expr.replace(f"${{{name}}}", value).replace(f"${name}", value)
            assert "$" not in expr, f"unsubstituted variable in {panel['title']!r}: {expr}"
            expressions.append((panel["title"], expr))
    return expressions


def test_dashboard_queries_run(live: LivePrometheus) -> None:
    """Every PromQL expression of the Grafana dashboard is accepted by the live Prometheus."""
    expressions = _dashboard_expressions()
    assert len(expressions) >= 25
    failures = []
    for title, expr in expressions:
        answer = live.api("query", query=expr)
        if answer.get("status") != "success":
            failures.append(f"{title}: {expr}: {answer.get('error')}")
    assert failures == []


def test_alert_rules_load_and_evaluate(live: LivePrometheus) -> None:
    """The live Prometheus loads alerts.yml and evaluates every rule without error."""

    def rules() -> list[dict[str, Any]]:
        groups = live.api("rules", type="alert")["data"]["groups"]
        return [rule for group in groups for rule in group["rules"]]

    deadline = time.monotonic() + WAIT_SECONDS  # a hang guard, not a measured time
    while any(rule.get("lastEvaluation", "").startswith("0001") for rule in rules()):
        if time.monotonic() > deadline:
            pytest.fail("rules were never evaluated")
        time.sleep(0.25)
    loaded = rules()
    assert {rule["name"] for rule in loaded} == ALERT_NAMES
    assert [rule["health"] for rule in loaded] == ["ok"] * 7
