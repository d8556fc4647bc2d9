"""The fan-out topic in both source modes (issue 48, item 5; issue 51, item 11).

`python -m pullsecret rekey` publishes reconcile events on ADAPTER_TOPIC, the adapter's own fan-out topic, in both
source modes; the topic, its trigger, the runtime's publisher grant, the trigger's dead-letter step and rekey's own
account existed only with the platform source's rotation, which service mode refuses, so a deployed service-mode
instance could not run rekey. Which of these a configuration creates is each resource's count (or for_each),
evaluated here by the real terraform over the module's variables.tf, example.tfvars and the mode's overrides.
And every trigger whose subscription dead-letters has a condition in the "events dead-lettered" alert.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.infra import deployer_permissions, reality

TERRAFORM = reality.REPOSITORY_ROOT / "terraform"
SERVICE = {
    "pull_secret_source_secret": '""',
    "pull_secret_service_url": '"https://pull-secrets.example.com"',
    "enable_source_rotation": "false",
}
MODES = {"platform": {}, "service": SERVICE}
# What a deployment needs to run rekey and to see its events fail (resource -> why).
FAN_OUT = {
    "google_pubsub_topic.fan_out": "ADAPTER_TOPIC",
    "google_eventarc_trigger.fan_out": "its events reach the function",
    "google_pubsub_topic_iam_member.runtime_fan_out_publisher": "the function's continuations",
    "terraform_data.fan_out_trigger_dead_letter": "its trigger's dead-letter policy",
    "google_service_account.rekey": "rekey's own identity",
    "google_service_account_iam_member.operator_rekey": "operators act as it (not as the runtime account)",
    "google_pubsub_topic_iam_member.rekey_fan_out_publisher": "rekey publishes",
    "google_project_iam_member.rekey_records": "its progress records",
    "google_project_iam_member.rekey_record_creator": "its first record",
}
# Locals the counts read, taken as written in terraform/*.tf (single-line definitions).
LOCALS = ("operators", "rekey_account", "secret_project_ids", "pull_secret_service", "fan_out_topic_id")


def _local(name: str) -> str:
    for path in sorted(TERRAFORM.glob("*.tf")):
        match = re.search(rf"^  {name} += (.*)$", path.read_text(), re.M)
        if match:
            return f"  {name} = {match.group(1)}"
    return ""  # absent (today's main has no rekey_account): the count that reads it fails to evaluate


def _instances(body: dict[str, Any]) -> str:
    """The number of instances, as an HCL expression."""
    for key, wrap in (("count", "{}"), ("for_each", "length({})")):
        if key in body:
            return wrap.format(str(body[key]).removeprefix("${").removesuffix("}"))
    return "1"


def evaluate(mode: dict[str, str], work: Path) -> dict[str, Any]:
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    work.mkdir(parents=True)
    shutil.copy(TERRAFORM / "variables.tf", work / "variables.tf")
    tfvars = (TERRAFORM / "example.tfvars").read_text()
    for name, value in mode.items():
        tfvars = re.sub(rf"^{name}\s*=.*$", "", tfvars, flags=re.M) + f"\n{name} = {value}\n"
    (work / "values.auto.tfvars").write_text(tfvars + '\noperators = ["group:hyperfleet-oncall@example.com"]\n')
    found = deployer_permissions.resources(TERRAFORM)
    lines = ["locals {", *(_local(n) for n in LOCALS), "}"]
    for address in FAN_OUT:
        body = found[address][1] if address in found else {"count": "0"}
        lines.append(f'output "{address.replace(".", "__")}" {{\n  value = {_instances(body)}\n}}')
    lines.append('output "adapter_topic" {\n  value = local.fan_out_topic_id\n}')
    text = "\n".join(lines) + "\n"
    # The topic's id is known after apply only: a stand-in of its form.
    stub = '"projects/hyperfleet-adapters-prod/topics/hyperfleet-pullsecret-adapter-fan-out"'
    text = text.replace("google_pubsub_topic.fan_out[0].id", stub).replace("google_pubsub_topic.fan_out.id", stub)
    (work / "main.tf").write_text(text)
    return reality.terraform_outputs(terraform, work)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_rekey_can_run_from_a_deployment_in_either_mode(mode: str, tmp_path: Path) -> None:
    outputs = evaluate(MODES[mode], tmp_path / "module")
    missing = {a: why for a, why in FAN_OUT.items() if not outputs[a.replace(".", "__")]}
    assert not missing, f"{mode} mode creates none of {missing}"
    assert outputs["adapter_topic"].endswith("-fan-out"), outputs["adapter_topic"]  # ADAPTER_TOPIC is set


def _body(kind: str, name: str) -> dict[str, Any]:
    return deployer_permissions.resources(TERRAFORM)[f"{kind}.{name}"][1]


def test_every_trigger_that_dead_letters_has_an_alert_condition() -> None:
    # Issue 51, item 11: the fan-out trigger's subscription dead-letters too, and the alert watched Sentinel's alone.
    steps = {
        address: body
        for address, (kind, body) in deployer_permissions.resources(TERRAFORM).items()
        if kind == "terraform_data" and "DEAD_LETTER_TOPIC" in str(body.get("provisioner", ""))
    }
    assert {"terraform_data.trigger_dead_letter", "terraform_data.fan_out_trigger_dead_letter"} <= set(steps)
    alert = _body("google_monitoring_alert_policy", "dead_lettered")
    filters = [c["condition_threshold"][0]["filter"] for c in alert["conditions"]]
    with (TERRAFORM / "monitoring.tf").open() as handle:
        monitoring_locals: dict[str, str] = {}
        for block in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS).get("locals", []):
            monitoring_locals.update(block)
    for address, body in steps.items():
        trigger = str(body["provisioner"][0]["local-exec"]["environment"]["TRIGGER"]).removeprefix("${").rstrip("}")
        covering = [
            f
            for f in filters
            if "dead_letter_message_count" in f
            and (
                trigger.removesuffix(".name") in f
                or any(trigger in str(v) and f"local.{k}" in f for k, v in monitoring_locals.items())
            )
        ]
        assert covering, f"{address}: its trigger {trigger} dead-letters, and no alert condition watches it"
    assert alert.get("combiner") == "OR" and "count" not in alert  # either fires it, in every mode


def _terraform_in(terraform: Path, work: Path, env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(terraform), *command, "-input=false", "-no-color"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


COUNTED = 'resource "terraform_data" "fan_out" {\n  count = 1\n  input = "a"\n}\n'
PROTECTED = 'resource "terraform_data" "fan_out" {\n  input = "a"\n  lifecycle {\n    prevent_destroy = true\n  }\n}\n'
CALL = 'module "adapter" {\n  source = "./m"\n}\n'


def test_an_existing_fan_out_keeps_its_topic(tmp_path: Path) -> None:
    # The fan-out had `count` (source rotation only); it has none now. A state from before the module (production's,
    # moved.tf) and a state of a root (module.adapter...[0]) must both keep the instance, never plan a replacement,
    # which prevent_destroy would refuse. The real terraform plans the moves as written, on terraform_data stand-ins.
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    rotation = (TERRAFORM / "rotation.tf").read_text()
    module_move = re.search(r"moved \{\s*from = google_pubsub_topic\.fan_out\[0\]\s*to\s*= [^}]*\}", rotation)
    root_moves = (TERRAFORM / "environments" / "production" / "moved.tf").read_text()
    root_move = re.search(r"moved \{\s*from = google_pubsub_topic\.fan_out\s*to\s*= [^}]*\}", root_moves)
    assert module_move and root_move
    env = reality.terraform_env(tmp_path)
    for case in ("before the module", "a root"):
        work = tmp_path / case.replace(" ", "-")
        (work / "m").mkdir(parents=True)
        if case == "before the module":
            (work / "main.tf").write_text(COUNTED)
        else:
            (work / "m" / "main.tf").write_text(COUNTED)
            (work / "main.tf").write_text(CALL)
        for command in (["init"], ["apply", "-auto-approve"]):
            assert _terraform_in(terraform, work, env, *command).returncode == 0, (case, command)
        stand_in = "terraform_data"
        (work / "m" / "main.tf").write_text(
            PROTECTED + module_move.group(0).replace("google_pubsub_topic", stand_in) + "\n"
        )
        (work / "main.tf").write_text(CALL + root_move.group(0).replace("google_pubsub_topic", stand_in) + "\n")
        assert _terraform_in(terraform, work, env, "init").returncode == 0
        planned = _terraform_in(terraform, work, env, "plan")
        assert planned.returncode == 0, (case, planned.stderr[-1500:])
        assert "has moved to module.adapter.terraform_data.fan_out\n" in planned.stdout, (case, planned.stdout)
        assert "Plan: 0 to add, 0 to change, 0 to destroy." in planned.stdout, (case, planned.stdout)
