"""The label migration (docs/lifecycle.md "Labels"): Secrets the previous release wrote (managed-by=hyperfleet,
adapter, cluster-id) stay ours: recognised, relabelled with the framework's keys on the next reconcile, deleted
on cluster deletion; a Secret carrying only the framework's keys (the next release's) is ours too.
"""

from __future__ import annotations

from typing import Any

from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-labels01"
NAMESPACE = f"clusters-{CID}"
NAME = f"{CID}-pull-secret"
PREVIOUS = {
    "managed-by": "hyperfleet",
    "adapter": "pullsecret",
    "cluster-id": CID,
    "cluster-name": CID,
    "hyperfleet-version": "v1",
}
FRAMEWORK = {
    "hyperfleet.io/managed-by": "pullsecret",
    "hyperfleet.io/cluster-id": CID,
    "hyperfleet.io/resource-type": "pull-secret",
}


def deliver(adapter: Adapter, generation: int = 1) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))


def relabel(admin: Admin, world: Any, labels: dict[str, str]) -> dict[str, Any]:
    """The Secret as another release of the adapter (same field manager) left it: only `labels`."""
    live = world.kubernetes.get_secret(NAMESPACE, NAME)
    live["metadata"]["labels"] = labels
    for key in ("managedFields", "resourceVersion", "uid", "creationTimestamp"):
        live["metadata"].pop(key, None)
    admin.call(
        "PUT",
        f"/kubernetes/namespaces/{NAMESPACE}/secrets/{NAME}",
        {"object": live, "manager": "hyperfleet-pullsecret"},
    )
    return dict(world.kubernetes.get_secret(NAMESPACE, NAME))


def test_a_secret_of_the_previous_release_is_recognised_relabelled_and_deleted(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    before = relabel(admin, world, PREVIOUS)
    assert deliver(adapter).result == "applied"  # recognised (not an OwnershipConflict), and rewritten
    after = world.kubernetes.get_secret(NAMESPACE, NAME)
    assert FRAMEWORK.items() <= after["metadata"]["labels"].items()
    assert after["metadata"]["labels"]["managed-by"] == "hyperfleet"  # kept while the previous release may run
    assert after["data"] == before["data"]
    assert deliver(adapter).result == "unchanged"
    admin.patch_cluster(CID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z", "deleted_by": "ops@x.com"})
    assert deliver(adapter, 2).result == "finalized"
    assert world.kubernetes.get_secret(NAMESPACE, NAME) is None


def test_a_secret_with_only_the_framework_labels_is_ours(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    relabel(admin, world, FRAMEWORK)  # as the release after the migration writes it
    assert deliver(adapter).result == "applied"
    admin.patch_cluster(CID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z", "deleted_by": "ops@x.com"})
    assert deliver(adapter, 2).result == "finalized"
    assert world.kubernetes.get_secret(NAMESPACE, NAME) is None
