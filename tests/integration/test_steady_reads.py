"""The read step when the platform pull secret is in the cache: the newest-version read runs on the event's
own thread beside the pool's probe (pullsecret.reconcile.entry._read). Its failure must leave what the pool's
failure leaves: a transient outcome, nothing written anywhere, and no call still running afterwards."""

from __future__ import annotations

from typing import Any

import pytest

from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-steady-reads"
PROJECT = "hf-demo-project"
SM_WRITES = ("CreateSecret", "UpdateSecret", "AddSecretVersion", "DestroySecretVersion", "DeleteSecret")


def deliver(adapter: Adapter, generation: int) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))


def test_a_failed_newest_version_read_with_the_source_cached_is_transient_and_writes_nothing(
    function_env: dict[str, str], world: Any, admin: Admin
) -> None:
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, CID)
    assert deliver(adapter, 1).result == "applied"  # the platform pull secret is now in the cache
    spec = {
        "platform": {"type": "gcp", "gcp": {"projectID": PROJECT, "region": "us-central1"}},
        "pullSecret": {"data": {"auths": {"r2.registry.example": {"auth": "dXNlcjpjaGFuZ2Vk"}}}},
    }
    seed_ready_cluster(admin, CID, generation=2, spec=spec)  # a change: it would write on both sides
    kube_revision = admin.get("/kubernetes/state")["resourceVersion"]
    before = admin.calls()
    # The only Secret Manager read of this event is the newest version of the cluster's secret.
    admin.fault(service="secretmanager", method="AccessSecretVersion", code="UNAVAILABLE", count=100)
    with pytest.raises(TransientError) as raised:
        deliver(adapter, 2)
    assert raised.value.service == "secretmanager"
    after = admin.calls()
    written = {m: after["secretmanager"].get(m, 0) - before["secretmanager"].get(m, 0) for m in SM_WRITES}
    assert written == dict.fromkeys(SM_WRITES, 0), written
    assert admin.get("/kubernetes/state")["resourceVersion"] == kube_revision, "Kubernetes was written"
    assert world.hyperfleet.in_flight() == 0
