"""Source rotation: a new version of PULL_SECRET_SOURCE fans out to one reconcile event per cluster.

Secret Manager publishes `SECRET_VERSION_ADD` to the source secret's topic (attributes `eventType`,
`secretId`, `versionId`; data = the Secret resource JSON). The function receives it like any Pub/Sub
message; this module drops the cached source, lists the clusters from the HyperFleet API page by page
and publishes one Sentinel-shaped reconcile CloudEvent per cluster to ADAPTER_TOPIC, at most
ROTATION_PUBLISH_RATE per second (each reconcile reads the source and may add a version: Secret
Manager's write quota is the bound). Publishing failures raise TransientError: the notification is
redelivered and republishes; duplicate reconcile events are harmless (unchanged content writes nothing).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import Any

from pullsecret.config import SOURCE_VERSION_RE, Settings
from pullsecret.errors import TransientError
from pullsecret.events import SecretVersionAdded
from pullsecret.hyperfleet import HyperFleetClient
from pullsecret.logs import log
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore

PAGE_SIZE = 100
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


def source_matches(settings: Settings, notification: SecretVersionAdded) -> bool:
    """Is the notified secret our source, and does a new version change what we read (`latest`)?

    Compares the secret id only: notifications name the project by number, configuration by id.
    """
    match = SOURCE_VERSION_RE.match(settings.pull_secret_source or "")
    if match is None:
        return False
    return notification.secret.rsplit("/", 1)[-1] == match.group(2) and match.group(3) == "latest"


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


def fan_out(
    settings: Settings,
    notification: SecretVersionAdded,
    *,
    hyperfleet: HyperFleetClient,
    store: SecretStore,
    publisher: Publisher,
    deadline: Deadline,
) -> tuple[str, int]:
    """Handle one SECRET_VERSION_ADD; returns (result, events published). Raises TransientError."""
    if not source_matches(settings, notification):
        log.info(
            f"version added to {notification.secret[:200]}, which is not PULL_SECRET_SOURCE (or the source pins a "
            "version); nothing to do",
            operation="rotation",
        )
        return "ignored", 0
    store.invalidate_source()
    if not settings.adapter_topic:
        log.warning(
            "the platform pull secret has a new version but ADAPTER_TOPIC is not set: clusters are updated on "
            "Sentinel's next cycle only",
            operation="rotation",
        )
        return "ignored", 0
    interval = 1.0 / settings.rotation_publish_rate
    published = 0
    skipped_deleted = 0
    page = 1
    next_at = time.monotonic()
    futures: list[Any] = []
    while True:
        with log.step("hyperfleet.list_clusters", page=page):
            clusters, total = hyperfleet.list_clusters(page=page, size=PAGE_SIZE)
        for cluster in clusters:
            if not isinstance(cluster.get("id"), str):
                continue
            if cluster.get("deleted_time"):
                skipped_deleted += 1
                continue
            if deadline.expired():
                raise TransientError(
                    f"rotation fan-out ran out of time after {published} of {total} clusters; redelivery resumes",
                    reason="RotationIncomplete",
                    service="pubsub",
                )
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at, time.monotonic()) + interval
            futures.append(publisher.publish(settings.adapter_topic, sentinel_event(cluster)))
            published += 1
        if not clusters or page * PAGE_SIZE >= total:
            break
        page += 1
    for future in futures:
        try:
            future.result(timeout=max(deadline.remaining(), 1.0))
        except Exception as exc:  # noqa: BLE001 - any publish failure means: let Pub/Sub redeliver the notification
            raise TransientError(
                f"publishing reconcile events failed ({type(exc).__name__})", reason="PublishFailed", service="pubsub"
            ) from None
    log.info(
        f"platform pull secret rotated ({notification.version.rsplit('/', 1)[-1] or '?'}): published {published} "
        f"reconcile event(s) to {settings.adapter_topic}, skipped {skipped_deleted} deleted cluster(s)",
        operation="rotation",
        published=published,
    )
    return "rotated", published
