"""Source rotation: a new version of PULL_SECRET_SOURCE fans out to one reconcile event per cluster.

Secret Manager publishes `SECRET_VERSION_ADD` to the source secret's topic (attributes `eventType`,
`secretId`, `versionId`; data = the Secret resource JSON). The function receives it like any Pub/Sub
message; this module drops the cached source, lists the clusters from the HyperFleet API page by page
and publishes one Sentinel-shaped reconcile CloudEvent per cluster to ADAPTER_TOPIC.

Pace: each reconcile may add a secret version, and Secret Manager allows SECRET_WRITE_QUOTA writes per
minute per project, so events go out at `Settings.publish_rate()`: 90 % of that quota divided by the
writes a changed cluster costs (ROTATION_WRITES_PER_CLUSTER, 1), unless ROTATION_PUBLISH_RATE says.

Resumable: progress (the notified version, page, offset, done) is a record on a secret of its own
(`progress_secret_id`; annotations only, compare-and-swap on its etag), saved after every page,
before handing on, and when a publish fails. A redelivered notification continues from that record instead
of page 1 (at most the clusters published after the last save go out once more); one for a version
already done publishes nothing, one older than the recorded version is ignored. A fan-out that would
outlive ROTATION_SLICE (keep it under the function timeout) saves its place and publishes a continuation:
the same notification again, on ADAPTER_TOPIC, which the function handles like the first.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import asdict, dataclass
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
A_PROGRESS = "hyperfleet-rotation"
CONTINUATION = "hyperfleetContinuation"  # message attribute of a handed-on notification
HAND_ON_RESERVE_S = 5.0  # slice time kept for saving the place and publishing the continuation (at most)


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


@dataclass(frozen=True)
class Progress:
    """How far the fan-out of one source version got: the next cluster is `offset` on `page`."""

    version: str
    page: int = 1
    offset: int = 0
    done: bool = False

    def encode(self) -> dict[str, str]:
        return {A_PROGRESS: json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)}

    @staticmethod
    def decode(annotations: dict[str, str]) -> Progress | None:
        try:
            value = json.loads(annotations.get(A_PROGRESS) or "")
            return Progress(str(value["version"]), int(value["page"]), int(value["offset"]), bool(value["done"]))
        except (ValueError, KeyError, TypeError):
            return None

    def ahead_of(self, other: Progress) -> bool:
        return self.done > other.done or (self.page, self.offset) > (other.page, other.offset)


def progress_secret_id(settings: Settings) -> str:
    """The progress record's secret id: SECRET_ID_TEMPLATE for `_rotation_ADAPTER`, a name no cluster has
    (cluster ids never contain "_"), inside the IAM condition that covers the per-cluster secrets."""
    return settings.secret_id_template.format(cluster_id=f"_rotation_{settings.adapter_name}")


def version_number(version_name: str) -> int:
    tail = version_name.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


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


class _Ledger:
    """The progress record of this adapter's fan-outs (one secret; compare-and-swap on its etag)."""

    def __init__(self, store: SecretStore, name: str, labels: dict[str, str], deadline: Deadline) -> None:
        self.store = store
        self.name = name
        self.labels = labels
        self.deadline = deadline
        self.etag: str | None = None
        self.recorded: Progress | None = None

    def load(self) -> Progress | None:
        found = self.store.read_record(self.name, self.deadline)
        self.etag = None if found is None else found[1]
        self.recorded = None if found is None else Progress.decode(found[0])
        return self.recorded

    def save(self, progress: Progress) -> Progress:
        """Record `progress`; when someone else moved the record on meanwhile, returns theirs to follow."""
        for _ in range(5):
            etag = self.store.write_record(
                self.name, progress.encode(), etag=self.etag, labels=self.labels, deadline=self.deadline
            )
            if etag is not None:
                self.etag, self.recorded = etag, progress
                return progress
            theirs = self.load()
            if theirs is not None and (theirs.version != progress.version or theirs.ahead_of(progress)):
                return theirs  # a newer rotation, or a concurrent delivery further on: follow it
        raise TransientError(f"rotation progress {self.name}: it kept changing", reason="WriteConflict")


