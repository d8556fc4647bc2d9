"""Each root's bootstrap (terraform/scripts/bootstrap.sh renders terraform/bootstrap/commands.tf from the root's own
values with the real terraform, offline), held to those values, to cloudbuild.yaml's deployer roles and to the real
gcloud's parser (issue 51, items 1, 5, 7 and 9).

Item 1: README step 4 hard-coded `hyperfleet-api-token` and created the platform pull secret (ALREADY_EXISTS for a
second root sharing it); staging wants `hyperfleet-api-token-stg`, production-us `hyperfleet-api-token-us`, and
nothing created or granted them. Item 5: nothing granted the deployer anything in the token cluster's project.
Item 9: the deployer's projectIamAdmin could grant any role.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.infra import deployer_permissions, gcloud_commands, reality
from tests.infra.roots import FOURTH_ROOT, ROOTS, tfvars_text

BOOTSTRAP = reality.REPOSITORY_ROOT / "terraform" / "scripts" / "bootstrap.sh"
# The fourth root of test_roots, with what the sample roots do not exercise: a token cluster in a project of its own,
# CMEK keys, and the service in token-file mode (its token secret to create).
FOURTH = {
    **FOURTH_ROOT,
    "hyperfleet_api_auth": "service-account-token",
    "hyperfleet_api_token_secret": "",
    "hyperfleet_token_cluster": "projects/hyperfleet-regional-sandbox1/locations/europe-west4/clusters/regional-1",
    "pubsub_kms_key_name": "projects/hyperfleet-kms-sandbox/locations/europe-west4/keyRings/r/cryptoKeys/pubsub",
    "secret_kms_key": "projects/hyperfleet-kms-sandbox/locations/global/keyRings/r/cryptoKeys/secrets",
}
# bootstrap's scope names -> cloudbuild.yaml's deployer scopes
SCOPES = {
    "function": deployer_permissions.FUNCTION_PROJECT,
    "secret": deployer_permissions.SECRET_PROJECT,
    "management": deployer_permissions.MANAGEMENT_PROJECT,
    "token": deployer_permissions.TOKEN_CLUSTER_PROJECT,
    "source": deployer_permissions.SOURCE_PROJECT,
}
PROJECT_IAM_ADMIN = "roles/resourcemanager.projectIamAdmin"


def _terraform() -> Path:
    binary, why = reality.terraform((1, 9))
    if binary is None:
        reality.missing(why)
    assert binary is not None
    return binary


def render(root: Path, work: Path) -> dict[str, Any]:
    """The bootstrap's outputs for ROOT (the script's own steps: the root's variables.tf, tfvars, commands.tf)."""
    work.mkdir(parents=True)
    shutil.copy(root / "variables.tf", work / "variables.tf")
    shutil.copy(root / "terraform.tfvars", work / "terraform.tfvars")
    shutil.copy(reality.REPOSITORY_ROOT / "terraform" / "bootstrap" / "commands.tf", work / "commands.tf")
    return reality.terraform_outputs(_terraform(), work)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """root name -> (its tfvars, the bootstrap's outputs), for every root and the fourth."""
    work = tmp_path_factory.mktemp("bootstrap")
    fourth = work / "sandbox"
    shutil.copytree(ROOTS[0], fourth)
    (fourth / "terraform.tfvars").write_text(tfvars_text(FOURTH))
    found = {}
    for root in [*ROOTS, fourth]:
        with (root / "terraform.tfvars").open() as handle:
            values = hcl2.load(handle, serialization_options=deployer_permissions.OPTIONS)
        found[root.name] = (values, render(root, work / f"out-{root.name}"))
    return found


def named_secrets(values: dict[str, Any]) -> set[str]:
    """The secrets a root's values name that the module binds the runtime account on."""
    service = bool(values.get("pull_secret_service_url"))
    names = {
        values.get("hyperfleet_api_token_secret", "")
        if values.get("hyperfleet_api_auth", "token-file") == "token-file"
        else "",
        "" if service else values.get("pull_secret_source_secret", ""),
        values.get("pull_secret_service_token_secret", "") if service else "",
        values.get("hyperfleet_api_ca_bundle_secret", ""),
        values.get("pull_secret_service_ca_bundle_secret", ""),
        values.get("registry_ca_bundle_secret", ""),
    }
    return {n for n in names if n}


