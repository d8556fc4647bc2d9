"""Every delivery path of docs/contract.md §1, through functions-framework: its test client and a real process.

Golden payloads live in tests/fixtures/events/. Each delivery must be acknowledged (200) and end with the
cluster provisioned; NodePool events are acknowledged with no side effects; a transient failure answers
503 so that Pub/Sub redelivers.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from emulators.functionproc import FunctionProcess
from emulators.pubsub import PubSubEmulator
from tests.support import SENSITIVE, Admin, seed_ready_cluster, sentinel_event

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "events"
CID = "cls-abc123"  # the cluster the golden payloads name, at generation 5
PROVISIONING_PATHS = [
    "eventarc-message-published.json",
    "pubsub-push.json",
    "sentinel-structured.json",
    "sentinel-binary.json",
    "sentinel-variant-capital-kind.json",
    "sentinel-variant-v1.json",
]


def golden(name: str) -> tuple[dict[str, str], bytes]:
    """Headers and body of a golden delivery; the gcloud case is sent in binary mode as gcloud does."""
    fixture = json.loads((FIXTURES / name).read_text())
    if "cloud_event" in fixture:
        event = fixture["cloud_event"]
        headers = {f"ce-{k}": str(v) for k, v in event.items() if k not in ("data", "datacontenttype")}
        headers["Content-Type"] = event.get("datacontenttype", "application/json")
        return headers, json.dumps(event["data"]).encode()
    return dict(fixture["headers"]), json.dumps(fixture["body"]).encode()


def reports_for(admin: Admin, cluster_id: str = CID) -> list[dict[str, Any]]:
    return [r for r in admin.reports() if r.get("cluster_id") == cluster_id]


def assert_provisioned(admin: Admin, world: Any) -> None:
    report = reports_for(admin)[-1]
    conditions = {c["type"]: c["status"] for c in report["body"]["conditions"]}
    assert report["code"] == 201 and conditions["Available"] == "True", report
    assert len(world.secretmanager.versions("hf-demo-project", f"hyperfleet-{CID}-pull-secret")) == 1
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is not None


@pytest.fixture
def delivery_env(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The golden payloads carry a fixed publish time; event age has its own test (test_reconcile)."""
    monkeypatch.setenv("MAX_EVENT_AGE", "0")
    return {**function_env, "MAX_EVENT_AGE": "0"}


@pytest.fixture
def client(delivery_env: dict[str, str]) -> Any:
    from functions_framework import create_app

    from pullsecret import handler

    handler._adapter = None  # main.py builds the process-wide adapter from this test's environment
    return create_app("handle_cluster_event", str(ROOT / "main.py"), "cloudevent").test_client()


