"""terraform/ca_bundles.tf under a real Terraform (`terraform test`, offline): a CA bundle secret is mounted as a
file through the function's secret volumes, and the setting that reads it names that file (issue 39's gap).

ca_bundles.tf holds locals only, so it plans with variables.tf alone (no provider to install); function.tf's secret
volumes and environment and iam.tf's grant read those locals, as the static checks at the end hold."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.infra import reality
from tests.infra.terraform_offline import hcl_literal, load, terraform_test

TERRAFORM_DIR = reality.REPOSITORY_ROOT / "terraform"
GATEWAY_CA = "projects/hyperfleet-adapters-prod/secrets/gateway-root-ca"
REGISTRY_CA = "projects/hf-certs-prod/secrets/registry-roots"
SERVICE = {
    "pull_secret_source_secret": "",
    "pull_secret_service_url": "https://pull-secrets.example.com",
    "enable_source_rotation": False,
}
NO_SETTING = {"HYPERFLEET_API_CA_BUNDLE": "", "PULL_SECRET_SERVICE_CA_BUNDLE": "", "REGISTRY_CA_BUNDLE": ""}
GATEWAY_VOLUME = {
    "mount_path": "/etc/secrets/ca-hyperfleet-adapters-prod-gateway-root-ca",
    "project_id": "hyperfleet-adapters-prod",
    "secret": "gateway-root-ca",
}
REGISTRY_VOLUME = {
    "mount_path": "/etc/secrets/ca-hf-certs-prod-registry-roots",
    "project_id": "hf-certs-prod",
    "secret": "registry-roots",
}
# case -> (overrides of example.tfvars, the volumes by secret, the function's CA settings)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, str]]] = {
    "none": ({}, {}, NO_SETTING),
    "gateway": (
        {"hyperfleet_api_ca_bundle_secret": GATEWAY_CA},
        {GATEWAY_CA: GATEWAY_VOLUME},
        {**NO_SETTING, "HYPERFLEET_API_CA_BUNDLE": f"{GATEWAY_VOLUME['mount_path']}/ca.pem"},
    ),
    # One PEM for the gateway and the service: one volume, both settings naming its file.
    "shared_and_registry": (
        {
            **SERVICE,
            "hyperfleet_api_ca_bundle_secret": GATEWAY_CA,
            "pull_secret_service_ca_bundle_secret": GATEWAY_CA,
            "registry_ca_bundle_secret": REGISTRY_CA,
        },
        {GATEWAY_CA: GATEWAY_VOLUME, REGISTRY_CA: REGISTRY_VOLUME},
        {
            "HYPERFLEET_API_CA_BUNDLE": f"{GATEWAY_VOLUME['mount_path']}/ca.pem",
            "PULL_SECRET_SERVICE_CA_BUNDLE": f"{GATEWAY_VOLUME['mount_path']}/ca.pem",
            "REGISTRY_CA_BUNDLE": f"{REGISTRY_VOLUME['mount_path']}/ca.pem",
        },
    ),
}


def _test_file(values: dict[str, Any], volumes: dict[str, Any], environment: dict[str, str]) -> str:
    body = "\n".join(f"    {key} = {hcl_literal(value)}" for key, value in sorted(values.items()))
    checks = (
        ("local.ca_bundle_secret_names", sorted(volumes)),
        ("local.ca_bundle_volumes", volumes),
        ("local.ca_bundle_environment", environment),
    )
    asserts = "".join(
        f"  assert {{\n    condition     = jsonencode({name}) == jsonencode({hcl_literal(expected)})\n"
        f'    error_message = "{name} is ${{jsonencode({name})}}"\n  }}\n'
        for name, expected in checks
    )
    return f'run "check" {{\n  command = plan\n  variables {{\n{body}\n  }}\n{asserts}}}\n'


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    example = load(TERRAFORM_DIR / "example.tfvars")
    tests = {
        case: _test_file({**example, **overrides}, volumes, environment)
        for case, (overrides, volumes, environment) in CASES.items()
    }
    files = [TERRAFORM_DIR / "variables.tf", TERRAFORM_DIR / "ca_bundles.tf"]
    return terraform_test(files, tests, tmp_path_factory.mktemp("ca-bundles"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_ca_bundle_secret_is_mounted_and_its_setting_names_the_file(
    results: dict[str, dict[str, Any]], case: str
) -> None:
    assert results[case]["status"] == "pass", results[case]["errors"]


def test_the_function_mounts_the_volumes_sets_the_settings_and_may_read_those_secrets_only() -> None:
    function = (TERRAFORM_DIR / "function.tf").read_text()
    assert "for_each = local.ca_bundle_volumes" in function
    assert "path    = local.ca_bundle_file_name" in function
    for name in NO_SETTING:
        assert f'local.ca_bundle_environment["{name}"]' in function, name
    iam = (TERRAFORM_DIR / "iam.tf").read_text()
    grant = iam[iam.index('"runtime_ca_bundle"') :].split("\n}\n")[0]
    assert "for_each = local.ca_bundle_secret_names" in grant and '"roles/secretmanager.secretAccessor"' in grant
    assert 'secret_id = split("/", each.value)[3]' in grant and 'project   = split("/", each.value)[1]' in grant


def test_the_doctor_command_fetches_each_ca_bundle_as_it_fetches_a_token(tmp_path: Path) -> None:
    """The mount path means nothing on a workstation: doctor_command fetches the PEM as the runtime identity, and
    the configuration it exports loads (a CA bundle setting must name a readable file)."""
    from pullsecret import configured
    from tests.infra.doctor_output import RUNTIME, render

    overrides = {"hyperfleet_api_url": "https://hf.example.com", "registry_ca_bundle_secret": REGISTRY_CA}
    script = render(tmp_path, overrides)
    subprocess.run(["bash", "-n"], input=script.encode(), check=True)
    lines = script.splitlines()
    assert "/etc/secrets" not in script
    assert 'export REGISTRY_CA_BUNDLE="$(mktemp)"' in lines
    fetch = (
        "gcloud secrets versions access latest --secret=registry-roots --project=hf-certs-prod "
        f'--impersonate-service-account={RUNTIME} > "$REGISTRY_CA_BUNDLE"'
    )
    assert lines.index(fetch) < lines.index("python -m pullsecret doctor")
    assert '"$REGISTRY_CA_BUNDLE"' in lines[lines.index("python -m pullsecret doctor") + 1]
    unset = ("export HYPERFLEET_API_CA_BUNDLE", "export PULL_SECRET_SERVICE_CA_BUNDLE")
    assert not any(line.startswith(unset) for line in lines)
    exports = dict(re.findall(r"^export (\w+)='([^']*)'$", script, re.M))
    pem, token = tmp_path / "ca.pem", tmp_path / "token"
    pem.write_text("-----BEGIN CERTIFICATE-----\n")
    token.write_text("opaque-token\n")
    settings = configured.load({**exports, "HYPERFLEET_API_TOKEN_FILE": str(token), "REGISTRY_CA_BUNDLE": str(pem)})
    assert settings.registry_ca_bundle == str(pem)
