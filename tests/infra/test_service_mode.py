"""terraform/ in service mode (issue 29): the Pull Secret Service in place of the platform pull secret.

What the runtime account is granted (evaluated from the HCL by emulators/iam_terraform.py, as the emulators enforce
it), the function's environment as the real terraform computes it and as pullsecret/settings/common.py then reads it, in
both authentication modes, and the service token's mount.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import hcl2
import pytest
from hcl2 import SerializationOptions

from emulators.iam_terraform import Grant, service_account_grants
from emulators.stack import PROJECT_ID, TERRAFORM_VARIABLES
from pullsecret import configured
from pullsecret.settings import common
from pullsecret.source.platform.settings import PlatformSettings
from pullsecret.source.service import settings as service_settings
from pullsecret.source.service.settings import ServiceSettings
from tests.infra import reality

TERRAFORM_DIR = reality.REPOSITORY_ROOT / "terraform"
OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
NUMBER = "123456789012"
SERVICE_URL = "https://pull-secrets.example.com"
SERVICE_TOKEN = f"projects/{PROJECT_ID}/secrets/pull-secret-service-token"
SERVICE = {"pull_secret_source_secret": "", "pull_secret_service_url": SERVICE_URL, "enable_source_rotation": False}
TOKEN_FILE = {"pull_secret_service_auth": "token-file", "pull_secret_service_token_secret": SERVICE_TOKEN}
ACCESSOR = "roles/secretmanager.secretAccessor"


def grants(**variables: Any) -> list[Grant]:
    _email, found = service_account_grants({**TERRAFORM_VARIABLES, **variables}, project_number=lambda _p: NUMBER)
    return found


def secret_reads(found: list[Grant]) -> dict[str, str]:
    """The secrets the runtime account may read outside its per-cluster secrets: {resource: grant address}."""
    return {g.resource: g.address for g in found if g.role == ACCESSOR}


def test_platform_mode_reads_the_platform_secret_and_nothing_of_the_service() -> None:
    reads = secret_reads(grants())
    assert reads[TERRAFORM_VARIABLES["pull_secret_source_secret"]].startswith(
        "google_secret_manager_secret_iam_member.runtime_pull_secret_source"
    )
    assert not [a for a in reads.values() if "pull_secret_service" in a]


@pytest.mark.parametrize("auth", ["google-id-token", "token-file"])
def test_service_mode_grants_no_access_to_a_platform_secret(auth: str) -> None:
    found = grants(**SERVICE, **(TOKEN_FILE if auth == "token-file" else {}))
    assert not [g for g in found if "runtime_pull_secret_source" in g.address]
    assert not [g for g in found if "platform-pull-secret" in g.resource]
    reads = secret_reads(found)
    hyperfleet_token = TERRAFORM_VARIABLES["hyperfleet_api_token_secret"]
    expected = {hyperfleet_token} | ({SERVICE_TOKEN} if auth == "token-file" else set())
    assert set(reads) == expected, reads  # google-id-token: the metadata server mints the token, nothing to read
    if auth == "token-file":
        assert reads[SERVICE_TOKEN] == ("google_secret_manager_secret_iam_member.runtime_pull_secret_service_token[0]")
    # The per-cluster secrets' grants are the same in both modes (one Secret Manager write per change, as now).
    platform = {g.address: (g.permissions, g.condition) for g in grants() if "runtime_secret_manager" in g.address}
    service = {g.address: (g.permissions, g.condition) for g in found if "runtime_secret_manager" in g.address}
    assert service == platform


def test_the_service_token_is_mounted_as_a_file_at_its_own_path() -> None:
    with (TERRAFORM_DIR / "function.tf").open() as handle:
        parsed = hcl2.load(handle, serialization_options=OPTIONS)
    with (TERRAFORM_DIR / "main.tf").open() as handle:
        main_locals: dict[str, Any] = {}
        for block in hcl2.load(handle, serialization_options=OPTIONS)["locals"]:
            main_locals.update(block)
    (function,) = [
        b["google_cloudfunctions2_function"]["adapter"]
        for b in parsed["resource"]
        if "google_cloudfunctions2_function" in b
    ]
    (service,) = function["service_config"]
    volumes = [d["secret_volumes"] for d in service["dynamic"] if "secret_volumes" in d]
    (mount,) = [v for v in volumes if "pull_secret_service" in v["for_each"]]
    assert mount["for_each"] == "${local.pull_secret_service_token_file ? [var.pull_secret_service_token_secret] : []}"
    content = mount["content"][0]
    assert content["mount_path"] == "${local.pull_secret_service_token_mount}"
    assert content["secret"] == "${local.pull_secret_service_token_secret_id}"
    assert content["project_id"] == "${local.pull_secret_service_token_project}"
    assert content["versions"][0] == {"version": "latest", "path": "${local.pull_secret_service_token_name}"}
    # Its own directory: Cloud Run mounts each secret volume on a directory of its own, never nested.
    ours, theirs = main_locals["pull_secret_service_token_mount"], main_locals["hyperfleet_token_mount_path"]
    assert ours.startswith("/etc/secrets/") and ours != theirs
    assert not ours.startswith(theirs + "/") and not theirs.startswith(ours + "/")
    assert "secret_environment_variables" not in service  # a token is never an environment variable


# -- the function's environment, computed by the real terraform --------------------------------------------

_ENVIRONMENT_LINE = re.compile(r"^\s+(PULL_SECRET_\w+)\s+=\s+(.+)$", re.M)
_SERVICE_LOCAL = re.compile(r"^\s+(pull_secret_service\w*)\s+=\s+(.+)$", re.M)


def environment_module(folder: Path, overrides: dict[str, Any]) -> None:
    """variables.tf, the service-mode locals of main.tf and function.tf's PULL_SECRET_* entries, as written."""
    # The service's CA bundle is ca_bundles.tf's (any source mode; tests/infra/test_ca_bundles.py).
    entries = [
        (name, value)
        for name, value in _ENVIRONMENT_LINE.findall((TERRAFORM_DIR / "function.tf").read_text())
        if name != "PULL_SECRET_SERVICE_CA_BUNDLE"
    ]
    assert {name for name, _ in entries} == {
        "PULL_SECRET_SOURCE",
        "PULL_SECRET_SERVICE_URL",
        "PULL_SECRET_SERVICE_AUTH",
        "PULL_SECRET_SERVICE_AUDIENCE",
        "PULL_SECRET_SERVICE_TOKEN_FILE",
        "PULL_SECRET_SERVICE_REGISTRIES",
        "PULL_SECRET_SERVICE_TOKEN_CLUSTER",
        "PULL_SECRET_SERVICE_SERVICE_ACCOUNT",
    }
    service_locals = _SERVICE_LOCAL.findall((TERRAFORM_DIR / "main.tf").read_text())
    assert service_locals, "main.tf has no pull_secret_service locals"
    body = "\n".join(f"  {name} = {value}" for name, value in service_locals)
    env = "\n".join(f"    {name} = {value}" for name, value in entries)
    output = 'output "environment" { value = local.environment }\n'
    (folder / "main.tf").write_text(f"locals {{\n{body}\n  environment = {{\n{env}\n  }}\n}}\n{output}")
    shutil.copy(TERRAFORM_DIR / "variables.tf", folder / "variables.tf")
    shutil.copy(TERRAFORM_DIR / "example.tfvars", folder / "example.auto.tfvars")
    (folder / "overrides.auto.tfvars.json").write_text(json.dumps(overrides))


