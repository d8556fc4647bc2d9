"""var.operators (issue 42, item 11): `fleet` needed more than roles/secretmanager.viewer (GetIamPolicy in
external-secrets mode, delete for `--fix`) and nothing offered an operator the right set. The role Terraform
renders must be exactly the union of what each command calls in the configuration's modes (OPERATOR_CALLS, one
row per call the CLI makes, read from pullsecret/operator/ and the store it drives), evaluated by the real
terraform for every mode, and documented per command in terraform/README.md."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.infra import reality

ROOT = reality.REPOSITORY_ROOT
TERRAFORM = ROOT / "terraform"
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
    ("fleet --fix", "secretstore/retention.py delete_secret (DELETE)", "secretmanager.secrets.delete", "any"),
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


def test_the_readme_documents_each_command_and_permission() -> None:
    readme = (TERRAFORM / "README.md").read_text()
    section = readme.split("\n## Operators\n", 1)[1].split("\n## ", 1)[0]
    for command, _call, permission, _when in OPERATOR_CALLS:
        for name in command.split(", "):
            assert f"`{name}`" in section, name
        assert f"`{permission}`" in section, permission
    for permission in ("secretmanager.secrets.list", "container.clusters.get", "iam.serviceAccounts.getAccessToken"):
        assert f"`{permission}`" in section, permission
