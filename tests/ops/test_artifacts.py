"""Checks of the files in ops/ and scripts/ that need no Prometheus: dashboard, unit, image."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tests.machine import wait_for_machine_packages
from vivy.metrics import Metrics

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "ops"


def _dashboard() -> dict[str, Any]:
    """The Grafana dashboard, parsed."""
    dashboard: dict[str, Any] = json.loads((OPS / "grafana" / "vivy-dashboard.json").read_text())
    return dashboard


def _panels() -> list[dict[str, Any]]:
    """Every non-row panel of the dashboard."""
    return [panel for panel in _dashboard()["panels"] if panel["type"] != "row"]


def test_dashboard_is_importable() -> None:
    """The dashboard has a recent schema and a ${DS_PROMETHEUS} datasource input used by panels."""
    dashboard = _dashboard()
    assert dashboard["schemaVersion"] >= 36
    assert [entry["name"] for entry in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    assert dashboard["__inputs"][0]["pluginId"] == "prometheus"
    for panel in _panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}"


def test_dashboard_panels_have_units_and_unique_ids() -> None:
    """Every panel states a unit, has targets, and panel ids are unique."""
    panels = _panels()
    for panel in panels:
        assert panel["fieldConfig"]["defaults"]["unit"], panel["title"]
        assert panel["targets"], panel["title"]
    ids = [panel["id"] for panel in _dashboard()["panels"]]
    assert len(ids) == len(set(ids))


def test_dashboard_covers_every_metric_family() -> None:
    """Each metric family Vivy exports appears in at least one dashboard query."""
    exprs = " ".join(target["expr"] for panel in _panels() for target in panel["targets"])
    used = set(re.findall(r"\bvivy_[a-z_]+", exprs))
    metrics = Metrics(CollectorRegistry())
    for family in metrics.registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        variants = {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        assert variants & used, f"{name} is on no dashboard panel"


def test_dashboard_latency_uses_histogram_quantiles() -> None:
    """LLM latency is shown as p50, p95 and p99 through histogram_quantile."""
    exprs = [target["expr"] for panel in _panels() for target in panel["targets"]]
    llm = [e for e in exprs if "vivy_llm_request_duration_seconds_bucket" in e]
    for quantile in ("0.5", "0.95", "0.99"):
        assert any(e.startswith(f"histogram_quantile({quantile},") for e in llm), quantile


def _unit(name: str = "vivy.service") -> configparser.ConfigParser:
    """A systemd unit, parsed (repeated keys keep the last value)."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(OPS / "systemd" / name)
    return parser


def _environment_files(name: str) -> list[str]:
    """Every EnvironmentFile= of a unit, in order (configparser keeps only the last)."""
    text = (OPS / "systemd" / name).read_text()
    return re.findall(r"^EnvironmentFile=(.*)$", text, flags=re.M)


def test_systemd_unit_runs_vivy_hardened() -> None:
    """The unit runs `vivy run` from an EnvironmentFile, restarts on failure and is hardened."""
    service = _unit()["Service"]
    assert service["ExecStart"].endswith("/vivy run")
    assert service["EnvironmentFile"].startswith("/etc/vivy/")
    assert service["Restart"] == "on-failure"
    assert service["TimeoutStopSec"] == "40s"
    assert service["User"] != "root"
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "CapabilityBoundingSet": "",
    }.items():
        assert service[key] == value, key


def test_fleet_template_runs_one_process_per_shard_range() -> None:
    """``vivy@0-3.service`` runs ``vivy run --shard-ids 0-3`` with the shared settings and
    its own (its metrics port), restarts after a lost lease, and is as hardened."""
    service = _unit("vivy@.service")["Service"]
    assert service["ExecStart"].endswith("/vivy run --shard-ids %i")
    assert _environment_files("vivy@.service") == [
        "/etc/vivy/vivy.env",
        "/etc/vivy/vivy-%i.env",
    ]
    assert service["Restart"] == "on-failure"
    assert service["User"] != "root"
    plain = _unit()["Service"]
    for key in (
        "NoNewPrivileges",
        "ProtectSystem",
        "ProtectHome",
        "PrivateTmp",
        "CapabilityBoundingSet",
        "SystemCallFilter",
        "TimeoutStopSec",
        "KillMode",
    ):
        assert service[key] == plain[key], key


@pytest.mark.parametrize(
    ("unit_file", "instance"),
    [("vivy.service", "vivy.service"), ("vivy@.service", "vivy@0-3.service")],
)
def test_systemd_unit_verifies(tmp_path: Path, unit_file: str, instance: str) -> None:
    """systemd-analyze accepts the unit (an instance of the template) without warnings and
    rates its exposure as low."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    text = (OPS / "systemd" / unit_file).read_text()
    vivy = Path(sys.executable).with_name("vivy")
    executable = vivy if vivy.exists() else Path("/bin/true")
    text = re.sub(r"^ExecStart=\S+", f"ExecStart={executable}", text, flags=re.M)
    unit = tmp_path / instance
    unit.write_text(text)
    verify = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert verify.returncode == 0, verify.stderr
    assert instance not in verify.stderr, verify.stderr
    security = subprocess.run(
        [analyze, "security", "--offline=true", "--threshold=20", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert security.returncode == 0, security.stdout[-2000:]


def test_containerfile_runs_unprivileged() -> None:
    """The image is python:3.11-slim, installs the package, runs `vivy run` as a non-root user."""
    lines = [
        line.strip()
        for line in (OPS / "Containerfile").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert lines[0] == "FROM python:3.11-slim"
    assert any(line.startswith("RUN pip install .") for line in lines)
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and not users[-1].startswith(("root", "0"))
    assert "EXPOSE 9464" in lines
    assert any(line.startswith("VOLUME") and "/var/lib/vivy" in line for line in lines)
    assert lines[-1] == 'CMD ["vivy", "run"]'


def test_install_script_is_idempotent_when_installed() -> None:
    """With promtool present the install script changes nothing and prints where it is."""
    script = REPO / "scripts" / "install-prometheus.sh"
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    syntax = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    wait_for_machine_packages()
    promtool = shutil.which("promtool")
    if promtool is None or shutil.which("prometheus") is None:
        pytest.skip("promtool/prometheus not installed; running the script would install them")
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"promtool: {promtool}" in result.stdout


def test_readme_explains_every_ops_file() -> None:
    """ops/README.md mentions every file under ops/ and the install script."""
    readme = (OPS / "README.md").read_text()
    files = [p.relative_to(OPS).as_posix() for p in OPS.rglob("*") if p.is_file()]
    for name in [*files, "scripts/install-prometheus.sh"]:
        if name == "README.md":
            continue
        assert name in readme, name


def test_readme_alert_table_lists_every_alert() -> None:
    """ops/README.md's alert table has a row for every alert rule in alerts.yml."""
    readme = (OPS / "README.md").read_text()
    rules = re.findall(r"- alert: (\w+)", (OPS / "prometheus" / "alerts.yml").read_text())
    assert rules
    for name in rules:
        assert f"| `{name}` |" in readme, name