def test_the_script_prints_a_roots_bootstrap(tmp_path: Path) -> None:
    env = {**os.environ, "TERRAFORM": str(_terraform())}
    done = subprocess.run(
        [str(BOOTSTRAP), str(ROOTS[0])], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in done.stdout
    syntax = subprocess.run(["bash", "-n"], input=done.stdout, capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr


def test_every_root_creates_and_grants_its_own_secrets(
    rendered: dict[str, tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    for root, (values, out) in rendered.items():
        assert set(out["secrets"]) == named_secrets(values), root
        script = out["script"]
        for secret in out["secrets"]:
            _p, project, _s, secret_id = secret.split("/")
            # Created only when missing: a secret another root already made (the shared platform pull secret) is
            # left as it is, never an ALREADY_EXISTS.
            assert (
                f"gcloud secrets describe {secret_id} --project={project} >/dev/null 2>/dev/null || "
                f"gcloud secrets create {secret_id} --project={project} "
            ) in script, (root, secret)
            deployer = f"hf-pullsecret-deployer@{values['project_id']}.iam.gserviceaccount.com"
            assert (
                f"gcloud secrets add-iam-policy-binding {secret_id} --project={project} "
                f"--member=serviceAccount:{deployer} --role=roles/secretmanager.admin"
            ) in script, (root, secret)
    # The second region's and the second environment's own token secrets (the README's step hard-coded
    # production's).
    assert "hyperfleet-api-token-us" in rendered["production-us"][1]["script"]
    assert "hyperfleet-api-token-stg" in rendered["staging"][1]["script"]


def test_the_deployer_gets_what_cloudbuild_yaml_lists_in_every_project_the_root_names(
    rendered: dict[str, tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    listed = deployer_permissions.deployer_grants(deployer_permissions.CLOUDBUILD.read_text())
    for root, (values, out) in rendered.items():
        token = values.get("hyperfleet_token_cluster", "")
        scopes_of = {
            "function": [values["project_id"]],
            "secret": [values["pinned_secret_project_id"]],
            "management": [values["management_cluster"].split("/")[1]],
            "token": [token.split("/")[1]] if token else [],
            "source": [values["pull_secret_source_secret"].split("/")[1]],
        }
        wanted: dict[str, set[str]] = {}
        for scope, projects in scopes_of.items():
            for project in projects:
                wanted.setdefault(project, set()).update(listed[SCOPES[scope]][0] - {PROJECT_IAM_ADMIN})
        assert {p: set(r) for p, r in out["deployer_roles"].items()} == wanted, root
        for project in wanted:
            line = f"gcloud projects add-iam-policy-binding {project} --member=serviceAccount:hf-pullsecret-deployer@"
            assert f"{line}{values['project_id']}.iam.gserviceaccount.com --role={PROJECT_IAM_ADMIN}" in out["script"]
    # Issue 51, item 5: the token cluster's project is a scope of its own, and the fourth root's gets its grants.
    assert "hyperfleet-regional-sandbox1" in rendered["sandbox"][1]["deployer_roles"]


def test_project_iam_admin_may_grant_only_what_the_module_grants(
    rendered: dict[str, tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    # Every role a google_project_iam_member of the module binds, in its scope, with this instance's suffix, is in
    # the deployer's condition for that project; nothing else is.
    found = deployer_permissions.resources()
    custom = {
        name: body["role_id"]
        for a, (kind, body) in found.items()
        if kind == "google_project_iam_custom_role"
        for name in [a.split(".")[1]]
    }
    for root, (values, out) in rendered.items():
        suffix = values.get("name_suffix", "")
        needed: dict[str, set[str]] = {}
        for address, (kind, body) in found.items():
            if kind != "google_project_iam_member":
                continue
            scope = deployer_permissions.SCOPES.get(address, deployer_permissions.FUNCTION_PROJECT)
            role = str(body["role"])
            if role.startswith("${google_project_iam_custom_role."):
                role_id = custom[role.split(".")[1].split("[", maxsplit=1)[0]].replace(
                    "${local.role_suffix}", f"_{suffix}" if suffix else ""
                )
                role = f"{{project}}/roles/{role_id}"
            needed.setdefault(scope, set()).add(role)
        for scope, projects in (
            (deployer_permissions.FUNCTION_PROJECT, [values["project_id"]]),
            (deployer_permissions.SECRET_PROJECT, [values["pinned_secret_project_id"]]),
            (deployer_permissions.MANAGEMENT_PROJECT, [values["management_cluster"].split("/")[1]]),
        ):
            for project in projects:
                allowed = set(out["deployer_iam_roles"][project])
                for role in needed.get(scope, set()):
                    assert role.replace("{project}", f"projects/{project}") in allowed, (root, scope, role)
        for line in out["script"].splitlines():
            if PROJECT_IAM_ADMIN in line and "add-iam-policy-binding" in line:
                assert "modifiedGrantsByRole" in line and "hasOnly([" in line and "--condition=None" not in line
            elif PROJECT_IAM_ADMIN in line:  # the unconditioned grant of earlier releases, removed
                assert "remove-iam-policy-binding" in line and "--condition=None" in line


def test_the_project_wide_grants_are_the_bootstraps(rendered: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    # Issue 51, item 7: the CMEK grants were the same binding in several roots' states; the bootstrap makes them.
    script = rendered["sandbox"][1]["script"]
    assert f"gcloud kms keys add-iam-policy-binding {FOURTH['pubsub_kms_key_name']} " in script
    assert f"gcloud kms keys add-iam-policy-binding {FOURTH['secret_kms_key']} " in script
    assert "--role=roles/eventarc.serviceAgent" in script
    # The test account: its build's logs, nothing more.
    tester = [line for line in script.splitlines() if "hf-pullsecret-tester@" in line and "add-iam-policy" in line]
    assert tester and all("--role=roles/logging.logWriter" in line for line in tester)


def test_every_command_of_every_bootstrap_parses_with_the_real_gcloud(
    rendered: dict[str, tuple[dict[str, Any], dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gcloud = reality.gcloud()
    if gcloud is None:
        reality.missing("no gcloud on PATH")
    assert gcloud is not None
    # gcloud reads --data-file while parsing: the first values the operator puts in DATA_DIR.
    monkeypatch.setitem(gcloud_commands.SHELL_VALUES, "DATA_DIR", str(tmp_path))
    for _values, out in rendered.values():
        for secret in out["secrets"]:
            (tmp_path / secret.split("/")[3]).write_text("first value\n")
    # Every root's script is made of the same command shapes; the fourth root's has each of them (a token cluster,
    # CMEK keys, an environment label, secrets to create).
    commands = gcloud_commands.commands_in_shell(rendered["sandbox"][1]["script"], "bootstrap of the fourth root")
    words = gcloud_commands.expand(commands)
    # One command of each shape is enough (the command and its flags; the values differ by project, role, secret);
    # of the conditioned bindings, the one with the longest condition.
    distinct: dict[str, list[str]] = {}
    for command in sorted(words, key=lambda c: -len(" ".join(c))):
        distinct.setdefault(json.dumps([*command[:3], *sorted(w.split("=", 1)[0] for w in command[3:])]), command)
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda c: gcloud_commands.parse_problem(gcloud, c), distinct.values()))
    problems = [f"{c[:6]}: {p}" for c, p in zip(distinct.values(), answers, strict=True) if p]
    assert not problems, "\n".join(problems)
    assert any(c[:2] == ["kms", "keys"] for c in words) and any(c[:2] == ["secrets", "create"] for c in words)
