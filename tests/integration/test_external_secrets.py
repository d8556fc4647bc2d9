"""KUBERNETES_DELIVERY=external-secrets end to end on the emulators, official clients over gRPC: the function writes
the Secret Manager secret and keeps one accessor binding for the namespace's Workload Identity principal, and
reaches no cluster (GCP HCP's no-direct-connectivity and secret-management decisions; docs/lifecycle.md).

The runtime identity holds exactly what terraform/ grants with kubernetes_delivery = "external-secrets".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from emulators.world import PROJECT_ID
from pullsecret.handler import Adapter
from pullsecret.identity.google import RuntimeIdentity, secret_manager_client
from tests.integration.cli_process import cli
from tests.integration.external_secrets_mode import TEMPLATE
from tests.support import PLATFORM_SOURCE_SECRET, Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster
from tests.support import sentinel_event as event

CID = "cls-eso00001"
NAMESPACE = f"clusters-{CID}"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
SECRET = f"projects/{PROJECT_ID}/secrets/{SECRET_ID}"
ACCESSOR = "roles/secretmanager.secretAccessor"
MEMBER = TEMPLATE.format(namespace=NAMESPACE)


@pytest.fixture
def eso_env(function_env: dict[str, str], world: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The function in external-secrets mode, holding Terraform's grants for that mode."""
    env = {"KUBERNETES_DELIVERY": "external-secrets", "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    world.apply_terraform_iam(kubernetes_delivery="external-secrets")
    yield {**function_env, **env}
    world.apply_terraform_iam()


def deliver(adapter: Adapter, generation: int = 1) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(event(CID, generation)))


def policy(world: Any) -> list[dict[str, Any]]:
    secret = world.secretmanager.secret(PROJECT_ID, SECRET_ID)
    assert secret is not None
    return list(secret["iam_policy"]["bindings"])


def last_report(admin: Admin) -> dict[str, Any]:
    return [r for r in admin.reports() if r.get("cluster_id") == CID][-1]


def conditions(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in report["body"]["conditions"]}


def cluster_calls(admin: Admin) -> dict[str, Any]:
    calls = admin.calls()
    return {service: calls[service] for service in ("gke", "kubernetes") if calls.get(service)}


