"""A deletion races a provisioning event across two function processes (service mode): once the deletion is
finalized and the cluster is gone, nothing of it remains after the late event ends (L1-L3 of
pullsecret.reconcile.finalize).

Process A receives a provisioning event; its service `POST` is held by the Pull Secret Service emulator (a latency
rule on `post`, applied before the request is served: the POST lands late). Meanwhile process B receives the
deletion, cleans up, revokes (`DELETE`: nothing held yet), reports `Finalized=True`, and the cluster is
hard-deleted. Then A's POST lands and mints. Outcomes asserted: the service, Secret Manager and Kubernetes
emulators' state, and the registry refusing the minted credential.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from emulators.functionproc import FunctionProcess
from tests.reliability import harness
from tests.support import Admin, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-lateprov01"
PROJECT = "hf-demo-project"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
NAMESPACE = f"clusters-{CID}"
KUBE_NAME = f"{CID}-pull-secret"
HOLD_MS = 4000  # how long the service holds A's POST: B's whole deletion fits inside


@pytest.fixture
def processes(function_env: dict[str, str], world: Any, tmp_path: Path) -> Iterator[list[FunctionProcess]]:
    env = {k: v for k, v in function_env.items() if k != "PULL_SECRET_SOURCE"}
    env.update(
        {
            "PULL_SECRET_SERVICE_URL": world.pullsecretservice.url,
            "PULL_SECRET_SERVICE_AUTH": "google-id-token",
            "PULL_SECRET_SERVICE_TIMEOUT": "20",
            "RETRY_DEADLINE": "30",
            "MAX_EVENT_AGE": "0",
        }
    )
    started = [FunctionProcess(env, tmp_path / f"{name}.log", drop=("PULL_SECRET_SOURCE",)) for name in "ab"]
    try:
        for process in started:
            process.start()
        yield started
    finally:
        for process in started:
            process.stop()


def _deliver(process: FunctionProcess, generation: int) -> int:
    envelope = pubsub_envelope(sentinel_event(CID, generation))
    return requests.post(process.url, json=envelope, timeout=120).status_code


def _held_credentials(admin: Admin) -> list[Any]:
    state = admin.get("/pullsecretservice/state")
    clusters = state.get("clusters")
    if isinstance(clusters, dict):
        return list((clusters.get(CID) or {}).get("credentials", []))
    return [c for c in clusters or [] if isinstance(c, dict) and c.get("cluster_id") == CID]


def test_a_late_provisioning_event_leaves_nothing_once_the_deletion_is_finalized_and_the_cluster_gone(
    processes: list[FunctionProcess], admin: Admin, world: Any
) -> None:
    late, deleter = processes
    seed_ready_cluster(admin, CID)
    admin.fault(service="pullsecretservice", method="post", latency_ms=HOLD_MS, count=1)
    world.book.reset_counters()
    answers: list[int] = []
    provisioning = threading.Thread(target=lambda: answers.append(_deliver(late, 1)))
    provisioning.start()
    # A has read the cluster and sent its POST once the service counted it (the hold starts there).
    until = time.monotonic() + 30
    while admin.calls().get("pullsecretservice", {}).get("post", 0) < 1 and time.monotonic() < until:
        time.sleep(0.05)
    assert admin.calls().get("pullsecretservice", {}).get("post", 0) == 1, admin.calls()
    admin.patch_cluster(CID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z"})
    assert _deliver(deleter, 2) == 200
    finalized = [r for r in admin.reports() if r.get("cluster_id") == CID][-1]["body"]
    assert {c["type"]: c["status"] for c in finalized["conditions"]}.get("Finalized") == "True", finalized
    admin.delete_cluster(CID)  # HyperFleet hard-deletes a finalized cluster
    provisioning.join(timeout=90)
    assert not provisioning.is_alive()
    harness.count("cases tried")
    # Whatever A answered, nothing of the cluster outlives it.
    assert answers and answers[0] in (200, 503), answers
    assert _held_credentials(admin) == [], "a credential outlived its cluster at the Pull Secret Service"
    secret = world.secretmanager.secret(PROJECT, SECRET_ID)
    enabled = [v for v in world.secretmanager.versions(PROJECT, SECRET_ID) if v.get("state") == "ENABLED"]
    assert secret is None or not enabled, f"an enabled Secret Manager version outlived its cluster: {enabled}"
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None, "a Kubernetes Secret outlived its cluster"
    log = late.output()
    assert "the cluster was deleted while this event wrote" in log or answers[0] == 503, json.dumps(log[-2000:])
