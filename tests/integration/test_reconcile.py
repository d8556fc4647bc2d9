"""The adapter end to end against the emulators, through its production handler and the official clients.

Each test asserts outcomes: Secret Manager versions, the Kubernetes Secret, the status the HyperFleet API
received (validated against the OpenAPI contract by the emulator, see conftest `world`) and log lines.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import pytest

from emulators.kubernetes import manifests
from pullsecret.declared import WORDS
from pullsecret.delivery.direct import admission_policy
from pullsecret.delivery.direct.settings import POLICY_NAME
from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import (
    CLUSTER_AUTH,
    PLATFORM_AUTH,
    SENSITIVE,
    Admin,
    eventarc_attributes,
    pubsub_envelope,
    seed_ready_cluster,
    sentinel_event,
)

CID = "cls-abc123"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
NAMESPACE = f"clusters-{CID}"
KUBE_NAME = f"{CID}-pull-secret"
PROJECT = "hf-demo-project"


def deliver(adapter: Adapter, cluster_id: str = CID, generation: int = 1) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cluster_id, generation)))


def versions(stack: Any, secret_id: str = SECRET_ID, project: str = PROJECT) -> list[dict[str, Any]]:
    return list(stack.secretmanager.versions(project, secret_id))


def last_report(admin: Admin, cluster_id: str = CID) -> dict[str, Any]:
    reports = [r for r in admin.reports() if r.get("cluster_id") == cluster_id]
    assert reports, "no status was reported"
    return reports[-1]


def conditions(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in report["body"]["conditions"]}


def log_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    out = capsys.readouterr().out
    for secret in SENSITIVE:
        assert secret not in out, "a credential reached the logs"
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture
def adapter(function_env: dict[str, str]) -> Adapter:
    return Adapter.from_environment()


def test_first_provisioning_writes_one_version_and_the_kubernetes_secret(
    adapter: Adapter, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    outcome = deliver(adapter)
    assert outcome.result == "applied"

    stored = versions(world)
    assert len(stored) == 1 and stored[0]["state"] in ("ENABLED", 1)
    payload = json.loads(base64.b64decode(stored[0]["payload_b64"]))
    assert payload["auths"]["quay.io"]["auth"] == PLATFORM_AUTH
    assert stored[0]["created_by"] == world.metadata.service_account  # written as the runtime identity
    secret = world.secretmanager.secret(PROJECT, SECRET_ID)
    labels = dict(secret["labels"])
    assert re.fullmatch(r"d-[0-9a-f]{12}", labels.pop("deployment"))  # DEPLOYMENT_ID, derived (README)
    assert labels == {
        "managed-by": "hyperfleet",
        "adapter": "pullsecret",
        "cluster-id": CID,
        "cluster-name": CID,
        "resource-type": "pull-secret",
        "hyperfleet-version": "v1",
    }

    kube = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert kube is not None and kube["type"] == "kubernetes.io/dockerconfigjson"
    assert json.loads(base64.b64decode(kube["data"][".dockerconfigjson"])) == payload
    assert kube["metadata"]["labels"]["managed-by"] == "hyperfleet"
    annotations = kube["metadata"]["annotations"]
    assert annotations["hyperfleet.io/gcp-secret-path"] == stored[0]["name"]
    assert annotations["hyperfleet.io/generation"] == "1"

    report = last_report(admin)
    assert report["code"] == 201 and report["method"] == "PUT"
    conds = conditions(report)
    assert conds["Applied"]["status"] == "True" and conds["Available"]["status"] == "True"
    assert conds["Health"]["status"] == "True"
    data = report["body"]["data"]
    assert data["sm_version"] == stored[0]["name"]
    assert data["kubernetes_namespace"] == NAMESPACE and data["kubernetes_name"] == KUBE_NAME
    assert PLATFORM_AUTH not in json.dumps(report["body"])

    lines = log_lines(capsys)
    final = [line for line in lines if line.get("operation") == "reconcile"][-1]
    assert final["result"] == "applied" and final["duration_ms"] > 0
    # The fields the framework-named log-based metrics read (terraform/monitoring.tf; hyperfleet-adapter
    # pkg/metrics/recorder.go: status success|failed|skipped, duration in seconds, error_type a phase).
    assert final["event_status"] == "success" and 0 < final["duration_s"] < 60 and "error_type" not in final
    assert final["logging.googleapis.com/labels"]["cluster_id"] == CID
    assert {line.get("operation") for line in lines} >= {
        "secretmanager.store",
        "kubernetes.apply_secret",
        "hyperfleet.report_status",
    }


def test_duplicate_delivery_writes_nothing_new(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    before = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)["metadata"]["resourceVersion"]
    admin.call("DELETE", "/calls")
    outcome = deliver(adapter)
    assert outcome.result == "unchanged"
    assert len(versions(world)) == 1
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)["metadata"]["resourceVersion"] == before
    calls = admin.calls()
    # One read of the newest version (the access quota), no write.
    assert calls.get("secretmanager") == {"AccessSecretVersion": 1}, calls
    assert set(calls.get("kubernetes", {})) == {"patch.secrets.dryrun"}  # the probe: no read, no write
    assert sum(sum(m.values()) for s, m in calls.items() if s != "metadata") <= 5
    assert conditions(last_report(admin))["Available"]["status"] == "True"


def test_preconditions_not_met_reports_and_touches_nothing(adapter: Adapter, admin: Admin, world: Any) -> None:
    admin.seed_cluster(
        CID, {"name": CID, "generation": 2, "spec": {"platform": {"type": "gcp", "gcp": {"projectID": PROJECT}}}}
    )
    admin.seed_status(CID, "validation", {"observed_generation": 2})
    admin.seed_status(CID, "dns", {"observed_generation": 1})
    assert deliver(adapter, generation=2).result == "skipped"
    conds = conditions(last_report(admin))
    assert conds["Applied"]["reason"] == "PreconditionsNotMet" and conds["Available"]["status"] == "False"
    assert (conds["Health"]["status"], conds["Health"]["reason"]) == ("False", "ResourcesSkipped")
    assert "dns (at generation 1" in conds["Available"]["message"]
    assert "placement (no status)" in conds["Available"]["message"]
    calls = admin.calls()
    assert "kubernetes" not in calls and "secretmanager" not in calls


def test_cluster_gone_is_acknowledged_without_report(adapter: Adapter, admin: Admin, world: Any) -> None:
    assert deliver(adapter, cluster_id="cls-missing").result == "gone"
    assert [r for r in admin.reports() if r.get("cluster_id") == "cls-missing"] == []


def test_cluster_spec_pull_secret_is_merged_and_conflicts_reported(adapter: Adapter, admin: Admin, world: Any) -> None:
    own = {"auths": {"quay.io": {"auth": CLUSTER_AUTH}, "my.registry.example": {"auth": CLUSTER_AUTH}}}
    seed_ready_cluster(admin, CID)
    admin.patch_cluster(
        CID,
        {
            "generation": 1,
            "spec": {
                "platform": {"type": "gcp", "gcp": {"projectID": PROJECT}},
                "pullSecret": {"data": json.dumps(own)},
            },
        },
    )
    assert deliver(adapter).result == "applied"
    payload = json.loads(base64.b64decode(versions(world)[0]["payload_b64"]))
    assert payload["auths"]["quay.io"]["auth"] == PLATFORM_AUTH  # the platform entry wins by default
    assert payload["auths"]["my.registry.example"]["auth"] == CLUSTER_AUTH
    assert last_report(admin)["body"]["data"]["conflicts"] == ["quay.io"]


def test_new_content_adds_exactly_one_version(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    own = {"auths": {"my.registry.example": {"auth": CLUSTER_AUTH}}}
    admin.patch_cluster(
        CID,
        {
            "generation": 2,
            "spec": {"platform": {"type": "gcp", "gcp": {"projectID": PROJECT}}, "pullSecret": {"data": own}},
        },
    )
    for adapter_name in ("validation", "dns", "placement"):
        admin.seed_status(CID, adapter_name, {"observed_generation": 2})
    assert deliver(adapter, generation=2).result == "applied"
    assert deliver(adapter, generation=2).result == "unchanged"
    stored = versions(world)
    assert len(stored) == 2
    kube = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert kube["metadata"]["annotations"]["hyperfleet.io/gcp-secret-path"] == stored[-1]["name"]
    assert kube["metadata"]["annotations"]["hyperfleet.io/generation"] == "2"


def test_an_older_generation_never_replaces_a_newer_one(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID, generation=6)
    assert deliver(adapter, generation=6).result == "applied"
    # A concurrent invocation that read the cluster before generation 6 existed:
    own = {"auths": {"old.registry.example": {"auth": CLUSTER_AUTH}}}
    admin.patch_cluster(
        CID,
        {
            "generation": 5,
            "spec": {"platform": {"type": "gcp", "gcp": {"projectID": PROJECT}}, "pullSecret": {"data": own}},
        },
    )
    for adapter_name in ("validation", "dns", "placement"):
        admin.seed_status(CID, adapter_name, {"observed_generation": 5})
    assert deliver(adapter, generation=5).result == "stale"
    assert len(versions(world)) == 1
    kube = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert kube["metadata"]["annotations"]["hyperfleet.io/generation"] == "6"
    assert "old.registry.example" not in base64.b64decode(kube["data"][".dockerconfigjson"]).decode()


# --- terminal failures: reported, acknowledged, nothing written ---------------------------------------------


def assert_terminal(adapter: Adapter, admin: Admin, world: Any, reason: str, fragment: str) -> dict[str, Any]:
    outcome = deliver(adapter)
    assert outcome.result == "terminal"
    conds = conditions(last_report(admin))
    assert conds["Available"]["status"] == "False" and conds["Available"]["reason"] == reason
    # The operator's detail is on Applied; Available carries the owner's message (docs/contract.md's table).
    assert fragment in conds["Applied"]["message"]
    assert conds["Available"]["message"] == WORDS.available_message(reason, conds["Applied"]["message"])
    return conds


def test_foreign_secret_manager_secret_is_never_adopted(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    admin.call(
        "PUT",
        f"/secretmanager/projects/{PROJECT}/secrets/{SECRET_ID}",
        {"labels": {"owner": "someone-else"}, "versions": [base64.b64encode(b"theirs").decode()]},
    )
    assert_terminal(adapter, admin, world, "OwnershipConflict", "without the label managed-by=hyperfleet")
    assert len(versions(world)) == 1
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None


@pytest.mark.parametrize(
    ("secret_type", "key"), [("Opaque", "x"), ("kubernetes.io/dockerconfigjson", ".dockerconfigjson")]
)
def test_foreign_kubernetes_secret_is_never_overwritten_nor_shown(
    adapter: Adapter, admin: Admin, world: Any, secret_type: str, key: str
) -> None:
    seed_ready_cluster(admin, CID)
    theirs = base64.b64encode(json.dumps({"auths": {"their.registry": {"auth": "dGhlaXI6c2VjcmV0"}}}).encode()).decode()
    foreign = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": KUBE_NAME, "namespace": NAMESPACE, "labels": {"app": "theirs"}},
        "type": secret_type,
        "data": {key: theirs},
    }
    # Written by another field manager, without managed-by=hyperfleet.
    admin.call("PUT", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}", {"object": foreign, "manager": "helm"})
    before = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert_terminal(adapter, admin, world, "OwnershipConflict", "refusing to overwrite")
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) == before  # untouched, resourceVersion included
    assert "CreateSecret" not in admin.calls().get("secretmanager", {})  # nothing written on either side
    # What the API server answered the adapter's identity: refusals, never their data (nor any form of it).
    answers = world.kubernetes.answers(world.metadata.service_account)
    assert answers and all(a["code"] >= 400 for a in answers if a["call"].endswith(".secrets.dryrun"))
    shown = json.dumps(answers)
    for form in (theirs, "dGhlaXI6c2VjcmV0", "their.registry", "theirs"):
        assert form not in shown, form


def test_writes_refused_where_the_admission_policy_is_not_installed(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    world.kubernetes.delete_policy("ValidatingAdmissionPolicyBinding", POLICY_NAME)
    assert_terminal(adapter, admin, world, "AdmissionPolicyMissing", "kubernetes_manifests")
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None
    assert versions(world) == []
    calls = admin.calls()["kubernetes"]
    assert set(calls) == {"get.validatingadmissionpolicies", "get.validatingadmissionpolicybindings"}, calls
    # Installed again: the next event checks again (a refusal is not remembered) and provisions.
    world.seed_defaults()
    assert deliver(adapter).result == "applied"


def test_an_instance_writes_only_under_its_own_named_policy(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 51, item 4: every instance read the one fixed name, so on a cluster shared with another instance the
    # other's policy (naming another identity, or the same one) passed for this one's. ADMISSION_POLICY_NAME (Terraform:
    # the suffix in it) is the only pair this instance reads, judges, and writes under.
    staging = f"{POLICY_NAME}-stg"
    monkeypatch.setenv("ADMISSION_POLICY_NAME", staging)
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    # The unsuffixed pair is not ours, and its RBAC lets this identity read that pair only.
    assert_terminal(adapter, admin, world, "AdmissionPolicyUnverified", staging)
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None
    world.kubernetes.apply_manifests(manifests.render(world.metadata.service_account, policy_name=staging))
    assert deliver(adapter).result == "applied"
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is not None


def test_an_outdated_admission_policy_is_refused(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    [policy] = [d for d in manifests.render(world.metadata.service_account) if d["kind"] == "ValidatingAdmissionPolicy"]
    policy["metadata"]["annotations"][admission_policy.A_POLICY_REVISION] = "1"
    world.kubernetes.put_policy(policy)
    assert_terminal(
        adapter,
        admin,
        world,
        "AdmissionPolicyMissing",
        f"revision 1 is older than the required {admission_policy.REQUIRED_POLICY_REVISION}",
    )
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None


def test_a_gutted_admission_policy_with_the_right_revision_is_refused(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    # The revision annotation proves nothing: the ownership validation removed by hand, the revision kept.
    seed_ready_cluster(admin, CID)
    [policy] = [d for d in manifests.render(world.metadata.service_account) if d["kind"] == "ValidatingAdmissionPolicy"]
    policy["spec"]["validations"] = [
        v for v in policy["spec"]["validations"] if "OwnershipConflict" not in v["message"]
    ]
    world.kubernetes.put_policy(policy)
    assert_terminal(
        adapter,
        admin,
        world,
        "AdmissionPolicyMissing",
        "the installed policy differs from this release's: policy spec.validations[1].expression",
    )
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None


@pytest.mark.parametrize("namespace", ["kube-system", "default"])
def test_namespace_outside_the_pattern_is_refused(adapter: Adapter, admin: Admin, world: Any, namespace: str) -> None:
    seed_ready_cluster(admin, CID, placement_data={"namespace": namespace})
    assert_terminal(adapter, admin, world, "ForbiddenNamespace", "MANAGEMENT_NAMESPACE_PATTERN")
    assert "secretmanager" not in admin.calls() or "CreateSecret" not in admin.calls()["secretmanager"]


def test_invalid_cluster_pull_secret_names_the_registry_and_rule(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    bad = {"auths": {"quay.io": {"auth": base64.b64encode(b"no-colon-here").decode()}}}
    admin.patch_cluster(
        CID,
        {
            "generation": 1,
            "spec": {"platform": {"type": "gcp", "gcp": {"projectID": PROJECT}}, "pullSecret": {"data": bad}},
        },
    )
    conds = assert_terminal(adapter, admin, world, "InvalidPullSecret", "registry 'quay.io'")
    assert "user:password" in conds["Available"]["message"]
    assert (conds["Health"]["status"], conds["Health"]["reason"]) == ("False", "ExecutionFailed:resources")
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None


def test_permission_denied_is_terminal(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID, project="customer-project")
    admin.call("POST", "/secretmanager/iam", {"project": "customer-project", "identity": "someone@else.iam"})
    conds = assert_terminal(adapter, admin, world, "PermissionDenied", "denied the runtime identity")
    assert conds["Health"]["status"] == "False"


# --- transient failures: retried in process, then redelivered ------------------------------------------------


@pytest.mark.parametrize(
    ("service", "method", "code"),
    [
        ("secretmanager", "AddSecretVersion", "UNAVAILABLE"),
        ("secretmanager", "AccessSecretVersion", "DEADLINE_EXCEEDED"),
        ("secretmanager", "CreateSecret", "RESOURCE_EXHAUSTED"),
        ("gke", "GetCluster", "UNAVAILABLE"),
        ("kubernetes", "create.secrets", "503"),
        ("kubernetes", "patch.secrets.dryrun", "429"),
        ("kubernetes", "patch.secrets.dryrun", "reset"),
        ("hyperfleet", "getClusterById", "503"),
        ("hyperfleet", "putClusterStatuses", "500"),
        ("hyperfleet", "getClusterStatuses", "reset"),
    ],
)
def test_transient_failures_are_retried_in_process(
    adapter: Adapter, admin: Admin, world: Any, service: str, method: str, code: str
) -> None:
    seed_ready_cluster(admin, CID)
    admin.fault(service=service, method=method, code=code, count=2)
    assert deliver(adapter).result == "applied"
    assert admin.get("/faults")["faults_injected"][service][method] == 2
    assert len(versions(world)) == 1
    assert conditions(last_report(admin))["Available"]["status"] == "True"


def test_persistent_outage_raises_for_redelivery_then_converges(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    admin.fault(service="secretmanager", method="AddSecretVersion", code="UNAVAILABLE", rate=1.0)
    started = time.monotonic()
    with pytest.raises(TransientError):
        deliver(adapter)
    assert time.monotonic() - started < 15, "retries must stop at the invocation deadline"
    admin.call("DELETE", "/faults")
    assert deliver(adapter).result == "applied"
    assert len(versions(world)) == 1


def test_missing_namespace_is_transient(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID, namespace=False)
    with pytest.raises(TransientError, match="namespace clusters-cls-abc123 not found"):
        deliver(adapter)
    admin.call("PUT", f"/kubernetes/namespaces/{NAMESPACE}", {})
    assert deliver(adapter).result == "applied"
    assert len(versions(world)) == 1


def test_expired_token_is_refreshed(function_env: dict[str, str], admin: Admin, world: Any) -> None:
    # google-auth treats a token as expired 225 s before its end: 228 s leaves ~3 s of use.
    admin.call("PUT", "/metadata/token_lifetime", {"seconds": 228})
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, CID)
    assert deliver(adapter).result == "applied"
    issued = world.metadata.state()["tokens_issued"]
    time.sleep(3.5)
    assert deliver(adapter).result == "unchanged"
    assert world.metadata.state()["tokens_issued"] > issued


def test_old_events_are_acknowledged_without_action(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    envelope = pubsub_envelope(sentinel_event(CID), publish_time="2020-01-01T00:00:00Z")
    assert adapter.handle(eventarc_attributes(), envelope).result == "expired"
    assert admin.reports() == []


def test_concurrent_duplicates_write_one_version(adapter: Adapter, admin: Admin, world: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    seed_ready_cluster(admin, CID)
    event = sentinel_event(CID)
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(
            pool.map(lambda _: adapter.handle(eventarc_attributes(), pubsub_envelope(event)).result, range(10))
        )
    assert results.count("applied") >= 1 and set(results) <= {"applied", "unchanged"}
    assert len(versions(world)) == 1
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is not None


def test_kubernetes_secret_names_the_runtime_identity(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    kube = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert kube["metadata"]["annotations"]["hyperfleet.io/created-by"] == world.metadata.service_account


def test_replication_locations_and_checksum_are_sent(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_REPLICATION_LOCATIONS", "us-central1,us-east1")
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, CID)
    assert deliver(adapter).result == "applied"
    secret = world.secretmanager.secret(PROJECT, SECRET_ID)
    assert secret["replication"] == {"user_managed": {"locations": ["us-central1", "us-east1"]}}
    version = versions(world)[0]
    assert version["client_specified_payload_checksum"] is True  # data_crc32c was sent and verified


def test_management_cluster_credentials_are_fetched_once(adapter: Adapter, admin: Admin, world: Any) -> None:
    for index in range(3):
        seed_ready_cluster(admin, f"cls-{index}")
    for index in range(3):
        assert deliver(adapter, cluster_id=f"cls-{index}").result == "applied"
    assert admin.calls()["gke"] == {"GetCluster": 1}
    # and the admission policy is checked once per management cluster, not per event
    kube = admin.calls()["kubernetes"]
    assert kube["get.validatingadmissionpolicies"] == kube["get.validatingadmissionpolicybindings"] == 1, kube


def test_a_revoked_token_is_replaced_on_redelivery(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    assert deliver(adapter).result == "applied"
    issued = world.metadata.state()["tokens_issued"]
    admin.call("POST", "/metadata/revoke_all")  # the servers refuse a token the client still thinks valid
    with pytest.raises(TransientError) as refused:
        deliver(adapter)
    assert refused.value.reason == "Unauthenticated"
    assert deliver(adapter).result == "unchanged"
    assert world.metadata.state()["tokens_issued"] > issued


def test_an_unreachable_management_cluster_is_looked_up_again(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    cluster = "projects/hf-demo-project/locations/us-central1/clusters/mgmt-1"
    good = {"name": cluster, "endpoint": world.kubernetes.address, "ca_pem": world.kubernetes.ca_pem.decode()}
    admin.call("PUT", "/gke/clusters", {**good, "endpoint": "127.0.0.1:9"})  # nothing listens there
    with pytest.raises(TransientError) as unreachable:
        deliver(adapter)
    assert unreachable.value.reason == "Unreachable"
    admin.call("PUT", "/gke/clusters", good)  # the endpoint moved back (e.g. a control-plane migration)
    assert deliver(adapter).result == "applied"
    assert admin.calls()["gke"]["GetCluster"] == 2
