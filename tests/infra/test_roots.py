"""The example roots under terraform/environments/ (issue 42, the module's shape).

Each root is thin: its backend and values around the module at the top of terraform/, with the same main.tf,
variables.tf and outputs.tf as every other root. The names the module gives everything that must be unique in a
project (or, for the custom roles, in a shared secret or management project; for the bucket, everywhere) are
rendered by the real terraform from each root's terraform.tfvars, through the module's own variables.tf (its
validations run too) and its own naming locals, offline; then no two roots may produce the same name in the same
scope, and two roots sharing a secret project may not have IAM name conditions covering each other's secrets.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.infra import deployer_permissions, reality

MODULE = reality.REPOSITORY_ROOT / "terraform"
ROOTS = sorted(p for p in (MODULE / "environments").iterdir() if (p / "main.tf").is_file())
SHARED_FILES = ("main.tf", "variables.tf", "outputs.tf")
# resource type -> (the argument holding its unique name, the namespace it is unique in)
NAME_FIELDS = {
    "google_service_account": ("account_id", "project"),
    "google_project_iam_custom_role": ("role_id", "project"),
    "google_pubsub_topic": ("name", "project"),
    "google_pubsub_subscription": ("name", "project"),
    "google_cloudfunctions2_function": ("name", "project"),
    "google_eventarc_trigger": ("name", "project"),
    "google_artifact_registry_repository": ("repository_id", "project"),
    "google_logging_metric": ("name", "project"),
    "google_monitoring_alert_policy": ("display_name", "project"),
    "google_storage_bucket": ("name", "global"),
}
# The module's naming locals, evaluated as written (by name, from its .tf files).
NAMING_LOCALS = (
    "name_suffix",
    "role_suffix",
    "function_name",
    "cluster_events_topic_name",
    "fleet_metric_prefix",
    "metric_prefix",
    "secret_project_ids",
    "management_cluster_project",
    "management_cluster_projects",
    "token_cluster_project",
    "secret_id_prefix",
    "secret_id_suffix",
    "rotation_record_secret_id",
)


def _local(name: str) -> str:
    for path in sorted(MODULE.glob("*.tf")):
        match = re.search(rf"^  {name} += (.*)$", path.read_text(), re.M)
        if match:
            return f"  {name} = {match.group(1)}"
    raise AssertionError(f"no local {name} in the module")


def named_resources() -> dict[str, tuple[str, str, str]]:
    """address -> (name expression, namespace: the project expression or 'global', type) for every unique name."""
    found = {}
    for address, (kind, body) in deployer_permissions.resources(MODULE).items():
        if kind not in NAME_FIELDS:
            continue
        field, scope = NAME_FIELDS[kind]
        name = str(body[field])
        where = "global" if scope == "global" else _scope(body)
        found[address] = (name, where, kind)
    return found


def _scope(body: dict[str, Any]) -> str:
    project = str(body.get("project", "${var.project_id}"))
    loop = json.dumps(body.get("for_each", ""))
    if project.startswith("${each.value"):
        if "secret_project_ids" in loop or "operator_secret_grants" in loop:
            return "secret_project_ids"
        if "management_cluster_projects" in loop or "operator_cluster_grants" in loop:
            return "management_cluster_projects"
        raise AssertionError(f"a named resource in an unknown set of projects: {body}")
    if project == "${local.token_cluster_project}":
        return "token_cluster_project"  # one project or none (the resource's count is 0 without a token cluster)
    assert project == "${var.project_id}", project
    return "project_id"


def render(root: Path, work: Path) -> dict[str, Any]:
    """The names and their projects for ROOT's values, by the real terraform, offline."""
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    work.mkdir()
    shutil.copy(MODULE / "variables.tf", work / "variables.tf")
    shutil.copy(root / "terraform.tfvars", work / "terraform.tfvars")
    lines = ["locals {", *(_local(n) for n in NAMING_LOCALS), "}"]
    for address, (name, _where, _kind) in named_resources().items():
        lines.append(f'output "{address.replace(".", "__")}" {{\n  value = "{name}"\n}}')
    for name in (
        "secret_project_ids",
        "management_cluster_projects",
        "token_cluster_project",
        "secret_id_prefix",
        "secret_id_suffix",
    ):
        lines.append(f'output "{name}" {{\n  value = local.{name}\n}}')
    lines.append('output "project_id" {\n  value = var.project_id\n}')
    (work / "names.tf").write_text("\n".join(lines) + "\n")
    return reality.terraform_outputs(terraform, work)


