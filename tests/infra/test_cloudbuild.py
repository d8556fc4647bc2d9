"""cloudbuild.yaml: parses, tests with `make test` first, then deploys; substitutions are declared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
CLOUDBUILD = REPOSITORY_ROOT / "cloudbuild.yaml"
# Substitutions Cloud Build provides itself (https://cloud.google.com/build/docs/configuring-builds/substitute-variable-values).
BUILT_INS = {
    "PROJECT_ID",
    "PROJECT_NUMBER",
    "BUILD_ID",
    "LOCATION",
    "TRIGGER_NAME",
    "COMMIT_SHA",
    "SHORT_SHA",
    "REVISION_ID",
    "REPO_NAME",
    "REPO_FULL_NAME",
    "BRANCH_NAME",
    "TAG_NAME",
    "REF_NAME",
    "TRIGGER_BUILD_CONFIG_PATH",
    "SERVICE_ACCOUNT_EMAIL",
    "SERVICE_ACCOUNT",
}
# $$ escapes a dollar for the shell; anything else starting with $ is a substitution.
SUBSTITUTION = re.compile(r"(?<!\$)\$(?:\{(\w+)\}|(\w+))")


@pytest.fixture(scope="module")
def build() -> dict[str, Any]:
    loaded = yaml.safe_load(CLOUDBUILD.read_text())
    assert isinstance(loaded, dict)
    return loaded


def step_command(step: dict[str, Any]) -> str:
    return " ".join([str(step.get("entrypoint", "")), *map(str, step.get("args", [])), str(step.get("script", ""))])


def strip_escaped(text: str) -> str:
    return text.replace("$$", "")


def test_the_test_step_runs_make_test_with_everything_the_reality_checks_need(build: dict[str, Any]) -> None:
    test = next(s for s in build["steps"] if s.get("id") == "test")
    command = step_command(test)
    assert re.search(r"\bmake test\b", command), command
    makefile = (REPOSITORY_ROOT / "Makefile").read_text()
    assert re.search(r"^test:", makefile, re.MULTILINE)
    # Issue 10, defect 7: without the Cloud SDK's Pub/Sub emulator and Java the delivery tests skip; CI=true
    # turns such a skip into a failure (tests/conftest.py), and the real terraform serves the validations.
    assert "CI=true" in test.get("env", [])
    for needed in ("google-cloud-cli-pubsub-emulator", "google-cloud-cli", "default-jre-headless", "make"):
        assert re.search(rf"apt-get install .*\b{re.escape(needed)}\b", command), needed
    assert "terraform-binary" in test.get("waitFor", [])
    assert "/workspace/.tools:$$PATH" in command
    assert command.index("apt-get install") < command.index("make test")
    assert re.fullmatch(r"python:3\.1[1-9]", test["name"]), test["name"]


def test_deploy_runs_terraform_apply_after_the_tests(build: dict[str, Any]) -> None:
    steps = build["steps"]
    deploy = next(s for s in steps if s.get("id") == "deploy")
    assert "terraform apply" in step_command(deploy)
    assert steps.index(deploy) > 0
    assert "test" in deploy.get("waitFor", ["test"])
    ids = [s.get("id") for s in steps]
    for dependency in deploy.get("waitFor", []):
        assert dependency in ids, dependency
        assert ids.index(dependency) < ids.index("deploy")


def test_substitutions_are_declared_and_region_style(build: dict[str, Any]) -> None:
    declared = set(build.get("substitutions", {}))
    assert "_ROOT" in declared
    assert all(re.fullmatch(r"_[A-Z][A-Z0-9_]*", name) for name in declared), declared
    used = set()
    for step in build["steps"]:
        for braced, bare in SUBSTITUTION.findall(strip_escaped(yaml.safe_dump(step))):
            used.add(braced or bare)
    unknown = used - declared - BUILT_INS
    assert not unknown, f"undeclared substitutions (escape shell variables as $$VAR): {unknown}"
    assert {"_ROOT", "_TF_STATE_BUCKET", "_TFVARS_URI"} <= used


def test_the_build_deploys_the_root_its_substitution_names(build: dict[str, Any]) -> None:
    # Issue 42: one module, a root per environment and region; a trigger chooses the root (_ROOT).
    (deploy,) = [s for s in build["steps"] if s.get("id") == "deploy"]
    script = "\n".join(map(str, deploy["args"]))
    assert 'root="terraform/environments/${_ROOT}"' in script and 'cd "$$root"' in script
    root = REPOSITORY_ROOT / "terraform" / "environments" / str(build["substitutions"]["_ROOT"])
    assert (root / "backend.tf").is_file(), "the default _ROOT is not a root"
    # The root's project is checked against the build's before anything is applied.
    assert script.index("var.project_id | terraform console") < script.index("terraform apply")


def test_substitution_scanner_flags_an_unescaped_shell_variable() -> None:
    used = {a or b for a, b in SUBSTITUTION.findall(strip_escaped("echo $PATH $$HOME ${_REGION}"))}
    assert used == {"PATH", "_REGION"}


def test_build_identity_roles_are_documented() -> None:
    text = CLOUDBUILD.read_text()
    for role in ("roles/cloudfunctions.developer", "roles/iam.serviceAccountUser", "roles/pubsub.admin"):
        assert role in text, role
    assert build_logging_is_user_sa_compatible(yaml.safe_load(text))


def build_logging_is_user_sa_compatible(build: dict[str, Any]) -> bool:
    # A build that runs as a user-specified service account must choose where its logs go.
    return build.get("options", {}).get("logging") in {"CLOUD_LOGGING_ONLY", "GCS_ONLY", "NONE"}


_LOCKING = re.compile(r"\bterraform\s+(apply|plan|destroy|import|refresh)\b")
_DURATION = re.compile(r"^(\d+)([smh])$")


def lock_timeout_problems(text: str, substitutions: dict[str, Any]) -> list[str]:
    """Each terraform command that takes the state lock waits for it (issue 42, item 9): two quick pushes run two
    builds, and without -lock-timeout the second fails at once on the first's lock instead of queueing."""
    problems = []
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        if not _LOCKING.search(line):
            continue
        match = re.search(r"-lock-timeout=(\S+)", line)
        if not match:
            problems.append(f"no -lock-timeout: {line.strip()}")
            continue
        value = match.group(1)
        named = SUBSTITUTION.fullmatch(value)
        if named:
            value = str(substitutions.get(named.group(1) or named.group(2), ""))
        duration = _DURATION.match(value)
        seconds = int(duration.group(1)) * {"s": 1, "m": 60, "h": 3600}[duration.group(2)] if duration else 0
        if seconds < 300:
            problems.append(f"-lock-timeout {value!r} is shorter than a build's apply (5 minutes): {line.strip()}")
    return problems


def test_terraform_waits_for_the_state_lock(build: dict[str, Any]) -> None:
    scripts = "\n".join(str(arg) for step in build["steps"] for arg in step.get("args", []))
    assert _LOCKING.search(scripts), "cloudbuild.yaml runs no terraform apply"
    assert lock_timeout_problems(scripts, build["substitutions"]) == []
    assert lock_timeout_problems("terraform apply -input=false -auto-approve", {}) != []
