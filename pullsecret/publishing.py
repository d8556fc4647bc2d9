"""Reconcile events on the adapter's own topic (ADAPTER_TOPIC): Sentinel's shape, and the Pub/Sub client that sends
them (a source's fan-out and the operator's `rekey` publish them, each at the write quota's pace)."""

from __future__ import annotations

import json
import os
import threading
import uuid
from typing import Any

EVENT_TYPE = "com.redhat.hyperfleet.cluster.reconcile"
EVENT_SOURCE = "hyperfleet-pullsecret-rotation"


def sentinel_event(cluster: dict[str, Any]) -> dict[str, Any]:
    """A reconcile CloudEvent shaped exactly like Sentinel's (structured mode)."""
    cluster_id = str(cluster["id"])
    data: dict[str, Any] = {"id": cluster_id, "kind": "Cluster", "href": f"/api/hyperfleet/v1/clusters/{cluster_id}"}
    if isinstance(cluster.get("generation"), int):
        data["generation"] = cluster["generation"]
    return {
        "specversion": "1.0",
        "type": EVENT_TYPE,
        "source": EVENT_SOURCE,
        "id": str(uuid.uuid4()),
        "datacontenttype": "application/json",
        "data": data,
    }


class Publisher:
    """google-cloud-pubsub's PublisherClient, built on first use (honours PUBSUB_EMULATOR_HOST)."""

    def __init__(self, credentials: Any = None) -> None:
        self._credentials = credentials
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                from google.cloud.pubsub_v1 import PublisherClient

                if os.environ.get("PUBSUB_EMULATOR_HOST"):
                    self._client = PublisherClient()
                else:
                    self._client = PublisherClient(credentials=self._credentials)
            return self._client

    def publish(self, topic: str, event: dict[str, Any]) -> Any:
        data = json.dumps(event, separators=(",", ":")).encode("utf-8")
        return self.client().publish(topic, data, _watermill_message_uuid=str(event["id"]))

    def publish_raw(self, topic: str, data: bytes, attributes: dict[str, str]) -> Any:
        return self.client().publish(topic, data, **attributes)