def steps(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    """(operation, message) of each step line the function logged."""
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return [(line["operation"], line["message"]) for line in lines if "duration_ms" in line and "operation" in line]


def test_a_cluster_reconciles_with_access_granted_and_no_cluster_reached(
    eso_env: dict[str, str], admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    admin.call("DELETE", "/calls")
    adapter = Adapter.from_environment()
    capsys.readouterr()

    assert deliver(adapter).result == "applied"
    logged = steps(capsys)
    # The log names what was done: access granted on the secret; no step claims a Kubernetes write.
    assert ("secretmanager.grant_access", "secretmanager.grant_access: written") in logged, logged
    assert not [operation for operation, _ in logged if operation.startswith("kubernetes.")], logged
    assert world.secretmanager.payload(PROJECT_ID, SECRET_ID) is not None
    assert policy(world) == [{"role": ACCESSOR, "members": [MEMBER]}]
    assert world.kubernetes.get_secret(NAMESPACE, f"{CID}-pull-secret") is None
    report = last_report(admin)
    assert conditions(report)["Available"]["status"] == "True"
    assert report["body"]["data"]["delivery"] == "external-secrets"
    assert report["body"]["data"]["access_member"] == MEMBER
    assert report["body"]["data"]["kubernetes_name"] == f"{CID}-pull-secret"  # the Secret ESO produces

    assert deliver(adapter).result == "unchanged"  # the binding holds: no second write
    assert admin.calls()["secretmanager"].get("SetIamPolicy") == 1
    assert cluster_calls(admin) == {}  # neither GKE nor any Kubernetes API server saw a request


@pytest.mark.parametrize("policy_name", ["DISABLE", "DELETE"])
def test_deletion_removes_the_access_and_reports_finalized(
    eso_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch, policy_name: str
) -> None:
    monkeypatch.setenv("DELETION_POLICY", policy_name)
    world.apply_terraform_iam(kubernetes_delivery="external-secrets", deletion_policy=policy_name)
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    auditor = {"role": "roles/secretmanager.viewer", "members": ["group:auditors@example.com"]}
    admin.call(
        "PUT",
        f"/secretmanager/projects/{PROJECT_ID}/secrets/{SECRET_ID}/iamPolicy",
        {"bindings": [*policy(world), auditor]},
    )
    admin.patch_cluster(CID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z", "deleted_by": "ops@example.com"})

    assert deliver(adapter, 2).result == "finalized"
    report = last_report(admin)
    assert conditions(report)["Finalized"]["status"] == "True"
    data = report["body"]["data"]
    assert data["access_cleanup"] == "removed" and data["delivery"] == "external-secrets"
    if policy_name == "DISABLE":
        assert policy(world) == [auditor]  # ours gone, the other writer's binding kept
        assert data["sm_cleanup"].startswith("disabled")
    else:
        assert world.secretmanager.secret(PROJECT_ID, SECRET_ID) is None

    assert deliver(adapter, 2).result == "finalized"  # a repeat finds nothing of ours
    assert last_report(admin)["body"]["data"]["access_cleanup"] == (
        "absent" if policy_name == "DISABLE" else "secret absent"
    )
    assert cluster_calls(admin) == {}


def test_a_concurrent_policy_change_is_kept(eso_env: dict[str, str], admin: Admin, world: Any) -> None:
    """ABORTED on a stale etag: the read-modify-write runs again and loses nobody's binding."""
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    path = f"/secretmanager/projects/{PROJECT_ID}/secrets/{SECRET_ID}"
    admin.call("PUT", f"{path}/iamPolicy", {"bindings": []})  # someone removed our binding
    other = [
        {"role": "roles/secretmanager.viewer", "members": ["group:ops@example.com"]},
        {"role": ACCESSOR, "members": ["serviceAccount:auditor@other-project.iam.gserviceaccount.com"]},
    ]
    admin.call("POST", f"{path}/iamPolicyRace", {"bindings": other})  # lands right after our next read
    admin.call("DELETE", "/calls")

    assert deliver(adapter).result == "applied"
    assert admin.calls()["secretmanager"]["SetIamPolicy"] == 2  # the first carried a stale etag
    assert policy(world) == [
        other[0],
        {"role": ACCESSOR, "members": ["serviceAccount:auditor@other-project.iam.gserviceaccount.com", MEMBER]},
    ]
    assert last_report(admin)["body"]["data"]["repaired"] == "access_binding"


def test_an_earlier_namespace_loses_its_access(eso_env: dict[str, str], admin: Admin, world: Any) -> None:
    """Exactly one principal of ours: the one of the namespace the placement names now."""
    seed_ready_cluster(admin, CID)
    old = TEMPLATE.format(namespace="clusters-moved-away")
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    admin.call(
        "PUT",
        f"/secretmanager/projects/{PROJECT_ID}/secrets/{SECRET_ID}/iamPolicy",
        {"bindings": [{"role": ACCESSOR, "members": [old, MEMBER, "user:keep@example.com"]}]},
    )
    assert deliver(adapter).result == "applied"
    assert policy(world) == [{"role": ACCESSOR, "members": [MEMBER, "user:keep@example.com"]}]


@pytest.mark.parametrize("namespace", ["clusters-a/sa/attacker", "kube-system", "Clusters-A"])
def test_a_hostile_namespace_grants_nothing(eso_env: dict[str, str], admin: Admin, world: Any, namespace: str) -> None:
    """The placement status cannot choose whom the secret is shared with."""
    seed_ready_cluster(admin, CID, placement_data={"namespace": namespace})
    admin.call("DELETE", "/calls")
    outcome = Adapter.from_environment().handle(eventarc_attributes(), pubsub_envelope(event(CID)))
    assert outcome.result == "terminal" and outcome.reason in ("InvalidPlacement", "ForbiddenNamespace"), outcome
    assert "SetIamPolicy" not in admin.calls().get("secretmanager", {})
    secret = world.secretmanager.secret(PROJECT_ID, SECRET_ID)
    assert secret is None or secret["iam_policy"]["bindings"] == []


def test_terraform_grants_set_iam_policy_only_on_the_cluster_secrets(eso_env: dict[str, str], world: Any) -> None:
    """setIamPolicy under the same name condition: the platform pull secret's policy stays out of reach."""
    client = secret_manager_client(RuntimeIdentity(), eso_env["SECRET_MANAGER_EMULATOR_HOST"])
    world.secretmanager.seed_secret(PROJECT_ID, SECRET_ID, payloads=[b"{}"])
    ours = client.get_iam_policy(request={"resource": SECRET}, retry=None)
    ours.bindings.add(role=ACCESSOR, members=[MEMBER])
    client.set_iam_policy(request={"resource": SECRET, "policy": ours}, retry=None)  # the cluster's own secret
    platform = f"projects/{PROJECT_ID}/secrets/{PLATFORM_SOURCE_SECRET}"
    for call in (client.get_iam_policy, client.set_iam_policy):
        request: dict[str, Any] = {"resource": platform}
        if call == client.set_iam_policy:
            request["policy"] = {"bindings": [{"role": ACCESSOR, "members": [MEMBER]}]}
        with pytest.raises(gexc.PermissionDenied):
            call(request=request, retry=None)
    world.apply_terraform_iam()  # direct mode: not even on the cluster's own secrets
    with pytest.raises(gexc.PermissionDenied):
        client.get_iam_policy(request={"resource": SECRET}, retry=None)


def test_gcp_hcp_target_google_id_token_and_external_secrets_together(
    eso_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No token, no key, no cluster connection: the runtime identity alone, with what Terraform grants it then."""
    monkeypatch.delenv("HYPERFLEET_API_TOKEN_FILE")
    monkeypatch.setenv("HYPERFLEET_API_AUTH", "google-id-token")
    world.hyperfleet.token = "hf-opaque-token-nobody-presents"
    grants = world.apply_terraform_iam(
        kubernetes_delivery="external-secrets", hyperfleet_api_auth="google-id-token", hyperfleet_api_token_secret=""
    )
    assert not [g for g in grants if "hyperfleet_token" in g.address or g.role == "roles/container.clusterViewer"]
    seed_ready_cluster(admin, CID)
    admin.call("DELETE", "/calls")
    assert deliver(Adapter.from_environment()).result == "applied"
    assert policy(world) == [{"role": ACCESSOR, "members": [MEMBER]}]
    assert set(world.hyperfleet.identities) == {f"pullsecret-runtime@{PROJECT_ID}.iam.gserviceaccount.com"}
    assert cluster_calls(admin) == {}


def test_inspect_names_the_access_and_reaches_no_cluster(eso_env: dict[str, str], admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    assert deliver(Adapter.from_environment()).result == "applied"
    admin.call("DELETE", "/calls")
    result = cli("inspect", CID)
    kubernetes = json.loads(result.stdout)["kubernetes"]
    assert kubernetes["delivery"] == "external-secrets" and kubernetes["access_member"] == MEMBER, result.stderr
    assert cluster_calls(admin) == {}


@pytest.mark.usefixtures("restored_log")
def test_the_doctor_asks_for_the_policy_permissions_and_reaches_no_cluster(
    eso_env: dict[str, str], admin: Admin, world: Any
) -> None:
    """The delivery lists the doctor's mode checks: the allow policy's permissions, no GKE, RBAC or admission policy."""
    from tests.integration.doctor_report import doctor

    seed_ready_cluster(admin, CID)
    assert deliver(Adapter.from_environment()).result == "applied"
    admin.call("DELETE", "/calls")
    code, text = doctor()
    assert code == 0, text
    assert "ok    secret-manager.iam-policy" in text and SECRET in text, text
    assert "gke" not in text and "kubernetes." not in text, text
    assert cluster_calls(admin) == {}


@pytest.mark.usefixtures("restored_log")
@pytest.mark.parametrize("permission", ["secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy"])
def test_the_doctor_names_a_missing_policy_permission_and_its_fix(
    eso_env: dict[str, str], admin: Admin, world: Any, permission: str
) -> None:
    from tests.integration.doctor_report import MANAGED, doctor, failed_checks, rebind_without

    seed_ready_cluster(admin, CID)
    assert deliver(Adapter.from_environment()).result == "applied"
    rebind_without(world, MANAGED, permission)
    code, text = doctor()
    failed = failed_checks(text)
    assert code == 1 and list(failed) == ["secret-manager.iam-policy"], text
    assert (
        permission in failed["secret-manager.iam-policy"] and "terraform apply" in failed["secret-manager.iam-policy"]
    )
