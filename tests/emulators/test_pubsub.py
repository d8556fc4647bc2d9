"""The Cloud SDK Pub/Sub emulator: a Sentinel event pushed as the broker publishes it, and redelivery."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from emulators.faults import FaultBook
from emulators.pubsub import PubSubEmulator

AVAILABLE, REASON = PubSubEmulator.available()
pytestmark = [pytest.mark.pubsub, pytest.mark.skipif(not AVAILABLE, reason=REASON)]

EVENT = {
    "specversion": "1.0",
    "type": "com.redhat.hyperfleet.cluster.reconcile",
    "source": "hyperfleet-sentinel",
    "id": "0192f0c2-7b1e-7cc4-9a51-2f1e7d8f0b11",
    "datacontenttype": "application/json",
    "data": {"id": "cls-abc123", "kind": "Cluster", "href": "/api/hyperfleet/v1/clusters/cls-abc123", "generation": 5},
}


class Receiver:
    """A tiny push endpoint that records envelopes and answers with scripted status codes."""

    def __init__(self, codes: list[int] | None = None) -> None:
        self.envelopes: list[dict[str, Any]] = []
        self.codes = list(codes or [])
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.arrived:
                    receiver.envelopes.append(json.loads(body))
                    code = receiver.codes.pop(0) if receiver.codes else 204
                    receiver.arrived.notify_all()
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/push"

    def wait_for(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.envelopes) < count and time.monotonic() < deadline:
                self.arrived.wait(timeout=0.5)
            return list(self.envelopes)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def pubsub() -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(FaultBook())
    emulator.start()
    yield emulator
    emulator.stop()


def test_sentinel_event_is_pushed_as_the_broker_publishes_it(pubsub: PubSubEmulator) -> None:
    assert pubsub.startup_seconds is not None and pubsub.startup_seconds < 30
    receiver = Receiver()
    try:
        pubsub.create_topic("sentinel-clusters")
        pubsub.create_push_subscription("sentinel-clusters", "pullsecret-push", receiver.url)
        message_id = pubsub.publish_sentinel_event("sentinel-clusters", EVENT)
        envelope = receiver.wait_for(1)[0]
    finally:
        receiver.close()
    assert envelope["subscription"] == f"projects/{pubsub.project}/subscriptions/pullsecret-push"
    message = envelope["message"]
    assert json.loads(base64.b64decode(message["data"])) == EVENT
    assert message["attributes"] == {"_watermill_message_uuid": EVENT["id"]}
    assert message["messageId"] == message_id


def test_non_2xx_leads_to_redelivery(pubsub: PubSubEmulator) -> None:
    receiver = Receiver(codes=[500])
    try:
        pubsub.create_topic("sentinel-retry")
        pubsub.create_push_subscription("sentinel-retry", "pullsecret-retry", receiver.url)
        message_id = pubsub.publish_sentinel_event("sentinel-retry", EVENT)
        envelopes = receiver.wait_for(2)
    finally:
        receiver.close()
    assert len(envelopes) >= 2
    assert {e["message"]["messageId"] for e in envelopes} == {message_id}


def test_pull_and_admin(pubsub: PubSubEmulator) -> None:
    pubsub.create_topic("plain-topic")
    pubsub.create_pull_subscription("plain-topic", "plain-pull")
    pubsub.publish("plain-topic", b"hello", {"k": "v"})
    received = pubsub.pull("plain-pull", 5)
    assert [base64.b64decode(m["message"]["data"]) for m in received] == [b"hello"]
    assert received[0]["message"]["attributes"] == {"k": "v"}
    status, state = pubsub.handle_admin("GET", "/state", None)
    assert status == 200 and f"projects/{pubsub.project}/topics/plain-topic" in state["topics"]
    assert pubsub.handle_admin("POST", "/reset", None) == (200, {"reset": True})
    assert pubsub.state()["topics"] == []
