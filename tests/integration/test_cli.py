"""The operator CLI, run as a real process (`python -m pullsecret`) against the emulator stack."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from emulators.world import PROJECT_ID
from tests.integration.cli_process import cli
from tests.support import Admin, seed_ready_cluster

CID = "cls-cli001"
NAMESPACE = f"clusters-{CID}"
KUBE_NAME = f"{CID}-pull-secret"


def test_reconcile_runs_the_function_code_and_reports(function_env: dict[str, str], admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    first = cli("reconcile", CID, "-v")  # the log lines only with -v (issue 34)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"cluster {CID}: applied\n") and "Available=True" in first.stdout
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is not None
    reports = [r for r in admin.reports() if r.get("cluster_id") == CID]
    assert len(reports) == 1 and reports[0]["code"] == 201
    # stdout is for a person; the function's structured log lines go to stderr, every one of them JSON
    assert not any(line.startswith("{") for line in first.stdout.splitlines())
    lines = [json.loads(line) for line in first.stderr.splitlines()]
    assert any(line.get("delivery") == "cli" and line.get("result") == "applied" for line in lines)

    again = cli("reconcile", CID, "--quiet")
    assert again.returncode == 0 and again.stdout.startswith(f"cluster {CID}: unchanged") and again.stderr == ""

    as_json = cli("reconcile", CID, "--json")
    outcome = json.loads(as_json.stdout)
    assert outcome["result"] == "unchanged" and outcome["exit_code"] == 0 and outcome["status_code"] == 201
    assert {c["type"]: c["status"] for c in outcome["conditions"]}["Available"] == "True"


def test_reconcile_exit_codes(function_env: dict[str, str], admin: Admin, world: Any) -> None:
    gone = cli("reconcile", "cls-nowhere")
    assert gone.returncode == 4 and "does not know this cluster" in gone.stdout

    admin.seed_cluster(CID, {"name": CID, "generation": 1, "spec": {"platform": {"type": "gcp"}}})
    waiting = cli("reconcile", CID)
    assert waiting.returncode == 4 and "PreconditionsNotMet" in waiting.stdout

    seed_ready_cluster(admin, CID, placement_data={"namespace": "kube-system"})
    refused = cli("reconcile", CID)
    assert refused.returncode == 1 and "ForbiddenNamespace" in refused.stdout

    seed_ready_cluster(admin, CID)
    admin.fault(service="hyperfleet", method="getClusterById", code="503", rate=1.0)
    retry = cli("reconcile", CID, "-v", env={**os.environ, "RETRY_DEADLINE": "1"})
    assert retry.returncode == 3 and "try again" in retry.stdout
    # There is no event here: nothing may speak of one being redelivered.
    assert "redeliver" not in (retry.stdout + retry.stderr).lower()
    assert json.loads(retry.stderr.splitlines()[-1])["result"] == "transient"


def test_help_lists_the_subcommands_the_exit_codes_and_the_environment(function_env: dict[str, str]) -> None:
    for args in (["--help"], ["reconcile", "--help"]):
        shown = cli(*args)
        assert shown.returncode == 0
        for expected in ("exit codes:", "  3    transient failure", "  4    nothing done", "HYPERFLEET_API_URL"):
            assert expected in shown.stdout, (args, expected)
        for expected in (
            "  5    configuration error",
            "  141  ",
            "PULL_SECRET_SERVICE_URL",
            "PULLSECRET_OPERATOR_KUBECONFIG",
        ):
            assert expected in shown.stdout, (args, expected)  # issue 43: --help complete
    for command in ("fleet", "doctor", "rekey"):
        assert command in cli("--help").stdout.split("exit codes:")[0].split("commands:")[1], command
    assert "reconcile" in cli("--help").stdout and "inspect" in cli("--help").stdout


def test_usage_errors_exit_2_configuration_errors_5(function_env: dict[str, str]) -> None:
    assert cli().returncode == 2
    assert cli("reconcile", "../etc").returncode == 2
    env = {k: v for k, v in os.environ.items() if k != "HYPERFLEET_API_URL"}
    missing = cli("reconcile", CID, env=env)
    assert missing.returncode == 5 and "HYPERFLEET_API_URL is required" in missing.stderr


OPERATOR = "operator@example.com"
# roles/secretmanager.viewer (https://cloud.google.com/secret-manager/docs/access-control): metadata, no payloads.
OPERATOR_SECRET_MANAGER = frozenset(
    {
        "secretmanager.secrets.get",
        "secretmanager.secrets.list",
        "secretmanager.versions.get",
        "secretmanager.versions.list",
    }
)


def test_inspect_prints_redacted_lineage_across_the_three_systems(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_ready_cluster(admin, CID)
    assert cli("reconcile", CID).returncode == 0
    # With the function's runtime identity, inspect cannot read the Kubernetes Secret (no get on Secrets)...
    refused = json.loads(cli("inspect", CID).stdout)["kubernetes"]
    assert "403 Forbidden" in refused["error"] and "your own" in refused["error"], refused
    assert "exists" not in refused
    # ...with the operator's own credentials (ADC: here, tokens the metadata server issues to the operator,
    # who may read Secrets on the management cluster) it reads everything.
    monkeypatch.setattr(world.metadata, "service_account", OPERATOR)
    world.kubernetes.grant(OPERATOR, verbs=("get",), resources=("secrets",), api_groups=("",))
    for emulator, role, permissions in (
        (world.secretmanager, "roles/secretmanager.viewer", OPERATOR_SECRET_MANAGER),
        (world.gke, "roles/container.clusterViewer", None),
    ):
        emulator.bind(OPERATOR, role, f"projects/{PROJECT_ID}", permissions=permissions)
    result = cli("inspect", CID)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["in_sync"] is True
    assert report["hyperfleet"]["generation"] == 1
    assert {c["type"]: c["status"] for c in report["hyperfleet"]["status"]["conditions"]}["Available"] == "True"
    assert report["hyperfleet"]["status"]["lineage"]["sm_version"].endswith("/versions/1")
    sm = report["secret_manager"]
    assert [v["state"] for v in sm["versions"]] == ["ENABLED"]
    lineage_registries = {r["registry"]: r for r in report["hyperfleet"]["status"]["lineage"]["registries"]}
    assert lineage_registries["quay.io"]["since_version"] == "1"
    # One key, one meaning: the label says the schema version; Secret Manager records no annotations per write.
    assert sm["labels"]["hyperfleet-version"] == "v1" and "hyperfleet-version" not in sm["annotations"]
    kube = report["kubernetes"]
    assert kube["exists"] is True and kube["annotations"]["hyperfleet.io/gcp-secret-path"].endswith("/versions/1")
    assert set(kube["registries"]) == {"quay.io", "registry.redhat.io"}
    assert "data" not in kube and "payload" not in json.dumps(sm)

    # Someone edits the Kubernetes Secret: inspect says it is out of sync.
    admin.call("DELETE", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}")
    after = json.loads(cli("inspect", CID).stdout)
    assert after["in_sync"] is False and after["kubernetes"]["exists"] is False


def test_inspect_unknown_cluster_exits_4(function_env: dict[str, str], world: Any) -> None:
    result = cli("inspect", "cls-nowhere")
    assert result.returncode == 4 and "not found" in result.stderr
