"""The Kubernetes apply runs beside the cluster's generation re-read and the new version's read-back.

What fails beside the apply fails the delivery transiently: Kubernetes then already holds the version Secret
Manager stored, nothing reports it applied, and the redelivery converges without writing again. Outcomes
asserted: the emulators' objects and calls, and the statuses the HyperFleet API received.
"""

from __future__ import annotations

from typing import Any

import pytest

from pullsecret.delivery.direct.kubesecret import A_GENERATION, A_SOURCE
from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-overlap1"
PROJECT = "hf-demo-project"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"


def deliver(adapter: Adapter, generation: int) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))


def applied_generations(admin: Admin) -> list[int]:
    """Generations the adapter reported Available=True for."""
    found = []
    for report in admin.reports():
        body = report["body"]
        if report.get("cluster_id") != CID or body.get("adapter") != "pullsecret":
            continue
        available = {c["type"]: c["status"] for c in body["conditions"]}.get("Available")
        if available == "True":
            found.append(int(body["observed_generation"]))
    return found


@pytest.fixture
def adapter(function_env: dict[str, str]) -> Adapter:
    return Adapter.from_environment()


def test_a_failed_generation_re_read_after_the_kubernetes_write_is_converged_by_the_redelivery(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    assert deliver(adapter, 1).result == "applied"
    own = {"r2.registry.example": {"auth": "dXNlcjpjaGFuZ2Vk"}}
    spec = {
        "platform": {"type": "gcp", "gcp": {"projectID": PROJECT, "region": "us-central1"}},
        "pullSecret": {"data": {"auths": own}},
    }
    seed_ready_cluster(admin, CID, generation=2, spec=spec)
    # The change's first read of the cluster passes; its re-read after AddSecretVersion (A3) fails past the
    # client's retries (503 five times).
    admin.call(
        "POST", "/faults", {"service": "hyperfleet", "method": "getClusterById", "code": "503", "count": 5, "skip": 1}
    )
    with pytest.raises(TransientError):
        deliver(adapter, 2)
    admin.call("DELETE", "/faults")
    versions = list(world.secretmanager.versions(PROJECT, SECRET_ID))
    assert [v["name"].rsplit("/", 1)[-1] for v in versions] == ["1", "2"]
    live = world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret")
    # The apply ran beside the failed re-read: Kubernetes holds the stored version 2 at generation 2 ...
    assert live["metadata"]["annotations"][A_SOURCE].endswith("/versions/2")
    assert live["metadata"]["annotations"][A_GENERATION] == "2"
    # ... and nothing reported generation 2 applied.
    assert applied_generations(admin) == [1]

    admin.call("DELETE", "/calls")
    assert deliver(adapter, 2).result == "unchanged"
    assert applied_generations(admin) == [1, 2]
    assert len(list(world.secretmanager.versions(PROJECT, SECRET_ID))) == 2  # one write for the change
    calls = admin.calls()
    assert not {m for m in calls.get("secretmanager", {}) if m in ("AddSecretVersion", "CreateSecret")}
    assert not {m for m in calls.get("kubernetes", {}) if not m.endswith(".dryrun")}
