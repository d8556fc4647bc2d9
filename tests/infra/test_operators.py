"""var.operators (issue 42, item 11): `fleet` needed more than roles/secretmanager.viewer (GetIamPolicy in
external-secrets mode, delete for `--fix`) and nothing offered an operator the right set. The role Terraform
renders must be exactly the union of what each command calls in the configuration's modes (OPERATOR_CALLS, one
row per call the CLI makes, read from pullsecret/operator/ and the store it drives), evaluated by the real
terraform for every mode, and documented per command in terraform/README.md."""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path
from typing import Any

import hcl2
import pytest
from hcl2 import SerializationOptions

from tests.infra import reality

ROOT = reality.REPOSITORY_ROOT
TERRAFORM = ROOT / "terraform"
IAM_MEMBER = "google_project_iam_member"
OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
# command -> (the call in the code, the permission, modes it applies in: delivery, deletion policy or "any")
OPERATOR_CALLS: list[tuple[str, str, str, str]] = [
    ("inspect, fleet", "secretstore/describe.py GetSecret", "secretmanager.secrets.get", "any"),
    ("inspect, fleet", "secretstore/describe.py ListSecretVersions", "secretmanager.versions.list", "any"),
    (
        "inspect, fleet",
        "delivery/external_secrets.py members: GetIamPolicy",
        "secretmanager.secrets.getIamPolicy",
        "external-secrets",
    ),
    # Issue 51, item 12: granted whatever the policy before; DISABLE and RETAIN mean no secret is deleted.
    ("fleet --fix", "secretstore/retention.py delete_secret (DELETE)", "secretmanager.secrets.delete", "DELETE"),
    (
        "fleet --fix",
        "delivery/external_secrets.py grant/cleanup: SetIamPolicy",
        "secretmanager.secrets.setIamPolicy",
        "external-secrets",
    ),
    ("fleet --fix", "the finalizer's DISABLE: DisableSecretVersion", "secretmanager.versions.disable", "DISABLE"),
]
MODES = {
    "direct/DELETE": {"kubernetes_delivery": "direct", "deletion_policy": "DELETE"},
    "direct/RETAIN": {"kubernetes_delivery": "direct", "deletion_policy": "RETAIN"},
    "direct/DISABLE": {"kubernetes_delivery": "direct", "deletion_policy": "DISABLE"},
    "external-secrets/DELETE": {"kubernetes_delivery": "external-secrets", "deletion_policy": "DELETE"},
}


def expected(mode: dict[str, str]) -> list[str]:
    applies = {"any", mode["kubernetes_delivery"], mode["deletion_policy"]}
    return sorted({permission for _c, _call, permission, when in OPERATOR_CALLS if when in applies})


def _locals_block(name: str) -> str:
    text = (TERRAFORM / "operators.tf").read_text()
    match = re.search(rf"^  {name} = (.*?)^  \w+ +=", text, re.S | re.M)
    assert match, name
    return f"  {name} = {match.group(1)}"


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_operator_role_holds_exactly_what_the_commands_call(mode: str, tmp_path: Path) -> None:
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    folder = tmp_path / "module"
    folder.mkdir()
    shutil.copy(TERRAFORM / "variables.tf", folder / "variables.tf")
    values = {
        "kubernetes_delivery": MODES[mode]["kubernetes_delivery"],
        "deletion_policy": MODES[mode]["deletion_policy"],
    }
    (folder / "main.tf").write_text(
        "locals {\n" + _locals_block("operator_secret_permissions") + "}\n"
        'output "permissions" {\n  value = local.operator_secret_permissions\n}\n'
    )
    tfvars = (TERRAFORM / "example.tfvars").read_text()
    for name, value in values.items():
        tfvars = re.sub(rf"^{name}\s*=.*$", "", tfvars, flags=re.M) + f'\n{name} = "{value}"\n'
    (folder / "values.auto.tfvars").write_text(tfvars)
    outputs = reality.terraform_outputs(terraform, folder)
    assert outputs["permissions"] == expected(MODES[mode])


def test_fleet_needs_more_than_the_viewer_role_and_the_module_offers_it() -> None:
    text = (TERRAFORM / "operators.tf").read_text()
    assert '"secretmanager.secrets.list"' in text  # ListSecrets: its own, unconditioned role
    assert "data.google_project.secret_projects[each.value.project].number" in text  # the name condition
    assert "iam.serviceAccounts.getAccessToken" in text and "google_service_account.runtime.name" in text


