"""Deletion, drift repair, version retention and lineage, end to end against the emulators.

Outcomes asserted: objects in the Secret Manager and Kubernetes emulators, the statuses the HyperFleet
API received, and the calls each service counted.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pullsecret.handler import Adapter
from pullsecret.retrying import Deadline
from tests.support import (
    CLUSTER_AUTH,
    SENSITIVE,
    Admin,
    eventarc_attributes,
    pubsub_envelope,
    seed_ready_cluster,
    sentinel_event,
)

CID = "cls-life01"
PROJECT = "hf-demo-project"
PROJECT_NUMBER = "123456789012"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
NAMESPACE = f"clusters-{CID}"
KUBE_NAME = f"{CID}-pull-secret"


def deliver(adapter: Adapter, generation: int = 1) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))


def reports(admin: Admin) -> list[dict[str, Any]]:
    return [r for r in admin.reports() if r.get("cluster_id") == CID]


def conditions(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in report["body"]["conditions"]}


def versions(world: Any) -> list[dict[str, Any]]:
    return list(world.secretmanager.versions(PROJECT, SECRET_ID))


def states(world: Any) -> dict[int, str]:
    return {int(v["name"].rsplit("/", 1)[-1]): str(v["state"]) for v in versions(world)}


def kube_secret(world: Any) -> dict[str, Any] | None:
    found: dict[str, Any] | None = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    return found


def new_generation(admin: Admin, generation: int, auths: dict[str, Any] | None) -> None:
    """The cluster at `generation` with its own pull secret `auths` (None: none), adapters caught up."""
    spec: dict[str, Any] = {"platform": {"type": "gcp", "gcp": {"projectID": PROJECT}}}
    if auths is not None:
        spec["pullSecret"] = {"data": {"auths": auths}}
    admin.patch_cluster(CID, {"generation": generation, "spec": spec})
    for adapter_name in ("validation", "dns", "placement"):
        admin.seed_status(CID, adapter_name, {"observed_generation": generation})


def own_registry(n: int) -> dict[str, Any]:
    return {f"r{n}.registry.example": {"auth": CLUSTER_AUTH}}


def delete_cluster(admin: Admin, generation: int) -> None:
    admin.patch_cluster(
        CID, {"generation": generation, "deleted_time": "2026-01-01T00:00:00Z", "deleted_by": "ops@example.com"}
    )


def sm_client(adapter: Adapter) -> Any:
    """The official Secret Manager client the adapter built (acting 'by hand' as an operator would)."""
    return adapter.store.calls.client


def env_adapter(monkeypatch: pytest.MonkeyPatch, **env: str) -> Adapter:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Adapter.from_environment()


@pytest.fixture
def adapter(function_env: dict[str, str]) -> Adapter:
    return Adapter.from_environment()


# --- 1. deletion ---------------------------------------------------------------------------------------------


def test_deletion_removes_both_secrets_and_reports_finalized_idempotently(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    assert deliver(adapter).result == "applied"
    assert kube_secret(world) is not None
    delete_cluster(admin, 2)

    assert deliver(adapter, 2).result == "finalized"
    assert kube_secret(world) is None
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None
    first = reports(admin)[-1]
    conds = conditions(first)
    assert conds["Finalized"]["status"] == "True" and conds["Finalized"]["reason"] == "CleanupConfirmed"
    assert conds["Applied"]["status"] == "False" and conds["Available"]["status"] == "False"
    assert conds["Health"]["status"] == "True"
    assert first["body"]["data"]["kubernetes_cleanup"] == "deleted"
    assert first["body"]["data"]["sm_cleanup"] == "deleted"
    assert first["body"]["observed_generation"] == 2

    # A repeat (redelivery, or Sentinel's next cycle) finds nothing and confirms again.
    assert deliver(adapter, 2).result == "finalized"
    again = reports(admin)[-1]
    assert conditions(again)["Finalized"]["status"] == "True"
    assert again["body"]["data"]["kubernetes_cleanup"] == "absent"
    assert again["body"]["data"]["sm_cleanup"] == "absent"


def test_deletion_of_a_cluster_never_provisioned_is_finalized(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    delete_cluster(admin, 2)
    assert deliver(adapter, 2).result == "finalized"
    conds = conditions(reports(admin)[-1])
    assert conds["Finalized"]["status"] == "True"
    assert "secretmanager" not in admin.calls() or set(admin.calls()["secretmanager"]) == {"GetSecret"}


def test_deletion_policy_disable_keeps_the_secret_with_every_version_disabled(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    adapter = env_adapter(monkeypatch, DELETION_POLICY="DISABLE")
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    new_generation(admin, 2, own_registry(2))
    deliver(adapter, 2)
    assert set(states(world).values()) == {"ENABLED"} and len(states(world)) == 2
    delete_cluster(admin, 3)

    assert deliver(adapter, 3).result == "finalized"
    assert set(states(world).values()) == {"DISABLED"}
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is not None
    assert kube_secret(world) is None
    assert reports(admin)[-1]["body"]["data"]["sm_cleanup"] == "disabled 2 version(s)"
    assert deliver(adapter, 3).result == "finalized"
    assert conditions(reports(admin)[-1])["Finalized"]["status"] == "True"
    assert set(states(world).values()) == {"DISABLED"}


def test_deletion_policy_retain_touches_no_version(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    adapter = env_adapter(monkeypatch, DELETION_POLICY="RETAIN")
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    delete_cluster(admin, 2)
    admin.call("DELETE", "/calls")
    assert deliver(adapter, 2).result == "finalized"
    assert states(world) == {1: "ENABLED"}
    assert kube_secret(world) is None
    assert "secretmanager" not in admin.calls()
    assert reports(admin)[-1]["body"]["data"]["sm_cleanup"] == "retained"


def test_a_terminal_failure_during_deletion_reports_finalized_false_adapter_unhealthy(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    """The API hard-deletes only after Finalized=True: a blocked cleanup says so and names what blocked it."""
    seed_ready_cluster(admin, CID)
    assert deliver(adapter).result == "applied"
    delete_cluster(admin, 2)
    # Terraform grants secretmanager.secrets.delete only with deletion_policy = "DELETE"; the function runs
    # with DELETE: a deployment out of step, so DeleteSecret answers PERMISSION_DENIED (no retry fixes it).
    world.apply_terraform_iam(deletion_policy="DISABLE")

    outcome = deliver(adapter, 2)
    assert outcome.result == "terminal" and outcome.reason == "PermissionDenied"
    assert kube_secret(world) is None  # the Kubernetes Secret goes first
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is not None  # nothing deleted by a denied call
    report = reports(admin)[-1]
    conds = conditions(report)
    assert report["body"]["observed_generation"] == 2
    assert conds["Finalized"]["status"] == "False" and conds["Finalized"]["reason"] == "AdapterUnhealthy"
    blocked = conds["Finalized"]["message"]
    assert f"delete secret {SECRET_ID}" in blocked and "secretmanager denied the runtime identity" in blocked
    assert conds["Applied"]["reason"] == conds["Available"]["reason"] == "PermissionDenied"
    assert conds["Health"]["status"] == "False" and conds["Health"]["reason"] == "ExecutionFailed:resources"
    assert not any(secret in json.dumps(report) for secret in SENSITIVE)

    # Once the grant is back, the next event finishes the cleanup and confirms it.
    world.apply_terraform_iam()
    assert deliver(adapter, 2).result == "finalized"
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None
    assert conditions(reports(admin)[-1])["Finalized"]["reason"] == "CleanupConfirmed"


def test_deletion_leaves_objects_that_are_not_ours(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    foreign = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": KUBE_NAME, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"x": base64.b64encode(b"theirs").decode()},
    }
    admin.call("PUT", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}", foreign)
    admin.call(
        "PUT",
        f"/secretmanager/projects/{PROJECT}/secrets/{SECRET_ID}",
        {"labels": {"owner": "someone-else"}, "versions": [base64.b64encode(b"theirs").decode()]},
    )
    delete_cluster(admin, 2)
    assert deliver(adapter, 2).result == "finalized"
    assert kube_secret(world) is not None and kube_secret(world)["data"] == foreign["data"]  # type: ignore[index]
    assert states(world) == {1: "ENABLED"}
    data = reports(admin)[-1]["body"]["data"]
    assert data["kubernetes_cleanup"] == data["sm_cleanup"] == "not managed by hyperfleet; left in place"


def test_deletion_retries_when_the_secret_changes_under_it(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    delete_cluster(admin, 2)
    admin.fault(service="secretmanager", method="DeleteSecret", code="UNAVAILABLE", count=2)
    assert deliver(adapter, 2).result == "finalized"
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None


# --- 3. drift repair -----------------------------------------------------------------------------------------


def test_kubernetes_secret_edited_by_someone_else_is_restored(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    original = kube_secret(world)
    assert original is not None
    edited = json.loads(json.dumps(original))
    edited["data"][".dockerconfigjson"] = base64.b64encode(b'{"auths":{"evil.example":{"auth":"eDp5"}}}').decode()
    edited["metadata"].pop("resourceVersion", None)
    edited["metadata"].pop("managedFields", None)
    admin.call("PUT", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}", edited)
    admin.call("DELETE", "/calls")

    assert deliver(adapter).result == "applied"
    restored = kube_secret(world)
    assert restored is not None and restored["data"] == original["data"]
    assert len(versions(world)) == 1  # the content in Secret Manager did not change
    report = reports(admin)[-1]
    assert report["body"]["data"]["repaired"] == "kubernetes_secret"
    assert conditions(report)["Available"]["status"] == "True"
    # One read of the newest version (content and state), the same call steady state makes.
    assert admin.calls()["secretmanager"].get("AccessSecretVersion") == 1


def test_kubernetes_secret_changed_with_kubectl_edit_is_taken_back(adapter: Adapter, admin: Admin, world: Any) -> None:
    # kubectl edit is an Update by the manager "kubectl-edit": it now owns the data, so our apply (force=false)
    # conflicts; the adapter takes the field back with force=true, which the admission policy admits on our Secret.
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    original = kube_secret(world)
    assert original is not None
    edited = json.loads(json.dumps(original))
    edited["data"][".dockerconfigjson"] = base64.b64encode(b'{"auths":{"evil.example":{"auth":"eDp5"}}}').decode()
    for key in ("resourceVersion", "managedFields"):
        edited["metadata"].pop(key, None)
    admin.call(
        "PUT", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}", {"object": edited, "manager": "kubectl-edit"}
    )
    admin.call("DELETE", "/calls")
    assert deliver(adapter).result == "applied"
    restored = kube_secret(world)
    assert restored is not None and restored["data"] == original["data"]
    assert reports(admin)[-1]["body"]["data"]["repaired"] == "kubernetes_secret"
    owners = {e["manager"] for e in restored["metadata"]["managedFields"] if "f:data" in e["fieldsV1"]}
    assert "hyperfleet-pullsecret" in owners
    # the refused apply (409), then the forced one
    assert admin.calls()["kubernetes"].get("patch.secrets") == 2
    assert deliver(adapter).result == "unchanged"


def test_the_first_change_after_our_create_is_one_kubernetes_write(adapter: Adapter, admin: Admin, world: Any) -> None:
    # Our create is recorded as an Update by our field manager, our changes are Applies; the API server keys
    # managers by (name, operation), so a force=false apply would conflict with our own create and be re-sent.
    # The probed managedFields show nobody else owns our fields: the change goes out forced, once.
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    created = kube_secret(world)
    assert created is not None
    assert {(e["manager"], e["operation"]) for e in created["metadata"]["managedFields"]} == {
        ("hyperfleet-pullsecret", "Update")
    }
    seed_ready_cluster(admin, CID, generation=2)
    admin.call("DELETE", "/calls")
    assert deliver(adapter, generation=2).result == "applied"
    changed = kube_secret(world)
    assert changed is not None and changed["metadata"]["annotations"]["hyperfleet.io/generation"] == "2"
    writes = {m: n for m, n in admin.calls()["kubernetes"].items() if not m.endswith(".dryrun")}
    assert writes == {"patch.secrets": 1}, writes
    owners = {(e["manager"], e["operation"]) for e in changed["metadata"]["managedFields"]}
    assert ("hyperfleet-pullsecret", "Apply") in owners


def test_a_key_of_someone_else_on_our_secret_costs_no_write_and_no_storm(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    # Issue 11, item 5: a key added with kubectl edit is not ours; apply never removes it, so the adapter compares
    # only the fields it owns and leaves it: no write, no "repaired", however many events follow.
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    edited = kube_secret(world)
    assert edited is not None
    edited["data"]["note"] = base64.b64encode(b"added by hand").decode()
    for key in ("resourceVersion", "managedFields"):
        edited["metadata"].pop(key, None)
    admin.call(
        "PUT", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}", {"object": edited, "manager": "kubectl-edit"}
    )
    before = kube_secret(world)
    assert before is not None
    admin.call("DELETE", "/calls")
    for _ in range(3):
        assert deliver(adapter).result == "unchanged"
    after = kube_secret(world)
    assert after == before and set(after["data"]) == {".dockerconfigjson", "note"}
    writes = {m: n for m, n in admin.calls()["kubernetes"].items() if not m.endswith(".dryrun")}
    assert writes == {}, writes
    assert all("repaired" not in r["body"]["data"] for r in reports(admin)[-3:])


def test_kubernetes_secret_deleted_by_someone_else_is_recreated(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    admin.call("DELETE", f"/kubernetes/namespaces/{NAMESPACE}/secrets/{KUBE_NAME}")
    assert kube_secret(world) is None
    assert deliver(adapter).result == "applied"
    assert kube_secret(world) is not None
    assert reports(admin)[-1]["body"]["data"]["repaired"] == "kubernetes_secret_recreated"


@pytest.mark.parametrize("how", ["disable", "destroy"])
def test_secret_manager_version_disabled_or_destroyed_by_hand_gets_a_fresh_version(
    function_env: dict[str, str], admin: Admin, world: Any, how: str
) -> None:
    seed_ready_cluster(admin, CID)
    writer = Adapter.from_environment()
    deliver(writer)
    name = versions(world)[0]["name"]
    client = sm_client(writer)
    getattr(client, f"{how}_secret_version")(name=name)

    fresh = Adapter.from_environment()
    assert deliver(fresh).result == "applied"
    assert len(versions(world)) == 2
    assert states(world)[2] == "ENABLED"
    kube = kube_secret(world)
    assert kube is not None
    assert kube["metadata"]["annotations"]["hyperfleet.io/gcp-secret-path"].endswith("/versions/2")
    data = reports(admin)[-1]["body"]["data"]
    assert data["repaired"] == "secret_manager_version" and data["sm_version"].endswith("/versions/2")
    # and then it is steady again
    assert deliver(fresh).result == "unchanged"
    assert len(versions(world)) == 2


def test_steady_state_costs_five_calls_one_of_them_on_the_access_quota(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    admin.call("DELETE", "/calls")
    for _ in range(3):
        assert deliver(adapter).result == "unchanged"
    calls = admin.calls()
    total = sum(sum(m.values()) for s, m in calls.items() if s != "metadata")
    assert total == 15, calls
    # AccessSecretVersion(latest) counts against the 90,000/min access quota, not the 600/min read quota.
    assert calls["secretmanager"] == {"AccessSecretVersion": 3}


def test_a_disabled_version_is_noticed_by_the_very_next_event(adapter: Adapter, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    sm_client(adapter).disable_secret_version(name=versions(world)[0]["name"])
    # The same process, steady state otherwise: the newest version's state is part of the one read it makes.
    assert deliver(adapter).result == "applied"
    assert states(world) == {1: "DISABLED", 2: "ENABLED"}
    kube = kube_secret(world)
    assert kube is not None and kube["metadata"]["annotations"]["hyperfleet.io/gcp-secret-path"].endswith("/2")


# --- 2. retention --------------------------------------------------------------------------------------------


def test_retention_keeps_the_newest_versions_and_destroys_older_ones(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    adapter = env_adapter(monkeypatch, RETAIN_VERSIONS="2")
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    for generation in (2, 3, 4):
        new_generation(admin, generation, own_registry(generation))
        assert deliver(adapter, generation).result == "applied"
    assert states(world) == {1: "DESTROYED", 2: "DESTROYED", 3: "ENABLED", 4: "ENABLED"}
    assert reports(admin)[-1]["body"]["data"]["retention"] == {"keep": 2, "destroyed": ["2"]}
    kube = kube_secret(world)
    assert kube is not None and kube["metadata"]["annotations"]["hyperfleet.io/gcp-secret-path"].endswith("/4")
    # Steady state never lists or destroys.
    admin.call("DELETE", "/calls")
    assert deliver(adapter, 4).result == "unchanged"
    assert admin.calls()["secretmanager"] == {"AccessSecretVersion": 1}


def test_retention_never_destroys_a_protected_version(function_env: dict[str, str], admin: Admin, world: Any) -> None:
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    for generation in (2, 3):
        new_generation(admin, generation, own_registry(generation))
        deliver(adapter, generation)
    store = adapter.store
    secret_name = f"projects/{PROJECT_NUMBER}/secrets/{SECRET_ID}"
    result = store.retention.apply_retention(
        secret_name, keep=1, protected={f"{secret_name}/versions/1"}, deadline=Deadline(10)
    )
    assert result.destroyed == ("2",)
    assert states(world) == {1: "ENABLED", 2: "DESTROYED", 3: "ENABLED"}


def test_retention_respects_version_destroy_ttl(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:

    adapter = env_adapter(monkeypatch, RETAIN_VERSIONS="1")
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    # The operator sets a destroy TTL on the secret (the runtime identity may not: secrets.update is granted on
    # the rotation progress record only); here through the emulator, keeping the secret's labels and version.
    secret = world.secretmanager.secret(PROJECT, SECRET_ID)
    world.secretmanager.seed_secret(
        PROJECT,
        SECRET_ID,
        payloads=[world.secretmanager.payload(PROJECT, SECRET_ID)],
        labels=secret["labels"],
        annotations=secret.get("annotations") or {},
        version_destroy_ttl_s=86400,
    )
    new_generation(admin, 2, own_registry(2))
    deliver(adapter, 2)
    stored = {int(v["name"].rsplit("/", 1)[-1]): v for v in versions(world)}
    assert stored[1]["state"] == "DISABLED" and stored[1]["scheduled_destroy_time"]  # scheduled, not destroyed
    assert stored[2]["state"] == "ENABLED"
    admin.call("DELETE", "/calls")
    new_generation(admin, 3, own_registry(3))
    deliver(adapter, 3)
    # version 1 is already scheduled: only version 2 is destroyed this time
    assert admin.calls()["secretmanager"].get("DestroySecretVersion") == 1
    assert reports(admin)[-1]["body"]["data"]["retention"]["destroyed"] == ["2"]


# --- 6. lineage ----------------------------------------------------------------------------------------------


def by_registry(lineage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`data.lineage.registries` (a list: registry names are values, never masked keys) by registry."""
    return {entry["registry"]: entry for entry in lineage["registries"]}


