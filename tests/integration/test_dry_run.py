"""`python -m pullsecret reconcile CLUSTER --dry-run` as a real process on the emulators: it says what a reconcile
would write where (names, fingerprints, which registries change), writes nothing anywhere, and says so."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.integration.cli_process import cli
from tests.support import PLATFORM_PULL_SECRET, PLATFORM_SOURCE_SECRET, Admin, seed_ready_cluster

CID = "cls-dry0001"
SECRET = f"projects/hf-demo-project/secrets/hyperfleet-{CID}-pull-secret"
# What writes, per emulator (a server-side dry-run apply, the delivery's probe, writes nothing).
WRITES = {
    "secretmanager": {"CreateSecret", "AddSecretVersion", "SetIamPolicy", "DeleteSecret", "UpdateSecret"},
    "hyperfleet": {"putAdapterStatus", "postAdapterStatus", "PUT", "POST"},
}


def writes(calls: dict[str, dict[str, int]]) -> dict[str, int]:
    found = {}
    for service, methods in calls.items():
        for method, count in methods.items():
            kube_write = service == "kubernetes" and method.split(".")[0] in ("patch", "create", "delete", "put")
            if (kube_write and "dryrun" not in method) or method in WRITES.get(service, set()):
                found[f"{service}.{method}"] = count
            if (
                service == "hyperfleet"
                and "status" in method.lower()
                and not method.lower().startswith(("get", "list"))
            ):
                found[f"{service}.{method}"] = count
    return found


def test_dry_run_says_what_would_be_written_and_writes_nothing(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    admin.call("DELETE", "/calls")
    first = cli("reconcile", CID, "--dry-run")
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    assert f"would add a version to {SECRET} (no version yet)" in out, out
    assert "registries that would change: quay.io (added), registry.redhat.io (added)" in out
    assert f"Kubernetes: would create Secret {CID}-pull-secret on " in out and f"clusters-{CID}" in out
    assert out.rstrip().endswith(
        "nothing was written (no Secret Manager version, no Kubernetes or IAM change, no status)"
    )
    calls = admin.calls()
    assert writes(calls) == {}, calls
    assert "secretmanager" in calls and "hyperfleet" in calls  # it did read
    assert world.secretmanager.secret("hf-demo-project", f"hyperfleet-{CID}-pull-secret") is None
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is None
    assert [r for r in admin.reports() if r.get("cluster_id") == CID] == []

    assert cli("reconcile", CID).returncode == 0
    admin.call("DELETE", "/calls")
    steady = cli("reconcile", CID, "--dry-run").stdout
    # The version's name as Secret Manager resolves it (the project's number).
    assert f"secrets/hyperfleet-{CID}-pull-secret/versions/1 already holds it; no new version" in steady, steady
    assert "registries that would change: none" in steady and "is as it should be" in steady
    assert "status: would report unchanged" in steady

    # The platform rotates quay.io's credential: only that registry changes.
    rotated = json.loads(json.dumps(PLATFORM_PULL_SECRET))
    rotated["auths"]["quay.io"]["auth"] = base64.b64encode(b"robot:N3w-Rotated-Passw0rd").decode()
    payload = base64.b64encode(json.dumps(rotated).encode()).decode()
    path = f"/secretmanager/projects/hf-demo-project/secrets/{PLATFORM_SOURCE_SECRET}"
    admin.call("PUT", path, {"versions": [*(v["payload_b64"] for v in admin.get(path)["versions"]), payload]})
    admin.call("DELETE", "/calls")
    changed = cli("reconcile", CID, "--dry-run", env={**function_env, "PULL_SECRET_SOURCE_TTL": "0"})
    assert f"would add a version to {SECRET} (newest projects/" in changed.stdout, changed.stdout
    assert f"hyperfleet-{CID}-pull-secret/versions/1)" in changed.stdout
    assert "registries that would change: quay.io (changed)" in changed.stdout
    assert "would update Secret" in changed.stdout and "N3w-Rotated" not in changed.stdout
    assert writes(admin.calls()) == {}
    assert len(world.secretmanager.secret("hf-demo-project", f"hyperfleet-{CID}-pull-secret")["versions"]) == 1


def test_a_dry_run_in_service_mode_only_reads_at_the_service_and_says_the_credentials_would_be_minted(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    env = {k: v for k, v in function_env.items() if k != "PULL_SECRET_SOURCE"}
    env.update(
        {
            "PULL_SECRET_SERVICE_URL": world.pullsecretservice.url,
            "PULL_SECRET_SERVICE_AUTH": "token-file",
            "PULL_SECRET_SERVICE_TOKEN_FILE": world.service_token_file,
        }
    )
    admin.call("DELETE", "/calls")
    shown = cli("reconcile", CID, "--dry-run", env=env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "would be minted" in shown.stdout, shown.stdout
    assert shown.stdout.rstrip().endswith(
        "nothing was written (no Secret Manager version, no Kubernetes or IAM change, no status)"
    )
    calls = admin.calls()
    assert calls.get("pullsecretservice") == {"get": 1}, calls.get("pullsecretservice")
    assert admin.get("/pullsecretservice/state")["clusters"] == {}  # nothing minted
    assert writes(calls) == {}, calls
