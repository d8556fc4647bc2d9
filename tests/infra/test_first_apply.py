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


def test_the_eventarc_agent_and_its_role_are_the_projects_not_the_adapters(
    found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]
) -> None:
    # Issue 42, item 7: `terraform destroy` of one adapter removed roles/eventarc.serviceAgent from the project's
    # Eventarc agent, breaking every other trigger; two states holding the binding fought over it.
    owned = [
        a
        for a, (k, b) in found.items()
        if (k == "google_project_service_identity" and b["service"] == "eventarc.googleapis.com")
        or "roles/eventarc.serviceAgent" in json.dumps(b)
    ]
    assert not owned, f"the project's Eventarc agent (or its role) is in an adapter's state: {owned}"
    # A state that held the binding forgets it without removing it.
    # (in the root that takes over the releases' state: terraform/environments/production/moved.tf)
    text = (deployer.TERRAFORM_DIR / "environments" / "production" / "moved.tf").read_text()
    removed = re.search(
        r"removed \{\s*from = google_project_iam_member\.eventarc_agent\s*lifecycle \{\s*destroy = false", text
    )
    assert removed, "no removed block (destroy = false) for the binding earlier releases created"
    # The path makes both once per project, before the first build.
    readme = (deployer.REPOSITORY_ROOT / "README.md").read_text().split("\n## Deployment\n", 1)[1]
    step_one = readme.split("\n2. **", 1)[0]
    assert "gcloud beta services identity create --service=eventarc.googleapis.com" in step_one
    assert "--role=roles/eventarc.serviceAgent" in step_one
    for trigger in ("google_cloudfunctions2_function.adapter", "google_eventarc_trigger.source_rotation"):
        assert waits_for(trigger, "time_sleep.iam_propagation", found, locals_), trigger


def _every_address(text: str) -> set[str]:
    return {f"{m.group(2)}.{m.group(3)}" for m in _REFERENCE.finditer(text) if not m.group(1)}


def test_every_resource_calling_a_google_api_waits_after_the_apis(
    found: dict[str, tuple[str, dict[str, Any]]], locals_: dict[str, Any]
) -> None:
    # Issue 42, item 12: only the function and its triggers waited after enablement; Pub/Sub, Artifact Registry and
    # Monitoring resources were created seconds after their API and could fail with SERVICE_DISABLED.
    direct = [
        a
        for a, (k, b) in found.items()
        if not k.startswith("data.")
        and k != "time_sleep"
        and APIS in _every_address(json.dumps(b.get("depends_on", [])))
    ]
    assert not direct, f"depends on the APIs without the propagation wait: {direct}"
    for address, (kind, body) in sorted(found.items()):
        if kind.startswith("google_") and kind != "google_project_service" and "depends_on" in body:
            assert waits_for(address, "time_sleep.api_propagation", found, locals_), address
    for address in (
        "google_pubsub_topic.cluster_events",
        "google_pubsub_topic.dead_letter",
        "google_artifact_registry_repository.functions",
        "google_monitoring_alert_policy.function_errors",
        "google_logging_metric.reconcile_failures",
    ):
        if address in found:
            assert waits_for(address, "time_sleep.api_propagation", found, locals_), address


def test_the_waits_run_again_when_what_they_wait_for_changes(found: dict[str, tuple[str, dict[str, Any]]]) -> None:
    # Issue 42, item 12: a time_sleep waits on create only; a grant added on a later apply (a switch to a token
    # file) or an API a later release enables was not waited for.
    for sleep in ("time_sleep.iam_propagation", "time_sleep.api_propagation"):
        body = found[sleep][1]
        triggers = json.dumps(body.get("triggers", {}))
        for dependency in body["depends_on"]:
            address = dependency.strip("${}")
            assert address in triggers, f"{sleep}: {address} is waited for on create only (not in triggers)"


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
        "google_secret_manager_secret_iam_member.runtime_ca_bundle",  # likewise
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