def test_lineage_answers_which_credential_since_when_without_revealing_it(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    deliver(adapter)
    first = reports(admin)[-1]["body"]["data"]["lineage"]
    assert first["added"] == ["quay.io", "registry.redhat.io"] and first["previous_version"] is None
    assert by_registry(first)["quay.io"]["since_version"] == "1"

    new_generation(admin, 2, own_registry(7))
    deliver(adapter, 2)
    second = reports(admin)[-1]["body"]["data"]["lineage"]
    kube = kube_secret(world)
    assert kube is not None
    assert second["sm_version"].endswith("/versions/2")
    assert second["kubernetes_resource_version"] == kube["metadata"]["resourceVersion"]
    assert second["previous_version"] == "1"
    assert second["added"] == ["r7.registry.example"] and second["changed"] == [] and second["removed"] == []
    assert by_registry(second)["quay.io"] == by_registry(first)["quay.io"]  # unchanged since version 1
    assert by_registry(second)["r7.registry.example"]["since_version"] == "2"
    assert len(by_registry(second)["quay.io"]["fingerprint"]) == 12

    new_generation(admin, 3, None)
    deliver(adapter, 3)
    third = reports(admin)[-1]["body"]["data"]["lineage"]
    assert third["removed"] == ["r7.registry.example"] and third["previous_version"] == "2"

    # Steady state reports the same lineage from the annotations it already reads.
    assert deliver(adapter, 3).result == "unchanged"
    steady = reports(admin)[-1]["body"]["data"]["lineage"]
    assert steady["registries"] == third["registries"] and steady["removed"] == ["r7.registry.example"]
    text = json.dumps(admin.reports())
    for secret in SENSITIVE:
        assert secret not in text


# --- 5. merge rules ------------------------------------------------------------------------------------------


def test_canonical_registry_keys_and_conflicts_reach_the_status(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    adapter = env_adapter(monkeypatch, MERGE_CANONICAL_REGISTRIES="true", MERGE_PRECEDENCE="cluster")
    seed_ready_cluster(admin, CID)
    new_generation(admin, 1, {"https://Quay.io/": {"auth": CLUSTER_AUTH}, "quay.io/": {"auth": CLUSTER_AUTH}})
    assert deliver(adapter).result == "applied"
    payload = json.loads(base64.b64decode(versions(world)[0]["payload_b64"]))
    assert set(payload["auths"]) == {"quay.io", "registry.redhat.io"}
    assert payload["auths"]["quay.io"]["auth"] == CLUSTER_AUTH  # the cluster side wins by configuration
    data = reports(admin)[-1]["body"]["data"]
    assert data["conflicts"] == ["quay.io"]
    assert data["conflict_details"][0]["winner"] == "cluster"
    # neither key is canonical: the first in sorted order is kept, the other reported
    assert [(d["registry"], d["shadowed"]) for d in data["shadowed"]] == [("quay.io", "quay.io/")]
    for secret in SENSITIVE:
        assert secret not in json.dumps(data)
