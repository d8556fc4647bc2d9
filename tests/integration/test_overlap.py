"""The Kubernetes apply runs beside the cluster's generation re-read and the new version's read-back.

What fails beside the apply fails the delivery transiently: Kubernetes then already holds the version Secret
Manager stored, nothing reports it applied, and the redelivery converges without writing again. Outcomes
asserted: the emulators' objects and calls, and the statuses the HyperFleet API received.
"""

from __future__ import annotations

import json
from datetime import datetime
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


def _interval(line: dict[str, Any]) -> tuple[float, float]:
    """A step's [start, end] in seconds, from its log line's time (its end) and its duration."""
    end = datetime.fromisoformat(line["time"].replace("Z", "+00:00")).timestamp()
    return end - line["duration_ms"] / 1000, end


def test_the_cluster_is_read_again_beside_the_status_report_not_after_it(
    adapter: Adapter, admin: Admin, capsys: pytest.CaptureFixture[str]
) -> None:
    """L1's re-read after the writes overlaps the report (issue 48 item 7): each held 0.6 s at the API, the two
    steps' logged intervals share most of it; one after the other they would share none."""
    seed_ready_cluster(admin, CID)
    for method in ("getClusterById", "putClusterStatuses"):
        admin.call("POST", "/faults", {"service": "hyperfleet", "method": method, "latency_ms": 600})
    capsys.readouterr()
    assert deliver(adapter, 1).result == "applied"
    admin.call("DELETE", "/faults")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    (read,) = [x for x in lines if x.get("operation") == "hyperfleet.get_cluster" and x.get("why") == "after writing"]
    (report,) = [x for x in lines if x.get("operation") == "hyperfleet.report_status"]
    (read_start, read_end), (report_start, report_end) = _interval(read), _interval(report)
    shared = min(read_end, report_end) - max(read_start, report_start)
    assert shared > 0.3, (read, report)
    assert applied_generations(admin) == [1]