def scoped_names(outputs: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(project or 'global', resource type, name) for every unique name a root creates."""
    names = set()
    for address, (_name, where, kind) in named_resources().items():
        value = outputs[address.replace(".", "__")]
        if where == "global":
            projects = ["global"]
        elif where in ("project_id", "token_cluster_project"):
            projects = [outputs[where]] if outputs[where] else []
        else:
            projects = outputs[where]
        names.update((project, kind, value) for project in projects)
    return names


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return {root.name: render(root, tmp_path_factory.mktemp(root.name) / "names") for root in ROOTS}


def test_there_are_two_environments_in_two_projects_and_a_second_region(rendered: dict[str, dict[str, Any]]) -> None:
    projects = {name: (out["project_id"], tuple(sorted(out["secret_project_ids"]))) for name, out in rendered.items()}
    by_project: dict[str, list[str]] = {}
    for name, (project, _secrets) in projects.items():
        by_project.setdefault(project, []).append(name)
    assert len(by_project) >= 2, "two environments in two projects"
    assert any(len(roots) >= 2 for roots in by_project.values()), "two roots (regions) in one project"
    shared = [
        (a, b)
        for a, b in itertools.combinations(projects, 2)
        if projects[a][0] != projects[b][0] and set(projects[a][1]) & set(projects[b][1])
    ]
    assert shared, "two environments in two projects sharing a secret project"


def test_no_two_roots_create_the_same_name_in_one_scope(rendered: dict[str, dict[str, Any]]) -> None:
    names = {root: scoped_names(out) for root, out in rendered.items()}
    for a, b in itertools.combinations(sorted(names), 2):
        both = names[a] & names[b]
        assert not both, f"{a} and {b} both create {sorted(both)}"


def test_the_check_sees_a_collision_without_a_suffix(tmp_path: Path) -> None:
    # Two regions in one project with the same (empty) suffix: the accounts, roles and topics collide.
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, region in ((first, "europe-west1"), (second, "us-east1")):
        folder.mkdir()
        text = (ROOTS[0] / "terraform.tfvars").read_text()
        text = re.sub(r"^name_suffix\s*=.*$", 'name_suffix = ""', text, flags=re.M)
        text = re.sub(r"^region\s*=.*$", f'region = "{region}"', text, flags=re.M)
        (folder / "terraform.tfvars").write_text(text)
    a = scoped_names(render(first, tmp_path / "ra"))
    b = scoped_names(render(second, tmp_path / "rb"))
    kinds = {kind for _p, kind, _n in a & b}
    assert {"google_service_account", "google_project_iam_custom_role", "google_pubsub_topic"} <= kinds


def covers(prefix: str, suffix: str, secret_id: str) -> bool:
    """Whether the runtime's IAM condition (iam.tf local.secret_manager_condition) admits SECRET_ID."""
    return secret_id.startswith(prefix) and secret_id.endswith(suffix)


def test_roots_sharing_a_secret_project_cannot_reach_each_others_secrets(rendered: dict[str, dict[str, Any]]) -> None:
    for a, b in itertools.permutations(sorted(rendered), 2):
        first, second = rendered[a], rendered[b]
        if not set(first["secret_project_ids"]) & set(second["secret_project_ids"]):
            continue
        theirs = f"{second['secret_id_prefix']}2abc9def{second['secret_id_suffix']}"
        assert not covers(first["secret_id_prefix"], first["secret_id_suffix"], theirs), (a, b, theirs)


def test_every_root_is_the_same_thin_root() -> None:
    for root in ROOTS:
        for name in SHARED_FILES:
            assert (root / name).read_text() == (ROOTS[0] / name).read_text(), f"{root.name}/{name} drifted"
        backend = (root / "backend.tf").read_text()
        assert re.search(r'backend "gcs" \{\s*prefix = "hyperfleet-pullsecret[^"]*"', backend), root.name
        assert (root / "terraform.tfvars").is_file() and (root / ".terraform.lock.hcl").is_file()
        assert (root / ".terraform.lock.hcl").read_text() == (MODULE / ".terraform.lock.hcl").read_text()
    prefixes = [re.search(r'prefix = "([^"]+)"', (r / "backend.tf").read_text()) for r in ROOTS]
    assert len({m.group(1) for m in prefixes if m}) == len(ROOTS), "two roots share a state"
    module_text = "\n".join(p.read_text() for p in MODULE.glob("*.tf"))
    assert not re.search(r"^provider ", module_text, re.M) and 'backend "' not in module_text, "the module configures"


def test_every_root_re_exports_every_module_output() -> None:
    with (MODULE / "outputs.tf").open() as handle:
        module_outputs = {
            n
            for b in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS).get("output", [])
            for n in b
        }
    with (ROOTS[0] / "outputs.tf").open() as handle:
        root_outputs = {
            n
            for b in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS).get("output", [])
            for n in b
        }
    assert module_outputs == root_outputs


def test_the_root_that_takes_over_the_old_state_moves_every_resource() -> None:
    moved = (MODULE / "environments" / "production" / "moved.tf").read_text()
    for address, (kind, _body) in deployer_permissions.resources(MODULE).items():
        if not kind.startswith("data."):
            assert f"from = {address}\n  to   = module.adapter.{address}" in moved, address
    assert re.search(
        r"removed \{\s*from = google_project_iam_member\.eventarc_agent\s*lifecycle \{\s*destroy = false", moved
    )


def test_each_root_calls_the_module_as_terraform_validate_would() -> None:
    # What `terraform validate` checks of a module call, offline (the providers cannot be installed here):
    # every argument is a variable of the module, every variable without a default is given, and the root's own
    # variables without a default are all set by its terraform.tfvars.
    with (MODULE / "variables.tf").open() as handle:
        module_variables = {
            n: b
            for block in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)["variable"]
            for n, b in block.items()
        }
    required = {n for n, b in module_variables.items() if "default" not in b}
    for root in ROOTS:
        with (root / "main.tf").open() as handle:
            (call,) = [
                b["adapter"] for b in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)["module"]
            ]
        arguments = {k for k in call if k not in ("source", "__is_block__")}
        assert call["source"] == "../..", root.name
        assert arguments <= set(module_variables), (root.name, arguments - set(module_variables))
        assert required <= arguments, (root.name, required - arguments)
        with (root / "variables.tf").open() as handle:
            own = {
                n: b
                for block in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)["variable"]
                for n, b in block.items()
            }
        with (root / "terraform.tfvars").open() as handle:
            values = hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)
        unset = {n for n, b in own.items() if "default" not in b} - set(values)
        assert not unset, (root.name, unset)
        assert set(values) <= set(own), (root.name, set(values) - set(own))
