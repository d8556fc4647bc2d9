"""Terraform's `doctor_command` output: rendered by terraform itself, it is a valid shell script whose CloudEvent is
the one the function answers with the doctor, and the README's deployment section ends with it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pullsecret.operator import doctor

ROOT = Path(__file__).resolve().parent.parent.parent
# What the output refers to, replaced by values (the output block is rendered alone, offline).
STUBS = {
    "google_cloudfunctions2_function.adapter.name": "local.stub_function",
    "google_service_account.runtime.email": "local.stub_runtime",
}
STUB_CONFIG = """
variable "region" { default = "us-central1" }
variable "project_id" { default = "hf-demo-project" }
locals {
  stub_function              = "hyperfleet-pullsecret-adapter"
  stub_runtime               = "hf-pullsecret-run@hf-demo-project.iam.gserviceaccount.com"
  token_file_secrets = {
    HYPERFLEET_API_TOKEN_FILE      = "projects/hf-demo-project/secrets/hyperfleet-api-token"
    PULL_SECRET_SERVICE_TOKEN_FILE = ""
  }
  function_environment = {
    HYPERFLEET_API_URL            = "https://hf.example.com"
    HYPERFLEET_API_TOKEN_FILE     = "/etc/secrets/hyperfleet/token"
    MANAGEMENT_NAMESPACE_PATTERN  = "^clusters-[a-z0-9-]+$"
    PULL_SECRET_SOURCE            = "projects/hf-demo-project/secrets/platform-pull-secret/versions/latest"
    PULL_SECRET_SERVICE_TOKEN_FILE = ""
    SECRET_KMS_KEY                = ""
  }
}
"""
# Service mode with token-file for the Pull Secret Service, google-id-token for the HyperFleet API.
SERVICE_STUB_CONFIG = """
variable "region" { default = "us-central1" }
variable "project_id" { default = "hf-demo-project" }
locals {
  stub_function      = "hyperfleet-pullsecret-adapter"
  stub_runtime       = "hf-pullsecret-run@hf-demo-project.iam.gserviceaccount.com"
  token_file_secrets = {
    HYPERFLEET_API_TOKEN_FILE      = ""
    PULL_SECRET_SERVICE_TOKEN_FILE = "projects/hf-tokens/secrets/pull-secret-service-token"
  }
  function_environment = {
    HYPERFLEET_API_URL             = "https://hf.example.com"
    HYPERFLEET_API_AUTH            = "google-id-token"
    HYPERFLEET_API_TOKEN_FILE      = ""
    PULL_SECRET_SOURCE             = ""
    PULL_SECRET_SERVICE_URL        = "https://pull-secrets.example.com"
    PULL_SECRET_SERVICE_AUTH       = "token-file"
    PULL_SECRET_SERVICE_TOKEN_FILE = "/etc/secrets/pull-secret-service/token"
    PULL_SECRET_SERVICE_REGISTRIES = "quay,rhit"
  }
}
"""


def _output_block() -> str:
    text = (ROOT / "terraform" / "outputs.tf").read_text()
    match = re.search(r'^output "doctor_command" \{\n.*?^\}\n', text, re.S | re.M)
    assert match, "terraform/outputs.tf has no doctor_command output"
    block = match.group(0)
    for reference, stub in STUBS.items():
        block = block.replace(reference, stub)
    return block


def render(folder: Path, stub: str) -> str:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed")
    (folder / "main.tf").write_text(stub + _output_block())
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "TF_IN_AUTOMATION": "1", "HOME": str(folder)}
    for args in (["init", "-backend=false", "-input=false"], ["apply", "-auto-approve", "-input=false"]):
        subprocess.run(["terraform", *args], cwd=folder, env=env, check=True, capture_output=True, timeout=120)
    result = subprocess.run(
        ["terraform", "output", "-raw", "doctor_command"], cwd=folder, env=env, check=True, capture_output=True
    )
    return result.stdout.decode()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> str:
    return render(tmp_path_factory.mktemp("doctor-output"), STUB_CONFIG)


@pytest.fixture(scope="module")
def rendered_service(tmp_path_factory: pytest.TempPathFactory) -> str:
    return render(tmp_path_factory.mktemp("doctor-output-service"), SERVICE_STUB_CONFIG)


def test_the_output_is_a_shell_script_running_the_doctor_both_ways(rendered: str) -> None:
    subprocess.run(["bash", "-n"], input=rendered.encode(), check=True)  # it parses as bash
    event = json.loads(re.search(r"--cloud-event='([^']*)'", rendered).group(1))  # type: ignore[union-attr]
    assert event["type"] == doctor.EVENT_TYPE
    assert "gcloud functions call hyperfleet-pullsecret-adapter --gen2 --region=us-central1" in rendered
    lines = rendered.splitlines()
    assert "export HYPERFLEET_API_URL='https://hf.example.com'" in lines
    assert "export MANAGEMENT_NAMESPACE_PATTERN='^clusters-[a-z0-9-]+$'" in lines
    assert not any(line.startswith("export SECRET_KMS_KEY") for line in lines)  # unset stays unset
    # The function's mount path means nothing on a workstation: the token is fetched as the runtime identity.
    assert "/etc/secrets" not in rendered
    assert "--impersonate-service-account=hf-pullsecret-run@hf-demo-project.iam.gserviceaccount.com" in rendered
    assert lines.index("python -m pullsecret doctor") > max(i for i, x in enumerate(lines) if x.startswith("export"))


def test_the_output_fetches_the_pull_secret_service_token_in_token_file_service_mode(rendered_service: str) -> None:
    subprocess.run(["bash", "-n"], input=rendered_service.encode(), check=True)
    lines = rendered_service.splitlines()
    assert "export PULL_SECRET_SERVICE_URL='https://pull-secrets.example.com'" in lines
    assert not any(line.startswith(("export PULL_SECRET_SOURCE", "export HYPERFLEET_API_TOKEN_FILE")) for line in lines)
    # The service token is fetched as the HyperFleet token is in platform mode; no HyperFleet token to fetch here.
    assert 'export PULL_SECRET_SERVICE_TOKEN_FILE="$(mktemp)"' in lines
    fetch = (
        "gcloud secrets versions access latest --secret=pull-secret-service-token --project=hf-tokens "
        "--impersonate-service-account=hf-pullsecret-run@hf-demo-project.iam.gserviceaccount.com "
        '> "$PULL_SECRET_SERVICE_TOKEN_FILE"'
    )
    assert fetch in lines
    assert "--secret=hyperfleet-api-token" not in rendered_service and "/etc/secrets" not in rendered_service
    assert lines.index(fetch) < lines.index("python -m pullsecret doctor")
    assert lines[lines.index("python -m pullsecret doctor") + 1] == 'rm -f "$PULL_SECRET_SERVICE_TOKEN_FILE"'


def test_the_output_fetches_the_hyperfleet_token_in_platform_mode(rendered: str) -> None:
    lines = rendered.splitlines()
    assert 'export HYPERFLEET_API_TOKEN_FILE="$(mktemp)"' in lines
    assert any(
        line.startswith("gcloud secrets versions access latest --secret=hyperfleet-api-token ") for line in lines
    )
    assert "PULL_SECRET_SERVICE" not in rendered
    assert lines[lines.index("python -m pullsecret doctor") + 1] == 'rm -f "$HYPERFLEET_API_TOKEN_FILE"'


def test_the_readme_deployment_section_ends_with_the_doctor() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Deployment\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:sh)?\n(.*?)```", section, re.S)
    assert blocks and "terraform output -raw doctor_command" in blocks[-1], "the deploy section must end with it"
    assert section.rstrip().endswith("```") or "doctor" in section.rstrip().splitlines()[-1]
    assert "doctor_command" in (ROOT / "terraform" / "README.md").read_text()


@pytest.mark.parametrize("policy", ["DELETE", "DISABLE", "RETAIN"])
def test_the_doctor_asks_for_exactly_what_terraform_grants_on_the_secrets(policy: str) -> None:
    from emulators.grpcbase import Projects
    from emulators.iam_terraform import service_account_grants
    from emulators.stack import TERRAFORM_VARIABLES
    from pullsecret import config
    from pullsecret.operator.doctor_checks import MANAGED_ROLE, required_permissions

    _email, grants = service_account_grants(
        {**TERRAFORM_VARIABLES, "deletion_policy": policy}, project_number=Projects().number
    )
    (managed,) = [g for g in grants if g.role.endswith(f"/roles/{MANAGED_ROLE}")]
    settings = config.load(
        {
            "HYPERFLEET_API_URL": "https://hf.example.com",
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
            "DELETION_POLICY": policy,
        }
    )
    assert set(required_permissions(settings)) == managed.permissions


def _fix_commands() -> list[str]:
    """Every gcloud command the doctor's fixes name, for one configuration."""
    from pullsecret import config
    from pullsecret.errors import TerminalError, TransientError
    from pullsecret.operator import checks_direct, doctor_checks

    settings = config.load(
        {
            "HYPERFLEET_API_URL": "https://hf.example.com",
            "PULL_SECRET_SOURCE": "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret/versions/latest",
        }
    )
    ctx = doctor_checks.Context(
        settings, "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com", *([None] * 4)
    )
    denied = TerminalError("denied", reason="PermissionDenied")
    fixes = [
        doctor_checks._role_fix(
            ctx, "hyperfleet-secrets-prod", ["secretmanager.secrets.get", "secretmanager.versions.add"]
        ),
        doctor_checks._source_fix(ctx, denied),
        checks_direct._gke_fix(ctx, "projects/hyperfleet-adapters-prod/locations/europe-west1/clusters/mgmt-1", denied),
        doctor_checks.outside_fix(ctx, "hyperfleet-secrets-prod"),
        doctor_checks.create_fix(ctx, "hyperfleet-secrets-prod"),
        doctor_checks._api_fix(ctx, TransientError("refused", reason="CredentialsRefused")),
    ]
    found = [m.group(0).rstrip(" ,.") for fix in fixes for m in re.finditer(r"gcloud [^;()]*", fix)]
    assert len(found) == len(fixes), fixes
    return found


def test_every_gcloud_command_the_output_and_the_fixes_name_parses(rendered: str, tmp_path: Path) -> None:
    from tests.infra import gcloud_commands, reality

    gcloud = reality.gcloud()
    if gcloud is None:
        reality.missing("gcloud (the Google Cloud SDK) is not installed")
    assert gcloud is not None
    script = rendered.replace('"$HYPERFLEET_API_TOKEN_FILE"', "/dev/null") + "\n" + "\n".join(_fix_commands())
    # `auth application-default login` opens a browser flow: its flag is checked by its --help instead.
    commands = [
        c for c in gcloud_commands.commands_in_shell(script, "doctor") if "application-default login" not in c.text
    ]
    assert len(commands) == 8, [c.text for c in commands]
    words = gcloud_commands.expand(commands)
    problems = [(w, gcloud_commands.parse_problem(gcloud, w)) for w in words]
    assert [p for p in problems if p[1] is not None] == []
    helped = subprocess.run(
        [str(gcloud), "auth", "application-default", "login", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env=gcloud_commands.gcloud_environment(str(tmp_path)),
    )
    assert "--impersonate-service-account" in helped.stdout