def terraform_environment(folder: Path, overrides: dict[str, Any]) -> dict[str, str]:
    binary, why = reality.terraform((1, 9))  # validations that refer to other variables
    if binary is None:
        reality.missing(why)
    assert binary is not None
    folder.mkdir(parents=True, exist_ok=True)
    environment_module(folder, overrides)
    values: dict[str, str] = reality.terraform_outputs(binary, folder)["environment"]
    return values


def load(environment: dict[str, str], token_file: Path | None = None) -> common.Settings:
    """The settings the function builds at cold start from this environment (the mounted token: a local file)."""
    env = {"HYPERFLEET_API_URL": "https://hf.example.com", "HYPERFLEET_API_AUTH": "google-id-token", **environment}
    if token_file is not None:
        token_file.write_text("token\n")
        env["PULL_SECRET_SERVICE_TOKEN_FILE"] = str(token_file)
    return configured.load(env)


def test_platform_mode_sets_only_the_platform_source(tmp_path: Path) -> None:
    environment = terraform_environment(tmp_path, {})
    assert (
        environment["PULL_SECRET_SOURCE"]
        == "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret/versions/latest"
    )
    assert {name: value for name, value in environment.items() if name.startswith("PULL_SECRET_SERVICE")} == {
        name: "" for name in environment if name.startswith("PULL_SECRET_SERVICE")
    }
    settings = load(environment)
    assert settings.of(PlatformSettings).version == environment["PULL_SECRET_SOURCE"]
    assert settings.of(ServiceSettings).url is None


