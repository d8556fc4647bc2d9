"""The order a first `terraform apply` on a fresh project needs (issue 21, items 2-4), read from the HCL:
every Google resource and data source waits for the APIs, the Eventarc service agent exists and holds its role,
and the function waits for its grants to propagate."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.infra import deployer_permissions as deployer

_REFERENCE = re.compile(r"(?<![\w.])(data\.)?(google_[a-z0-9_]+|time_sleep|terraform_data)\.([a-z0-9_]+)")
_LOCAL = re.compile(r"(?<![\w.])local\.([a-z0-9_]+)")
APIS = "google_project_service.apis"
# What the data sources wait for instead (test_data_source_deferral.py): the one API they call, which never changes.
RESOURCE_MANAGER = "google_project_service.resource_manager"


@pytest.fixture(scope="module")
def found() -> dict[str, tuple[str, dict[str, Any]]]:
    return deployer.resources()


@pytest.fixture(scope="module")
def locals_() -> dict[str, Any]:
    import hcl2

    merged: dict[str, Any] = {}
    for path in sorted(deployer.TERRAFORM_DIR.glob("*.tf")):
        with path.open() as handle:
            for block in hcl2.load(handle, serialization_options=deployer.OPTIONS).get("locals", []):
                merged.update(block)
    return merged


def references(value: Any, locals_: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[str]:
    """Addresses VALUE refers to, directly or through locals."""
    text = json.dumps(value)
    found = {f"{m.group(1) or ''}{m.group(2)}.{m.group(3)}" for m in _REFERENCE.finditer(text)}
    for name in set(_LOCAL.findall(text)) - seen:
        if name in locals_:
            found |= references(locals_[name], locals_, seen | {name})
    return found


def waits_for(address: str, target: str, found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]) -> bool:
    """Whether ADDRESS depends, through references or depends_on, on TARGET."""
    todo, seen = [address], set()
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current in seen or current not in found:
            continue
        seen.add(current)
        body = {k: v for k, v in found[current][1].items() if k != "__is_block__"}
        todo.extend(references(body, locals_) - {current})
    return False


def test_every_google_resource_and_data_source_waits_for_the_apis(
    found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]
) -> None:
    # A data source read before cloudresourcemanager.googleapis.com is on fails the first plan (issue 21, item 3).
    early = [
        address
        for address, (kind, _body) in sorted(found.items())
        if kind.removeprefix("data.").startswith("google_")
        and kind != "google_project_service"
        and not waits_for(address, RESOURCE_MANAGER if kind.startswith("data.") else APIS, found, locals_)
    ]
    assert not early, f"read or created before the APIs are enabled: {early}"


def test_the_eventarc_service_agent_is_created_granted_and_waited_for(
    found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]
) -> None:
    identities = [
        a
        for a, (k, b) in found.items()
        if k == "google_project_service_identity" and b["service"] == "eventarc.googleapis.com"
    ]
    assert identities == ["google_project_service_identity.eventarc"], identities
    grants = [
        a
        for a, (k, b) in found.items()
        if k == "google_project_iam_member" and b["role"] == "roles/eventarc.serviceAgent"
    ]
    assert len(grants) == 1, grants
    grant = found[grants[0]][1]
    assert grant["project"] == "${var.project_id}"
    assert grant["member"] == "serviceAccount:service-${local.project_number}@gcp-sa-eventarc.iam.gserviceaccount.com"
    assert waits_for(grants[0], identities[0], found, locals_)
    for trigger in ("google_cloudfunctions2_function.adapter", "google_eventarc_trigger.source_rotation"):
        assert waits_for(trigger, "time_sleep.iam_propagation", found, locals_), trigger
    assert "${" + grants[0] + "}" in found["time_sleep.iam_propagation"][1]["depends_on"]


def test_the_function_waits_for_its_grants_to_propagate(found: dict[str, tuple[str, dict[str, Any]]]) -> None:
    sleep = found["time_sleep.iam_propagation"][1]
    # The provider's own gen2 builder example waits 60 s: the default, and the variable refuses less.
    assert sleep["create_duration"] == "${var.iam_propagation_wait_seconds}s"
    wait = _variables()["iam_propagation_wait_seconds"]
    assert wait["default"] >= 60
    assert "var.iam_propagation_wait_seconds >= 60" in wait["validation"][0]["condition"]
    waited = set(sleep["depends_on"])
    for grant in (
        "google_project_iam_member.build_log_writer",
        "google_project_iam_member.build_source_reader",
        "google_artifact_registry_repository_iam_member.build_writer",
        "google_secret_manager_secret_iam_member.runtime_hyperfleet_token",
        "google_secret_manager_secret_iam_member.runtime_pull_secret_service_token",  # mounted at first start
        "google_service_account_iam_member.pubsub_agent_trigger_token",
    ):
        assert "${" + grant + "}" in waited, grant
    function = found["google_cloudfunctions2_function.adapter"][1]
    direct = [d for d in function["depends_on"] if re.search(r"_iam_member\.", d)]
    assert not direct, f"the function depends on grants without the propagation wait: {direct}"
    assert "${time_sleep.iam_propagation}" in function["depends_on"]


def _seconds(found: dict[str, tuple[str, dict[str, Any]]], sleep: str) -> str:
    return str(found[sleep][1]["create_duration"])


def test_the_alert_policies_wait_for_their_log_based_metrics(
    found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]
) -> None:
    # Issue 32, item 2: an alert policy created right after its log-based metric fails with "Cannot find metric(s)".
    metrics = [a for a, (k, _b) in found.items() if k == "google_logging_metric"]
    assert metrics
    waited = set(found["time_sleep.log_metrics"][1]["depends_on"])
    assert {"${" + m + "}" for m in metrics} <= waited, "the wait must follow every log-based metric"
    assert _seconds(found, "time_sleep.log_metrics") == "${var.log_metric_wait_seconds}s"
    on_metrics = [
        a
        for a, (k, b) in found.items()
        if k == "google_monitoring_alert_policy" and "google_logging_metric." in json.dumps(b)
    ]
    assert len(on_metrics) >= 3, on_metrics
    early = [a for a in on_metrics if "${time_sleep.log_metrics}" not in found[a][1].get("depends_on", [])]
    assert not early, f"alert policies on log-based metrics created without the wait: {early}"


def test_the_function_and_the_triggers_wait_after_the_apis_are_enabled(
    found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]
) -> None:
    # Issue 32, item 3: SERVICE_DISABLED right after enablement is not retried by the provider.
    sleep = found["time_sleep.api_propagation"][1]
    assert {APIS, "google_project_service.compute"} <= {d.strip("${}") for d in sleep["depends_on"]}
    assert _seconds(found, "time_sleep.api_propagation") == "${var.api_propagation_wait_seconds}s"
    for configured in ("google_cloudfunctions2_function.adapter", "google_eventarc_trigger.source_rotation"):
        assert "${time_sleep.api_propagation}" in found[configured][1]["depends_on"], configured


def _variables() -> dict[str, Any]:
    import hcl2

    with (deployer.TERRAFORM_DIR / "variables.tf").open() as handle:
        blocks = hcl2.load(handle, serialization_options=deployer.OPTIONS).get("variable", [])
    return {name: body for block in blocks for name, body in block.items()}


def test_the_eventarc_agent_wait_is_a_variable() -> None:
    variables = _variables()
    assert _variable_default(variables, "iam_propagation_wait_seconds") == 60
    assert "#25294" in variables["iam_propagation_wait_seconds"]["description"]
    assert deployer.resources()["time_sleep.iam_propagation"][1]["create_duration"] == (
        "${var.iam_propagation_wait_seconds}s"
    )
    readme = (deployer.TERRAFORM_DIR / "README.md").read_text()
    assert "iam_propagation_wait_seconds" in readme and "#25294" in readme


def _variable_default(variables: dict[str, Any], name: str) -> Any:
    assert name in variables, f"no variable {name}"
    return variables[name].get("default")
