"""A data source never waits for the API set (issue 42, item 6).

Terraform reads a data source at apply time, not plan time, when anything in its `depends_on` has a planned
change; its attributes are then unknown at plan, and every resource built from them whose argument forces
replacement (an IAM binding's condition naming the project number) is planned "must be replaced": deleted, then
created, a live permission gap. Enabling one more API in a later release is such a change when the data source
depends on `google_project_service.apis`. The first test shows the behaviour with a real terraform and built-in
resources only (offline: `terraform_data` for the API set and the binding, `terraform_remote_state` on a local
file for the project); the second holds the module to the rule that avoids it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.infra import deployer_permissions, reality

PROJECT_STATE = {
    "version": 4,
    "terraform_version": "1.9.0",
    "serial": 1,
    "lineage": "00000000-0000-0000-0000-000000000000",
    "outputs": {"number": {"value": "123456789012", "type": "string"}},
    "resources": [],
}

CONFIGURATION = """
variable "apis" {
  type = list(string)
}

resource "terraform_data" "apis" {
  for_each = toset(var.apis)
  input    = each.value
}

resource "terraform_data" "resource_manager" {
  input = "cloudresourcemanager.googleapis.com"
}

data "terraform_remote_state" "project" {
  backend = "local"
  config = {
    path = "${path.module}/project.tfstate"
  }

  depends_on = [DEPENDENCY]
}

# Stands for a conditioned IAM binding: its condition (here triggers_replace) names the project number.
resource "terraform_data" "conditioned_binding" {
  triggers_replace = data.terraform_remote_state.project.outputs.number
}
"""


def _binding_actions(terraform: Path, folder: Path, dependency: str) -> list[str]:
    """The binding's planned actions when a second API joins the set, after an apply with one."""
    folder.mkdir()
    (folder / "main.tf").write_text(CONFIGURATION.replace("DEPENDENCY", dependency))
    (folder / "project.tfstate").write_text(json.dumps(PROJECT_STATE))
    env = reality.terraform_env(folder)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(terraform), *args, "-no-color"], cwd=folder, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode in (0, 2), f"terraform {args[0]}: {done.stderr[-2000:]}"
        return done

    run("init", "-input=false")
    run("apply", "-auto-approve", "-input=false", '-var=apis=["pubsub.googleapis.com"]')
    run("plan", "-input=false", "-out=next.tfplan", '-var=apis=["pubsub.googleapis.com","run.googleapis.com"]')
    shown = subprocess.run(
        [str(terraform), "show", "-json", "next.tfplan"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    plan = json.loads(shown.stdout)
    (change,) = [c for c in plan["resource_changes"] if c["address"] == "terraform_data.conditioned_binding"]
    return list(change["change"]["actions"])


def test_a_data_source_on_the_api_set_replaces_the_bindings_when_an_api_is_added(tmp_path: Path) -> None:
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    # The shape issue 42 found: the read waits for the API set, so adding an API replaces the binding.
    assert _binding_actions(terraform, tmp_path / "on_the_set", "terraform_data.apis") == ["delete", "create"]
    # The module's shape: the read waits for the one API it needs, which does not change.
    assert _binding_actions(terraform, tmp_path / "on_its_api", "terraform_data.resource_manager") == ["no-op"]


RESOURCE_MANAGER = "${google_project_service.resource_manager}"


def test_no_data_source_of_the_module_waits_for_the_api_set() -> None:
    found = deployer_permissions.resources()
    data_sources = {a: b for a, (k, b) in found.items() if k.startswith("data.google_")}
    assert data_sources, "no google data source found"
    for address, body in data_sources.items():
        waits = list(body.get("depends_on", []))
        assert waits == [RESOURCE_MANAGER], f"{address} depends on {waits}: only {RESOURCE_MANAGER} is stable"
    manager = found["google_project_service.resource_manager"][1]
    assert manager["service"] == "cloudresourcemanager.googleapis.com"
    assert "for_each" not in manager and "count" not in manager and not manager.get("depends_on")
    assert manager["disable_on_destroy"] is False


def test_the_api_set_does_not_also_hold_the_resource_manager_api() -> None:
    text = (deployer_permissions.TERRAFORM_DIR / "main.tf").read_text()
    required = text.split("required_apis = [", 1)[1].split("]", 1)[0]
    assert '"cloudresourcemanager.googleapis.com"' not in required
