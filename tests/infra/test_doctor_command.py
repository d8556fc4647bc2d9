"""Terraform's `doctor_command` output: rendered by terraform itself, it is a valid shell script whose CloudEvent is
the one the function answers with the doctor, and the README's deployment section ends with it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from pullsecret import configured
from pullsecret.doctor import run as doctor
from tests.infra.doctor_output import ROOT, RUNTIME, render

SERVICE = {"pull_secret_source_secret": "", "enable_source_rotation": False}
# Every source mode x every authentication mode of each service it calls (overrides of example.tfvars).
MODES: dict[str, dict[str, object]] = {
    "platform/token-file": {"hyperfleet_api_url": "https://hf.example.com"},
    "platform/google-id-token": {"hyperfleet_api_auth": "google-id-token", "hyperfleet_api_token_secret": ""},
    "service token-file/token-file": {
        **SERVICE,
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "pull_secret_service_auth": "token-file",
        "pull_secret_service_token_secret": "projects/hf-tokens/secrets/pull-secret-service-token",
    },
    "service token-file/google-id-token": {
        **SERVICE,
        "hyperfleet_api_url": "https://hf.example.com",
        "hyperfleet_api_auth": "google-id-token",
        "hyperfleet_api_token_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
        "pull_secret_service_auth": "token-file",
        "pull_secret_service_token_secret": "projects/hf-tokens/secrets/pull-secret-service-token",
        "pull_secret_service_registries": ["quay", "rhit"],
    },
    "service google-id-token/token-file": {**SERVICE, "pull_secret_service_url": "https://pull-secrets.example.com"},
    "service google-id-token/google-id-token": {
        **SERVICE,
        "hyperfleet_api_auth": "google-id-token",
        "hyperfleet_api_token_secret": "",
        "pull_secret_service_url": "https://pull-secrets.example.com",
    },
}


@pytest.fixture(scope="module")
def rendered_modes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {mode: render(tmp_path_factory.mktemp("doctor-output"), MODES[mode]) for mode in MODES}


@pytest.fixture(scope="module")
def rendered(rendered_modes: dict[str, str]) -> str:
    return rendered_modes["platform/token-file"]


@pytest.fixture(scope="module")
def rendered_service(rendered_modes: dict[str, str]) -> str:
    # Service mode with token-file for the Pull Secret Service, google-id-token for the HyperFleet API.
    return rendered_modes["service token-file/google-id-token"]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_renders_a_script_the_configuration_accepts(
    rendered_modes: dict[str, str], mode: str, tmp_path: Path
) -> None:
    """Issue 32, item 5: no empty `--secret= --project=`, a token file only where one is mounted, and the
    environment the script exports loads as the function's configuration (the doctor's first step)."""

    script = rendered_modes[mode]
    subprocess.run(["bash", "-n"], input=script.encode(), check=True)
    assert "--secret= " not in script and "--project= " not in script and "--project=\n" not in script
    assert "rm -f \n" not in script + "\n" and not script.rstrip().endswith("rm -f")
    source, auth = mode.split("/")
    service_auth = source.removeprefix("service ") if source.startswith("service") else None
    exports = dict(re.findall(r"^export (\w+)='([^']*)'$", script, re.M))
    fetched = re.findall(r'^export (\w+)="\$\(mktemp\)"$', script, re.M)
    assert ("HYPERFLEET_API_TOKEN_FILE" in fetched) == (auth == "token-file")
    assert ("PULL_SECRET_SERVICE_TOKEN_FILE" in fetched) == (service_auth == "token-file")
    id_token = auth == "google-id-token" or service_auth == "google-id-token"
    assert ("generateIdToken" in script) == id_token
    if id_token:
        assert f"--impersonate-service-account={RUNTIME}" in script
    # The configuration the doctor loads from exactly these variables (token files as the fetch leaves them: one
    # `mktemp` each, never one file for two services).
    for name in fetched:
        (tmp_path / name).write_text("opaque-token\n")
    env = {**exports, **{name: str(tmp_path / name) for name in fetched}}
    settings = configured.load(env)
    assert settings.hyperfleet_api_auth == auth


def test_the_output_is_a_shell_script_running_the_doctor_both_ways(rendered: str) -> None:
    subprocess.run(["bash", "-n"], input=rendered.encode(), check=True)  # it parses as bash
    event = json.loads(re.search(r"--cloud-event='([^']*)'", rendered).group(1))  # type: ignore[union-attr]
    assert event["type"] == doctor.EVENT_TYPE
    assert "gcloud functions call hyperfleet-pullsecret-adapter --gen2 --region=europe-west1" in rendered
    lines = rendered.splitlines()
    assert "export HYPERFLEET_API_URL='https://hf.example.com'" in lines
    assert "export MANAGEMENT_NAMESPACE_PATTERN='^clusters-[a-z0-9-]+$'" in lines
    assert not any(line.startswith("export SECRET_KMS_KEY") for line in lines)  # unset stays unset
    # The function's mount path means nothing on a workstation: the token is fetched as the runtime identity.
    assert "/etc/secrets" not in rendered
    assert f"--impersonate-service-account={RUNTIME}" in rendered
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
        f"--impersonate-service-account={RUNTIME} "
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
    doctor = re.compile(r"terraform (-chdir=\S+ )?output -raw doctor_command")
    assert blocks and doctor.search(blocks[-1]), "the deploy section must end with it"
    assert section.rstrip().endswith("```") or "doctor" in section.rstrip().splitlines()[-1]
    assert "doctor_command" in (ROOT / "terraform" / "README.md").read_text()


@pytest.mark.parametrize("policy", ["DELETE", "DISABLE", "RETAIN"])
def test_the_doctor_asks_for_exactly_what_terraform_grants_on_the_secrets(policy: str) -> None:
    from emulators.grpcbase import Projects
    from emulators.iam_terraform import service_account_grants
    from emulators.stack import TERRAFORM_VARIABLES
    from pullsecret.doctor.checks import required_permissions
    from pullsecret.doctor.kit import MANAGED_ROLE

    _email, grants = service_account_grants(
        {**TERRAFORM_VARIABLES, "deletion_policy": policy}, project_number=Projects().number
    )
    (managed,) = [g for g in grants if g.role.endswith(f"/roles/{MANAGED_ROLE}")]
    settings = configured.load(
        {
            "HYPERFLEET_API_URL": "https://hf.example.com",
            "DELETION_POLICY": policy,
            "PULL_SECRET_SOURCE": "projects/hf-demo-project/secrets/platform-pull-secret/versions/latest",
        }
    )
    assert set(required_permissions(settings)) == managed.permissions


def _fix_commands() -> list[str]:
    """Every gcloud command the doctor's fixes name, for one configuration."""
    from pullsecret.delivery.direct import doctor as doctor_direct
    from pullsecret.doctor import checks as doctor_checks
    from pullsecret.doctor import kit
    from pullsecret.errors import TerminalError, TransientError
    from pullsecret.source.platform import doctor as platform_doctor

    settings = configured.load(
        {
            "HYPERFLEET_API_URL": "https://hf.example.com",
            "PULL_SECRET_SOURCE": "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret/versions/latest",
        }
    )
    ctx = kit.Context(settings, "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com", *([None] * 3))
    denied = TerminalError("denied", reason="PermissionDenied")
    fixes = [
        doctor_checks._role_fix(
            ctx, "hyperfleet-secrets-prod", ["secretmanager.secrets.get", "secretmanager.versions.add"]
        ),
        platform_doctor._source_fix(ctx, denied),
        doctor_direct._gke_fix(ctx, "projects/hyperfleet-adapters-prod/locations/europe-west1/clusters/mgmt-1", denied),
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
