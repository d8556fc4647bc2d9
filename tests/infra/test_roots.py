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
import yaml

from tests.infra import deployer_permissions, reality, roots
from tests.infra.roots import FOURTH_ROOT, tfvars_text

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
    "source_bucket_base",
    "source_bucket_name",
    "admission_policy_name",
)
# The outputs whose templatefile() calls render the Kubernetes objects an instance applies (terraform/outputs.tf),
# lifted as written; the token cluster's rendered whether or not the root uses one (two instances minting tokens in
# one namespace of it is the case compared).
MANIFEST_OUTPUTS = {
    "kubernetes_manifests": "kubernetes_documents",
    "token_cluster_manifests": "token_cluster_documents",
}


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


def _templatefile_calls(output: str) -> str:
    """The templatefile(...) call of terraform/outputs.tf's OUTPUT (within a `for` when the output loops over files),
    as written, with the runtime account's e-mail from its account_id (the scratch module creates no account)."""
    text = (MODULE / "outputs.tf").read_text()
    body = text[text.index(f'output "{output}" {{') :]
    start = body.index("templatefile(")
    depth, end = 0, start
    for end in range(start, len(body)):
        depth += {"(": 1, ")": -1}.get(body[end], 0)
        if depth == 0 and body[end] == ")":
            break
    call = body[start : end + 1]
    loop = re.search(r"\[\s*(for f in [^:]+:)\s*$", body[:start])
    call = f"[{loop.group(1)} {call}]" if loop else call
    return call.replace("google_service_account.runtime.email", "local.runtime_email")