@functools.cache
def _resources() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(TERRAFORM.glob("*.tf")):
        with path.open() as handle:
            for block in hcl2.load(handle, serialization_options=OPTIONS).get("resource", []):
                for kind, named in block.items():
                    for name, body in named.items():
                        found[(kind, name)] = body
    return found


def _resource(kind: str, name: str) -> dict[str, Any]:
    found = _resources().get((kind, name))
    if found is None:
        raise AssertionError(f"no {kind}.{name}")
    return found


def test_the_doctors_impersonation_of_the_runtime_account_is_never_standing(tmp_path: Path) -> None:
    # Issue 51, item 12: operator_doctor gave every operator getAccessToken on the runtime account, for good: a token
    # of that account is every right it has (every cluster's secret), which voided the narrow operator role.
    terraform, why = reality.terraform((1, 9))
    if terraform is None:
        reality.missing(why)
    assert terraform is not None
    grant = _resource("google_service_account_iam_member", "operator_doctor")
    assert grant["service_account_id"] == "${google_service_account.runtime.name}"
    instances = str(grant["for_each"]).removeprefix("${").removesuffix("}")
    condition = grant.get("condition", [{}])[0].get("expression", '""')
    folder = tmp_path / "module"
    folder.mkdir()
    shutil.copy(TERRAFORM / "variables.tf", folder / "variables.tf")
    (folder / "main.tf").write_text(
        "locals {\n  operators = toset(var.operators)\n}\n"
        f'output "instances" {{\n  value = length({instances})\n}}\n'
        f'output "condition" {{\n  value = "{condition.replace(chr(34), chr(92) + chr(34))}"\n}}\n'
    )
    example = (TERRAFORM / "example.tfvars").read_text()
    operators = 'operators = ["group:hyperfleet-oncall@example.com"]\n'
    (folder / "values.auto.tfvars").write_text(re.sub(r"^operators\s*=.*$", "", example, flags=re.M) + operators)
    assert reality.terraform_outputs(terraform, folder)["instances"] == 0  # no doctor window: no grant at all
    (folder / "window.auto.tfvars").write_text('operator_doctor_until = "2026-11-30T18:00:00Z"\n')
    outputs = reality.terraform_outputs(terraform, folder)
    assert outputs["instances"] == 1
    assert outputs["condition"] == 'request.time < timestamp("2026-11-30T18:00:00Z")'


def test_rekey_runs_as_its_own_account_with_its_records_and_the_topic() -> None:
    # Issue 48, item 5: operators ran rekey by impersonating the runtime account.
    impersonation = _resource("google_service_account_iam_member", "operator_rekey")
    assert impersonation["service_account_id"] == "${google_service_account.rekey[0].name}"
    publisher = _resource("google_pubsub_topic_iam_member", "rekey_fan_out_publisher")
    assert publisher["topic"] == "${google_pubsub_topic.fan_out.name}" and publisher["role"] == "roles/pubsub.publisher"
    records = _resource("google_project_iam_member", "rekey_records")
    assert records["member"] == "${google_service_account.rekey[0].member}"
    assert "local.rotation_record_condition" in records["condition"][0]["expression"]  # the record names alone
    role = _resource("google_project_iam_custom_role", "rekey_records")
    assert role["permissions"] == "${local.rekey_record_permissions}"
    text = (TERRAFORM / "operators.tf").read_text()
    assert 'rekey_record_permissions = ["secretmanager.secrets.get", "secretmanager.secrets.update"]' in text
    # Nothing of rekey's is bound to the runtime account, nor does rekey's account act as it.
    for name in ("operator_rekey", "rekey_fan_out_publisher", "rekey_records", "rekey_record_creator"):
        for kind in (
            "google_service_account_iam_member",
            "google_pubsub_topic_iam_member",
            "google_project_iam_member",
        ):
            try:
                body = _resource(kind, name)
            except AssertionError:
                continue
            assert "runtime" not in str(body.get("member", "")) + str(body.get("service_account_id", "")), name


def test_the_readme_documents_each_command_and_permission() -> None:
    readme = (TERRAFORM / "README.md").read_text()
    section = readme.split("\n## Operators\n", 1)[1].split("\n## ", 1)[0]
    for command, _call, permission, _when in OPERATOR_CALLS:
        for name in command.split(", "):
            assert f"`{name}`" in section, name
        assert f"`{permission}`" in section, permission
    for permission in ("secretmanager.secrets.list", "container.clusters.get", "iam.serviceAccounts.getAccessToken"):
        assert f"`{permission}`" in section, permission