def fan_out(
    settings: Settings,
    notification: SecretVersionAdded,
    *,
    hyperfleet: HyperFleetClient,
    store: SecretStore,
    publisher: Publisher,
    deadline: Deadline,
    state_project: str | None = None,
) -> tuple[str, int]:
    """Handle one SECRET_VERSION_ADD (or its continuation); returns (result, events published).

    Raises TransientError (the notification is redelivered and resumes from the saved progress).
    """
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
    project = settings.secret_project_id or state_project
    if project is None:
        raise TransientError("rotation: no project for the progress record (set SECRET_PROJECT_ID)")
    ledger = _Ledger(
        store,
        f"projects/{project}/secrets/{progress_secret_id(settings)}",
        {"managed-by": "hyperfleet", "adapter": settings.adapter_name, "resource-type": "rotation-progress"},
        deadline,
    )
    version = notification.version or f"{notification.secret}/versions/0"
    recorded = ledger.load()
    same_secret = recorded is not None and recorded.version.split("/")[3:4] == version.split("/")[3:4]
    if recorded is not None and same_secret and version_number(recorded.version) > version_number(version):
        log.info(f"rotation: {recorded.version} is newer than this notification; nothing to do", operation="rotation")
        return "ignored", 0
    if recorded is not None and recorded.version == version and recorded.done:
        log.info(f"rotation to {version}: every cluster was already published", operation="rotation")
        return "done", 0
    progress = recorded if recorded is not None and recorded.version == version else Progress(version)
    if progress is not recorded:
        log.info(f"rotation to {version}: starting", operation="rotation")
    else:
        log.info(
            f"rotation to {version}: resuming at page {progress.page}, offset {progress.offset}", operation="rotation"
        )
    return _publish_from(
        settings,
        notification,
        progress=progress,
        hyperfleet=hyperfleet,
        publisher=publisher,
        ledger=ledger,
        deadline=deadline,
    )


def _publish_from(
    settings: Settings,
    notification: SecretVersionAdded,
    *,
    progress: Progress,
    hyperfleet: HyperFleetClient,
    publisher: Publisher,
    ledger: _Ledger,
    deadline: Deadline,
) -> tuple[str, int]:
    topic = settings.adapter_topic
    assert topic is not None
    interval = 1.0 / settings.publish_rate()
    reserve = min(HAND_ON_RESERVE_S, settings.rotation_slice_s / 4)
    published = 0
    next_at = time.monotonic()
    futures: list[Any] = []

    def flush(at: Progress) -> None:
        """Wait for every publish; on failure save how far the confirmed part got, then raise."""
        try:
            for future in futures:
                future.result(timeout=max(deadline.remaining(), 1.0))
        except Exception as exc:  # noqa: BLE001 - any publish failure means: let Pub/Sub redeliver
            raise TransientError(
                f"publishing reconcile events failed ({type(exc).__name__}); redelivery resumes at page {at.page}",
                reason="PublishFailed",
                service="pubsub",
            ) from None
        finally:
            futures.clear()

    while True:
        page, offset = progress.page, progress.offset
        with log.step("hyperfleet.list_clusters", page=page):
            clusters, total = hyperfleet.list_clusters(page=page, size=PAGE_SIZE)
        for index in range(offset, len(clusters)):
            if deadline.remaining() < reserve:
                here = Progress(progress.version, page, index)
                flush(progress)
                followed = ledger.save(here)
                if followed is not here and (followed.version != here.version or followed.done):
                    return "superseded", published
                _hand_on(publisher, topic, notification, followed)
                log.info(
                    f"rotation to {progress.version}: handed on at page {page}, offset {index} after {published} "
                    "event(s)",
                    operation="rotation",
                    published=published,
                )
                return "continued", published
            cluster = clusters[index]
            if not isinstance(cluster.get("id"), str) or cluster.get("deleted_time"):
                continue
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at, time.monotonic()) + interval
            futures.append(publisher.publish(topic, sentinel_event(cluster)))
            published += 1
        last = not clusters or page * PAGE_SIZE >= total
        flush(progress)
        reached = Progress(progress.version, page + 1, 0, done=last)
        followed = ledger.save(reached)
        if followed is not reached and (followed.version != reached.version or followed.done):
            return "superseded" if followed.version != reached.version else "rotated", published
        progress = followed
        if progress.done:
            break
    log.info(
        f"platform pull secret rotated ({progress.version.rsplit('/', 1)[-1] or '?'}): published {published} "
        f"reconcile event(s) to {topic} in this invocation",
        operation="rotation",
        published=published,
    )
    return "rotated", published


def _hand_on(publisher: Publisher, topic: str, notification: SecretVersionAdded, at: Progress) -> None:
    """Publish the notification again on ADAPTER_TOPIC: the invocation it starts resumes from the record."""
    attributes = {
        "eventType": "SECRET_VERSION_ADD",
        "secretId": notification.secret,
        "versionId": notification.version,
        CONTINUATION: f"{at.page}:{at.offset}",
    }
    data = json.dumps({"name": notification.secret}).encode("utf-8")
    try:
        publisher.publish_raw(topic, data, attributes).result(timeout=30.0)
    except Exception as exc:  # noqa: BLE001 - the place is saved: a redelivery resumes from it
        raise TransientError(
            f"handing the rotation on failed ({type(exc).__name__}); redelivery resumes at page {at.page}",
            reason="PublishFailed",
            service="pubsub",
        ) from None
