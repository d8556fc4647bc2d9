"""Reconcile events on the adapter's own topic (ADAPTER_TOPIC): Sentinel's shape, and the Pub/Sub client that sends
them (a source's fan-out and the operator's `rekey` publish them, each at the write quota's pace).

An event `rekey` publishes carries the Pub/Sub attribute REKEY_ATTRIBUTE: the function then asks its source again
for that cluster instead of what it may know of it (pullsecret.source.service.source). The attribute asks for a
read, nothing more, and only on ADAPTER_TOPIC (`asks_rekeyed_read`): the CloudEvent is Sentinel's, no credential
travels on the topic, and whoever may publish there can make the function read, never revoke.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Mapping
from typing import Any

EVENT_TYPE = "com.redhat.hyperfleet.cluster.reconcile"
EVENT_SOURCE = "hyperfleet-pullsecret-rotation"
REKEY_ATTRIBUTE = "hyperfleet-pullsecret-rekey"
PUBSUB_SOURCE_PREFIX = "//pubsub.googleapis.com/"  # a Pub/Sub CloudEvent's source: this, then the topic


def asks_rekeyed_read(attributes: Mapping[str, Any], data: Any, adapter_topic: str | None) -> bool:
    """A Pub/Sub message whose attributes carry REKEY_ATTRIBUTE and that came from ADAPTER_TOPIC.

    The topic is the CloudEvent's `source` (`//pubsub.googleapis.com/projects/P/topics/T`), which Eventarc sets
    from the trigger's topic, not from anything a publisher sends: only `rekey` (its operator role) publishes on
    ADAPTER_TOPIC. The attribute on any other topic (Sentinel's, whose publishers are many) asks nothing: a forged
    event cannot spend the function's service budget, let alone revoke."""
    if not carries_rekey_mark(data):
        return False
    return adapter_topic is not None and attributes.get("source") == f"{PUBSUB_SOURCE_PREFIX}{adapter_topic}"


def carries_rekey_mark(data: Any) -> bool:
    """A Pub/Sub push envelope (or Eventarc's message-published data) whose message carries REKEY_ATTRIBUTE."""
    message = data.get("message") if isinstance(data, dict) else None
    carried = message.get("attributes") if isinstance(message, dict) else None
    return isinstance(carried, dict) and carried.get(REKEY_ATTRIBUTE) == "1"


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

    def publish(self, topic: str, event: dict[str, Any], *, rekeyed: bool = False) -> Any:
        """`rekeyed`: the event of a cluster `rekey` re-keyed (REKEY_ATTRIBUTE: the function asks its source)."""
        data = json.dumps(event, separators=(",", ":")).encode("utf-8")
        extra = {REKEY_ATTRIBUTE: "1"} if rekeyed else {}
        return self.client().publish(topic, data, _watermill_message_uuid=str(event["id"]), **extra)

    def publish_raw(self, topic: str, data: bytes, attributes: dict[str, str]) -> Any:
        return self.client().publish(topic, data, **attributes)