@pytest.mark.parametrize("name", [*PROVISIONING_PATHS, "gcloud-call-cloud-event.json"])
def test_each_delivery_path_through_the_test_client(
    client: Any, admin: Admin, world: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID, generation=5)
    headers, body = golden(name)
    response = client.post("/", headers=headers, data=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert_provisioned(admin, world)
    out = capsys.readouterr().out
    assert not any(secret in out for secret in SENSITIVE)
    final = [json.loads(line) for line in out.splitlines() if '"operation": "reconcile"' in line][-1]
    assert final["result"] == "applied"


def test_trace_context_reaches_the_log_lines(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID, generation=5)
    headers, body = golden("eventarc-message-published.json")
    assert client.post("/", headers=headers, data=body).status_code == 200
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    traced = [line for line in lines if "logging.googleapis.com/trace" in line]
    assert traced and all(
        line["logging.googleapis.com/trace"] == "projects/hf-demo-project/traces/105445aa7843bc8bf206b12000100000"
        for line in traced
    )


def test_nodepool_and_unparseable_events_are_acknowledged_without_side_effects(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID, generation=5)
    admin.call("DELETE", "/calls")
    headers, body = golden("nodepool-push.json")
    assert client.post("/", headers=headers, data=body).status_code == 200
    garbage = {
        "message": {"data": base64.b64encode(b"\x00not json").decode(), "messageId": "1"},
        "subscription": "projects/p/subscriptions/s",
    }
    assert client.post("/", json=garbage).status_code == 200
    calls = admin.calls()
    assert not {"secretmanager", "kubernetes", "gke"} & set(calls), calls
    assert reports_for(admin) == []
    messages = [json.loads(line)["message"] for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert any("clusters only" in m for m in messages)
    assert any("not a structured-mode CloudEvent" in m for m in messages)


def test_transient_failure_answers_503_for_redelivery(
    client: Any, admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_ready_cluster(admin, CID, generation=5)
    admin.fault(service="kubernetes", method="patch.secrets.dryrun", code="503", rate=1.0)
    headers, body = golden("pubsub-push.json")
    assert client.post("/", headers=headers, data=body).status_code == 503
    admin.call("DELETE", "/faults")
    assert client.post("/", headers=headers, data=body).status_code == 200
    assert_provisioned(admin, world)


# --- a real functions-framework process ---------------------------------------------------------------------


@pytest.fixture
def function_process(delivery_env: dict[str, str], tmp_path: Path) -> Iterator[FunctionProcess]:
    process = FunctionProcess(delivery_env, tmp_path / "function.log")
    process.start()
    yield process
    process.stop()
    output = process.output()
    assert not any(secret in output for secret in SENSITIVE), "a credential reached the function's output"


def test_every_delivery_path_through_a_real_process(
    function_process: FunctionProcess, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID, generation=5)
    for index, name in enumerate([*PROVISIONING_PATHS, "gcloud-call-cloud-event.json"], start=1):
        headers, body = golden(name)
        response = requests.post(function_process.url, headers=headers, data=body, timeout=30)
        assert response.status_code == 200, (name, response.text)
        assert len(reports_for(admin)) == index, name
        assert_provisioned(admin, world)
    results = [
        json.loads(line)["result"]
        for line in function_process.output().splitlines()
        if line.startswith("{") and '"operation": "reconcile"' in line and '"result"' in line
    ]
    assert results[0] == "applied" and set(results[1:]) == {"unchanged"}


@pytest.mark.pubsub
def test_published_event_reaches_the_function_through_the_pubsub_emulator(
    function_process: FunctionProcess, admin: Admin, world: Any, stack: Any
) -> None:
    available, reason = PubSubEmulator.available()
    if not available:
        pytest.skip(reason)
    pubsub = PubSubEmulator(world.book)
    pubsub.start()
    try:
        seed_ready_cluster(admin, CID, generation=2)
        pubsub.create_topic("hyperfleet-cluster-events")
        pubsub.create_push_subscription("hyperfleet-cluster-events", "pullsecret-push", function_process.url)
        pubsub.publish_sentinel_event("hyperfleet-cluster-events", sentinel_event(CID, 2))
        deadline = time.monotonic() + 30
        while not reports_for(admin) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert_provisioned(admin, world)
    finally:
        pubsub.stop()


def test_a_push_envelope_without_subscription_is_logged_and_answered_in_plain_text(
    client: Any, admin: Admin, capsys: pytest.CaptureFixture[str]
) -> None:
    """functions-framework rejects what it cannot turn into a CloudEvent before the function runs: the
    function still logs one line for it (keys only, no values) and answers without echoing the request."""
    admin.call("DELETE", "/calls")
    event = sentinel_event(CID, 5)
    envelope = {
        "message": {"data": base64.b64encode(json.dumps(event).encode()).decode(), "messageId": "7"},
    }
    response = client.post("/", json=envelope, headers={"Authorization": "Bearer push-oidc-token-not-real"})
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert "subscription" in text and "push-oidc-token-not-real" not in text and "<" not in text, text
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    rejected = [line for line in lines if line.get("reason") == "MalformedDelivery"]
    assert len(rejected) == 1 and rejected[0]["severity"] == "WARNING", lines
    assert "['message']" in rejected[0]["message"] and envelope["message"]["data"] not in rejected[0]["message"]
    assert not {"secretmanager", "kubernetes", "gke"} & set(admin.calls())


def test_a_generation_that_is_no_integer_is_warned_about(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID, generation=5)
    event = {**sentinel_event(CID, 5), "data": {"id": CID, "kind": "Cluster", "generation": "5"}}
    headers = {f"ce-{k}": str(v) for k, v in event.items() if k != "data"}
    response = client.post("/", headers={**headers, "Content-Type": "application/json"}, json=event["data"])
    assert response.status_code == 200, response.get_data(as_text=True)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    warned = [line for line in lines if line["severity"] == "WARNING" and '"5"' in line["message"]]
    assert len(warned) == 1 and "not a positive integer" in warned[0]["message"], lines
    assert_provisioned(admin, world)  # the cluster's own generation is used