def render(root: Path, work: Path) -> dict[str, Any]:
    """The names and their projects for ROOT's values, by the real terraform, offline; and the Kubernetes manifests
    as terraform/outputs.tf renders them (MANIFEST_OUTPUTS)."""
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    work.mkdir()
    shutil.copy(MODULE / "variables.tf", work / "variables.tf")
    shutil.copy(root / "terraform.tfvars", work / "terraform.tfvars")
    shutil.copytree(MODULE / "kubernetes", work / "kubernetes")
    account = named_resources()["google_service_account.runtime"][0]
    email = f'  runtime_email = "{account}@${{var.project_id}}.iam.gserviceaccount.com"'
    lines = ["locals {", *(_local(n) for n in NAMING_LOCALS), email, "}"]
    for output, name in MANIFEST_OUTPUTS.items():
        lines.append(f'output "{name}" {{\n  value = {_templatefile_calls(output)}\n}}')
    for address, (name, _where, _kind) in named_resources().items():
        lines.append(f'output "{address.replace(".", "__")}" {{\n  value = "{name}"\n}}')
    for name in (
        "secret_project_ids",
        "management_cluster_projects",
        "token_cluster_project",
        "secret_id_prefix",
        "secret_id_suffix",
        "admission_policy_name",
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
    # Two regions of one environment share its secret project (their suffixes keep them apart there); two
    # environments do not (issue 51, item 8: test_environments_do_not_share_secret_projects_unless_they_say_so).
    same_project = [(a, b) for a, b in itertools.combinations(projects, 2) if projects[a][0] == projects[b][0]]
    assert any(set(projects[a][1]) & set(projects[b][1]) for a, b in same_project), "two regions share secrets"


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


# Resources the module gained after the roots existed: no state from before the module can hold them.
NEW_SINCE_THE_ROOTS = {
    "terraform_data.release",  # issue 51, item 3
    "google_service_account.rekey",  # issue 48, item 5: rekey's own account and its grants
    "google_service_account_iam_member.operator_rekey",
    "google_pubsub_topic_iam_member.rekey_fan_out_publisher",
    "google_project_iam_custom_role.rekey_records",
    "google_project_iam_member.rekey_records",
    "google_project_iam_member.rekey_record_creator",
    "google_secret_manager_secret_iam_member.rekey_pull_secret_source",
}


def test_the_root_that_takes_over_the_old_state_moves_every_resource() -> None:
    moved = (MODULE / "environments" / "production" / "moved.tf").read_text()
    for address, (kind, _body) in deployer_permissions.resources(MODULE).items():
        if not kind.startswith("data.") and address not in NEW_SINCE_THE_ROOTS:
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


# -- issue 51: many instances side by side ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fourth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A fourth root made as README.md's "Adding the second environment" says (a copy of a root: the same
    main/variables/outputs/lock, its own backend prefix and tfvars), ids at their longest, rendered."""
    work = tmp_path_factory.mktemp("fourth")
    root = work / "sandbox"
    shutil.copytree(ROOTS[0], root)
    (root / "moved.tf").unlink(missing_ok=True)
    backend = (root / "backend.tf").read_text()
    (root / "backend.tf").write_text(re.sub(r'prefix = "[^"]+"', 'prefix = "hyperfleet-pullsecret/sandbox"', backend))
    (root / "terraform.tfvars").write_text(tfvars_text(FOURTH_ROOT))
    return render(root, work / "names")


def test_the_bucket_keeps_the_suffix_for_the_longest_project_ids(
    rendered: dict[str, dict[str, Any]], fourth: dict[str, Any], tmp_path: Path
) -> None:
    # Issue 51, item 2: substr(PROJECT-FUNCTION, 0, 59) cut the suffix off for a project id of 27 characters or
    # more, and every suffix rendered the same global bucket name (409 for the second root).
    second = tmp_path / "second-region"
    second.mkdir()
    (second / "terraform.tfvars").write_text(tfvars_text({**FOURTH_ROOT, "name_suffix": "us"}))
    buckets = {
        FOURTH_ROOT["name_suffix"]: fourth["google_storage_bucket__function_source"],
        "us": render(second, tmp_path / "names")["google_storage_bucket__function_source"],
    }
    assert len(set(buckets.values())) == len(buckets), buckets
    for name in buckets.values():
        assert len(name) <= 63 and re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", name), name
    # A name that fits keeps the releases' form (no replacement of an existing bucket).
    assert rendered["production"]["google_storage_bucket__function_source"] == (
        "hyperfleet-adapters-prod-hyperfleet-pullsecret-adapter-src"
    )


def test_a_fourth_root_added_by_the_readme_collides_with_none(
    rendered: dict[str, dict[str, Any]], fourth: dict[str, Any]
) -> None:
    # Issue 51, "Done when": a new environment in a new region, ids at their longest: its names collide with no
    # existing root's, and its values pass the module's validations (render() runs them).
    mine = scoped_names(fourth)
    for root, outputs in rendered.items():
        theirs = scoped_names(outputs)
        assert not mine & theirs, (root, sorted(mine & theirs))


def test_every_root_declares_and_passes_every_module_variable() -> None:
    # Issue 51, item 10: the roots passed 14 of the module's 79 variables; any other key in a tfvars file was a
    # warning and ignored (service mode, the gateway identity, VPC egress deployed as the defaults).
    for path, text in roots.expected().items():
        assert path.read_text() == text, f"{path.relative_to(MODULE)}: run python -m tests.infra.roots"
    with (ROOTS[0] / "main.tf").open() as handle:
        (call,) = [
            b["adapter"] for b in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)["module"]
        ]
    passed = {k: v for k, v in call.items() if k not in ("source", "__is_block__")}
    assert passed == {name: f"${{var.{name}}}" for name in roots.module_variables()}


def kubernetes_objects(outputs: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(kind, namespace, name) -> document, of every object a root's manifests create (management and token
    cluster), as render() had the real terraform's templatefile() render them from the root's values."""
    texts = [*outputs["kubernetes_documents"], outputs["token_cluster_documents"]]
    documents = [doc for text in texts for doc in yaml.safe_load_all(text) if doc]
    return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in documents}


