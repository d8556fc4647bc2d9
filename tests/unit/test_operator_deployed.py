"""The deployed function's configuration against this shell's: what changes the result is named, how is not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pullsecret.operator import deployed

DESCRIBED = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/gcloud/functions-describe-gen2.json").read_text()
)
DEPLOYED = deployed.environment_of(DESCRIBED)


def test_the_environment_of_a_2nd_gen_and_a_1st_gen_answer() -> None:
    assert DEPLOYED["REGISTRY_VERIFICATION"] == "report" and "LOG_EXECUTION_ID" in DEPLOYED
    assert deployed.environment_of({"environmentVariables": {"A": "1"}}) == {"A": "1"}
    assert deployed.environment_of({"serviceConfig": {}}) == {}
    with pytest.raises(deployed.DeployedUnknown):
        deployed.environment_of([])


def test_the_same_configuration_written_differently_agrees() -> None:
    local = {**DEPLOYED, "REGISTRY_VERIFICATION": " REPORT ", "LOG_LEVEL": "DEBUG", "RETRY_DEADLINE": "5"}
    local["HYPERFLEET_API_TOKEN_FILE"] = "/home/me/token"  # where it lies here, not what it says
    del local["RETAIN_VERSIONS"]  # 3 is the default
    assert deployed.differences(local, DEPLOYED) == []


def test_what_changes_the_result_is_named_with_both_values() -> None:
    local = {**DEPLOYED, "REGISTRY_VERIFICATION": "enforce", "REGISTRY_ENFORCE_PLATFORM": "true"}
    local["PULL_SECRET_SOURCE"] = "projects/hf-prod/secrets/platform-pull-secret/versions/7"
    assert deployed.differences(local, DEPLOYED) == [
        "PULL_SECRET_SOURCE: here 'projects/hf-prod/secrets/platform-pull-secret/versions/7', "
        "deployed 'projects/hf-prod/secrets/platform-pull-secret/versions/latest'",
        "REGISTRY_ENFORCE_PLATFORM: here 'true', deployed unset",
        "REGISTRY_VERIFICATION: here 'enforce', deployed 'report'",
    ]


def test_a_side_that_does_not_load_is_compared_as_written() -> None:
    local = {**DEPLOYED, "REGISTRY_VERIFICATION": "enforced"}
    assert deployed.differences(local, DEPLOYED) == ["REGISTRY_VERIFICATION: here 'enforced', deployed 'report'"]


def test_refusal_names_the_difference_or_why_it_could_not_compare() -> None:
    def answered(stdout: str, code: int = 0, stderr: str = "") -> deployed.Runner:
        return lambda command: subprocess.CompletedProcess(command, code, stdout, stderr)

    name = "projects/hf-prod/locations/us-central1/functions/pullsecret"
    text = json.dumps(DESCRIBED)
    assert deployed.refusal(DEPLOYED, name, run=answered(text)) is None
    refused = deployed.refusal({**DEPLOYED, "KUBERNETES_DELIVERY": "external-secrets"}, name, run=answered(text))
    assert refused is not None and refused.startswith("refusing to write") and "KUBERNETES_DELIVERY: here" in refused
    failed = deployed.refusal(DEPLOYED, name, run=answered("", 1, "ERROR: (gcloud.functions.describe) NOT_FOUND"))
    assert failed is not None and "NOT_FOUND" in failed and "nothing was written" in failed
    assert "must be projects/P" in str(deployed.refusal(DEPLOYED, "pullsecret", run=answered(text)))
    assert deployed.describe_command(name) == [
        "gcloud", "functions", "describe", "pullsecret", "--region", "us-central1", "--project", "hf-prod",
        "--format", "json",
    ]  # fmt: skip


def test_a_failed_describe_says_gclouds_error_line_not_its_last() -> None:
    # Issue 52, item 9: offline or signed out, gcloud ends with advice; the error is the line that says ERROR.
    from pullsecret.operator import deployed

    stderr = (
        "ERROR: (gcloud.functions.describe) You do not currently have an active account selected.\n"
        "Please run:\n\n  $ gcloud auth login\n\nto obtain new credentials.\n\n"
        "If you have already logged in with a different account, run:\n\n  $ gcloud config set account ACCOUNT\n"
    )

    def run(command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", stderr)

    with pytest.raises(deployed.DeployedUnknown) as raised:
        deployed.read("projects/p/locations/l/functions/f", run=run)
    assert str(raised.value).endswith(
        "failed: ERROR: (gcloud.functions.describe) You do not currently have an active account selected."
    ), raised.value