def test_service_mode_with_google_id_tokens(tmp_path: Path) -> None:
    environment = terraform_environment(tmp_path, {**SERVICE, "pull_secret_service_registries": ["quay"]})
    assert environment == {
        "PULL_SECRET_SOURCE": "",
        "PULL_SECRET_SERVICE_URL": SERVICE_URL,
        "PULL_SECRET_SERVICE_AUTH": "google-id-token",
        "PULL_SECRET_SERVICE_AUDIENCE": "",  # unset: the function takes the base URL
        "PULL_SECRET_SERVICE_TOKEN_FILE": "",
        "PULL_SECRET_SERVICE_REGISTRIES": "quay",
        "PULL_SECRET_SERVICE_TOKEN_CLUSTER": "",
        "PULL_SECRET_SERVICE_SERVICE_ACCOUNT": "",
    }
    settings = load(environment)
    assert settings.of(PlatformSettings).version is None
    assert settings.of(ServiceSettings).url == SERVICE_URL
    assert settings.of(ServiceSettings).auth == "google-id-token"
    assert settings.of(ServiceSettings).audience == SERVICE_URL
    assert settings.of(ServiceSettings).token_file is None
    assert settings.of(ServiceSettings).registries == ("quay",)


def test_service_mode_with_a_mounted_token(tmp_path: Path) -> None:
    overrides = {
        **SERVICE,
        **TOKEN_FILE,
        "pull_secret_service_token_secret": SERVICE_TOKEN.replace(PROJECT_ID, "hyperfleet-adapters-prod"),
    }
    environment = terraform_environment(tmp_path / "module", {**overrides, "pull_secret_service_audience": "pss"})
    assert environment["PULL_SECRET_SOURCE"] == ""
    assert environment["PULL_SECRET_SERVICE_AUTH"] == "token-file"
    assert environment["PULL_SECRET_SERVICE_TOKEN_FILE"] == "/etc/secrets/pull-secret-service/token"
    assert environment["PULL_SECRET_SERVICE_REGISTRIES"] == "quay,rhit"
    settings = load(environment, token_file=tmp_path / "token")
    assert settings.of(ServiceSettings).auth == "token-file"
    assert settings.of(ServiceSettings).token_file == str(tmp_path / "token")
    assert settings.of(ServiceSettings).audience == "pss"
    assert settings.of(ServiceSettings).registries == ("quay", "rhit")


def test_the_registries_default_is_the_functions() -> None:
    variables: dict[str, Any] = {}
    with (TERRAFORM_DIR / "variables.tf").open() as handle:
        for block in hcl2.load(handle, serialization_options=OPTIONS)["variable"]:
            variables.update(block)
    defaults = configured.load(
        {"HYPERFLEET_API_URL": "https://hf.example.com", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    )
    assert tuple(variables["pull_secret_service_registries"]["default"]) == defaults.of(ServiceSettings).registries
    assert variables["pull_secret_service_auth"]["default"] == defaults.of(ServiceSettings).auth
    condition = variables["pull_secret_service_registries"]["validation"][0]["condition"]
    assert service_settings.REGISTRY_ID_RE.pattern in condition.replace("\\\\", "\\")


def test_service_mode_with_a_service_account_token(tmp_path: Path) -> None:
    """The service alone in service-account-token mode: its own token cluster and account reach the function."""
    cluster = "projects/hyperfleet-regional-prod/locations/us-central1/clusters/regional-1"
    environment = terraform_environment(
        tmp_path,
        {
            "pull_secret_source_secret": "",
            "pull_secret_service_url": "https://pull-secrets.example.com",
            "pull_secret_service_auth": "service-account-token",
            "hyperfleet_token_cluster": cluster,
            "enable_source_rotation": False,
        },
    )
    assert environment["PULL_SECRET_SERVICE_TOKEN_CLUSTER"] == cluster
    assert environment["PULL_SECRET_SERVICE_TOKEN_FILE"] == ""
    source = load(environment).caller.service_token
    assert source is not None and (source.cluster, source.account) == (cluster, "hyperfleet/pullsecret-adapter")