def test_two_instances_on_one_cluster_keep_their_own_objects(
    rendered: dict[str, dict[str, Any]], fourth: dict[str, Any]
) -> None:
    # Issue 51, item 4: every root rendered the same ClusterRoleBinding, admission policy and binding, and token
    # cluster RoleBinding names, so the second instance's `kubectl apply --server-side` on a shared cluster replaced
    # the first one's subjects and policy (the first lost its rights). Every root (and a fourth made by the README)
    # against every other: an object two of them apply must be the same object, byte for byte (the ServiceAccount
    # two instances name alike is one identity on the gateway's allow-list); every other name is the instance's.
    objects = {root: kubernetes_objects(outputs) for root, outputs in {**rendered, "fourth": fourth}.items()}
    for a, b in itertools.combinations(sorted(objects), 2):
        for key in objects[a].keys() & objects[b].keys():
            assert objects[a][key] == objects[b][key], f"{a} and {b} both apply {key}, differently"
    for kind in (
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "Role",
        "RoleBinding",
    ):
        names = {name for found in objects.values() for k, _ns, name in found if k == kind}
        assert len(names) == len(objects), (kind, names)  # one per instance
    # The function reads its policy by the name Terraform renders: ADMISSION_POLICY_NAME is that local.
    environment = (MODULE / "function.tf").read_text()
    wired = r'ADMISSION_POLICY_NAME += var\.kubernetes_delivery == "direct" \? local\.admission_policy_name'
    assert re.search(wired, environment)
    for outputs in (*rendered.values(), fourth):
        (policy,) = [k for k in kubernetes_objects(outputs) if k[0] == "ValidatingAdmissionPolicy"]
        assert policy[2] == outputs["admission_policy_name"]


def test_environments_do_not_share_secret_projects_unless_they_say_so(rendered: dict[str, dict[str, Any]]) -> None:
    # Issue 51, item 8: staging read production's platform pull secret and held an unconditioned secrets.create and
    # its deployer roleAdmin/projectIamAdmin in production's secret project.
    values = {}
    for root in ROOTS:
        with (root / "terraform.tfvars").open() as handle:
            values[root.name] = hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)
    for a, b in itertools.permutations(sorted(values), 2):
        first, second = values[a], values[b]
        assert first.get("environment"), f"{a} names no environment"
        if first["environment"] == second.get("environment"):
            continue
        shared = set(rendered[a]["secret_project_ids"]) & set(rendered[b]["secret_project_ids"])
        source = {first["pull_secret_source_secret"].split("/")[1]} & {
            second["pull_secret_source_secret"].split("/")[1]
        }
        if shared | source:
            assert second["environment"] in first.get("secret_project_shared_with", []), (a, b, shared | source)


def test_the_plan_refuses_another_environments_secret_project(tmp_path: Path) -> None:
    # The plan's own check (iam.tf, runtime_secret_manager_managed's precondition), evaluated by the real terraform
    # over the label the bootstrap sets on each secret project.
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    with (MODULE / "iam.tf").open() as handle:
        (managed,) = [
            b["google_project_iam_member"]["runtime_secret_manager_managed"]
            for b in hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)["resource"]
            if "runtime_secret_manager_managed" in b.get("google_project_iam_member", {})
        ]
    condition = managed["lifecycle"][0]["precondition"][0]["condition"].removeprefix("${").removesuffix("}")
    labels = "data.google_project.secret_projects[each.value].effective_labels"
    condition = condition.replace(labels, "var.labels_of_project")
    cases = {
        "own": ("staging", [], {"hyperfleet-environment": "staging"}, True),
        "unlabelled": ("staging", [], {}, True),
        "production's": ("staging", [], {"hyperfleet-environment": "production"}, False),
        "shared on purpose": ("staging", ["production"], {"hyperfleet-environment": "production"}, True),
        "no environment": ("", [], {"hyperfleet-environment": "production"}, True),
    }
    as_json = {c: {"environment": e, "shared": s, "labels": lab} for c, (e, s, lab, _a) in cases.items()}
    (tmp_path / "main.tf").write_text(
        f"locals {{\n  cases = {json.dumps(as_json)}\n}}\n"
        'output "allowed" {\n  value = { for name, case in local.cases : name => '
        + condition.replace("var.environment", "case.environment")
        .replace("var.secret_project_shared_with", "case.shared")
        .replace("var.labels_of_project", "case.labels")
        + " }\n}\n"
    )
    allowed = reality.terraform_outputs(terraform, tmp_path)["allowed"]
    assert allowed == {case: expected for case, (_e, _s, _l, expected) in cases.items()}
