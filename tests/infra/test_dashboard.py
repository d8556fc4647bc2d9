"""The Cloud Monitoring dashboard (terraform/dashboard.json.tftpl): rendered by a real terraform, then parsed as
the Monitoring API's own Dashboard message (google-cloud-monitoring-dashboards), so a misspelled field fails."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from google.cloud.monitoring_dashboard_v1.types import Dashboard
from google.protobuf import json_format

from tests.infra import reality

TERRAFORM_DIR = reality.REPOSITORY_ROOT / "terraform"
TEMPLATE = TERRAFORM_DIR / "dashboard.json.tftpl"
STUBS = {
    "function_name": "hyperfleet-pullsecret-adapter",
    "adapter_name": "pullsecret",
    "reconciles_metric": "logging.googleapis.com/user/hyperfleet_pullsecret_adapter_reconciles",
    "events_metric": "logging.googleapis.com/user/hyperfleet_adapter_events_processed_total",
    "duration_metric": "logging.googleapis.com/user/hyperfleet_adapter_event_processing_duration_seconds",
    "api_errors_metric": "logging.googleapis.com/user/hyperfleet_pullsecret_adapter_api_errors",
    "dead_letter_topic": "hyperfleet-pullsecret-adapter-dead-letter",
    "dead_letter_subscription": "hyperfleet-pullsecret-adapter-dead-letter",
}


def render(template: Path, work: Path) -> str:
    binary, why = reality.terraform((1, 5))
    if binary is None:
        reality.missing(why)
    assert binary is not None
    module = work / "module"
    module.mkdir(parents=True)
    shutil.copy(template, module / "dashboard.json.tftpl")
    values = ", ".join(f"{key} = {json.dumps(value)}" for key, value in STUBS.items())
    (module / "main.tf").write_text(
        f'output "dashboard" {{\n  value = templatefile("${{path.module}}/dashboard.json.tftpl", {{ {values} }})\n}}\n'
    )
    env = reality.terraform_env(work)
    for command in (["init", "-input=false"], ["apply", "-auto-approve", "-input=false"]):
        completed = subprocess.run(
            [str(binary), *command, "-no-color"], cwd=module, env=env, capture_output=True, text=True, check=False
        )
        assert completed.returncode == 0, f"terraform {command[0]}: {completed.stdout}\n{completed.stderr}"
    output = subprocess.run(
        [str(binary), "output", "-raw", "dashboard"], cwd=module, env=env, capture_output=True, text=True, check=True
    )
    return output.stdout


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rendered: dict[str, Any] = json.loads(render(TEMPLATE, tmp_path_factory.mktemp("dashboard")))
    return rendered


def test_the_template_variables_are_the_ones_terraform_passes() -> None:
    used = set(re.findall(r"\$\{(\w+)\}", TEMPLATE.read_text()))
    assert used == set(STUBS)
    monitoring = (TERRAFORM_DIR / "monitoring.tf").read_text()
    call = monitoring[monitoring.index('templatefile("${path.module}/dashboard.json.tftpl"') :]
    call = call[: call.index("})")]
    assert set(re.findall(r"^\s*(\w+)\s*=", call, re.MULTILINE)) == set(STUBS)


def test_the_dashboard_is_a_valid_monitoring_dashboard(dashboard: dict[str, Any]) -> None:
    json_format.ParseDict(dashboard, Dashboard.pb()())  # raises on any field the API does not have


def test_the_dashboard_shows_what_an_operator_watches_during_a_rotation(dashboard: dict[str, Any]) -> None:
    filters = [
        data_set["timeSeriesQuery"]["timeSeriesFilter"]["filter"]
        for tile in dashboard["mosaicLayout"]["tiles"]
        for data_set in tile["widget"]["xyChart"]["dataSets"]
    ]
    text = "\n".join(filters)
    for needle in (
        STUBS["reconciles_metric"],  # events by result
        STUBS["events_metric"],  # events by the framework's status
        STUBS["duration_metric"],  # event processing duration
        "SecretManagerService.AddSecretVersion",  # Secret Manager writes
        'response_code="429"',  # quota refusals
        STUBS["dead_letter_topic"],  # dead-lettered events
    ):
        assert needle in text, needle
    tiles = dashboard["mosaicLayout"]["tiles"]
    cells = {
        (x, y)
        for t in tiles
        for x in range(t["xPos"], t["xPos"] + t["width"])
        for y in range(t["yPos"], t["yPos"] + t["height"])
    }
    assert len(cells) == sum(t["width"] * t["height"] for t in tiles), "tiles overlap"


def test_the_dashboard_is_named_and_built_as_a_framework_adapters(dashboard: dict[str, Any]) -> None:
    """hyperfleet-adapter 3f746a5 pkg/metrics/recorder.go names the metrics a fleet dashboard queries."""
    assert dashboard["displayName"].startswith("hyperfleet-adapter pullsecret ")
    monitoring = (TERRAFORM_DIR / "monitoring.tf").read_text()
    for name in (
        "hyperfleet_adapter_events_processed_total",
        "hyperfleet_adapter_event_processing_duration_seconds",
        "hyperfleet_adapter_errors_total",
    ):
        assert f'"${{local.fleet_metric_prefix}}{name}"' in monitoring, name  # name_suffix's, or the variable's
    for label in ("component", "version", "adapter_name", "status", "error_type"):
        assert f'key         = "{label}"' in monitoring, label
    assert "bounds = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120]" in monitoring


def test_the_check_catches_a_misspelled_field(tmp_path: Path) -> None:
    broken = tmp_path / "dashboard.json.tftpl"
    broken.write_text(TEMPLATE.read_text().replace('"alignmentPeriod"', '"alignementPeriod"', 1))
    rendered = json.loads(render(broken, tmp_path / "work"))
    with pytest.raises(json_format.ParseError, match="alignementPeriod"):
        json_format.ParseDict(rendered, Dashboard.pb()())
