"""Source rotation: a new version of PULL_SECRET_SOURCE fans out to one reconcile event per cluster.

Secret Manager publishes `SECRET_VERSION_ADD` to the source secret's topic (attributes `eventType`,
`secretId`, `versionId`; data = the Secret resource JSON). The function receives it like any Pub/Sub
message; this module checks it, drops the cached source, lists the clusters from the HyperFleet API in id
order (keyset: `id > 'last'`, so a cluster deleted meanwhile shifts nothing) and publishes one Sentinel-shaped
reconcile CloudEvent per cluster to ADAPTER_TOPIC.

Pace: each reconcile may add a secret version, and Secret Manager allows SECRET_WRITE_QUOTA writes per
minute per project, so events go out at `Settings.publish_rate()`: 95 % of that quota divided by the
writes a changed cluster costs (ROTATION_WRITES_PER_CLUSTER, 1), unless ROTATION_PUBLISH_RATE says.

What a notification may decide. Anyone allowed to publish to either topic can send one, so nothing in it is
believed: the version it names must be the source's newest version, enabled (our own AccessSecretVersion of
`latest`, which also gives the secret's project number), or nothing happens (`ignored`). A continuation
(below) must carry the nonce the progress record holds, or it is `refused`.

Progress record (`progress_secret_id`; one annotation on a secret of its own, compare-and-swap on its etag):
the source secret as Secret Manager names it (project number and id), the version number, the keyset cursor
(`after`: every cluster id up to it was published), done, the holder (the invocation publishing now) and its
lease (wall clock), and the continuation nonce. Invariants (tests/protocol/test_rotation_protocol.py explores
them over every interleaving of two deliveries, within bounds):

- R1 (at every moment): only the holder publishes, and only before its lease ends; a delivery that finds the
  record held by a live lease publishes nothing and fails transiently (Pub/Sub redelivers it, and it takes
  over when the lease ran out: a holder that died leaves at most the clusters since its last save to repeat).
- R2 (at every moment): a version is followed only when strictly newer than the recorded one, or when the
  recorded one no longer exists (the source was recreated: its numbering restarted). A newer rotation records
  its version at once; the older holder's next save fails its compare-and-swap, it stops (`superseded`) and
  frees the lease; the newer one publishes only once the older's lease is free or over. So an older
  rotation's event follows a newer one's only when its holder stalled past its lease between the check and
  the publish (a lease is no fence); events carry no source, and each reconcile reads the newest one.
- R3 (after quiescence): every cluster that exists when the newest rotation ends got at least one of its
  events; repeats are bounded by the clusters published since the last save (one page).

A fan-out that would outlive ROTATION_SLICE (keep it under the function timeout) saves its place with a fresh
nonce and publishes a continuation: the same notification again, on ADAPTER_TOPIC, with the nonce as the
`hyperfleetContinuation` attribute; the invocation it starts takes over like any other delivery.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Any

from pullsecret.errors import TransientError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import log
from pullsecret.model import names
from pullsecret.model.events import CONTINUATION, SecretVersionAdded
from pullsecret.publishing import Publisher, sentinel_event
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.settings.common import Settings
from pullsecret.source.platform.progress import Ledger, Progress, progress_secret_id
from pullsecret.source.platform.secret import PlatformSecret
from pullsecret.source.platform.settings import PlatformSettings

# Named here too for the callers of `rotation` (tests read the attribute name and the record's secret id).
__all__ = ["CONTINUATION", "Held", "Progress", "fan_out", "progress_secret_id"]

PAGE_SIZE = 100
HAND_ON_RESERVE_S = 5.0  # slice time kept for saving the place and publishing the continuation (at most)
LEASE_MARGIN_S = 60.0  # a holder's lease: its slice plus this (saves renew it)
_SAFE_ID = names.SAFE_CLUSTER_ID_RE  # ids that may go into a search expression as the cursor


def source_matches(settings: Settings, notification: SecretVersionAdded) -> bool:
    """Is the notified secret our source, and does a new version change what we read (`latest`)?

    Compares the secret id only: notifications name the project by number, configuration by id.
    """
    match = names.SOURCE_VERSION_RE.match(settings.of(PlatformSettings).version or "")
    if match is None:
        return False
    return notification.secret.rsplit("/", 1)[-1] == match.group(2) and match.group(3) == "latest"


class Held(TransientError):
    """Another delivery holds the fan-out (or a newer one waits for an older one to stop): redeliver later."""

    default_reason = "RotationHeld"


def _verified_newest(
    settings: Settings, notification: SecretVersionAdded, *, secret: PlatformSecret, deadline: Deadline
) -> str | None:
    """The notified version when it is our source's newest enabled version; None (logged) when not to act."""
    if not source_matches(settings, notification):
        log.info(
            f"version added to {notification.secret[:200]}, which is not PULL_SECRET_SOURCE (or the source pins a "
            "version); nothing to do",
            operation="rotation",
        )
        return None
    if not settings.adapter_topic:
        log.warning(
            "the platform pull secret has a new version but ADAPTER_TOPIC is not set: clusters are updated on "
            "Sentinel's next cycle only",
            operation="rotation",
        )
        return None
    version = settings.of(PlatformSettings).version
    assert version is not None  # source_matches
    newest = secret.newest_version(version, deadline)
    if newest is None or newest != notification.version:
        log.warning(
            f"rotation: the notification names {notification.version[:300] or 'no version'}, but the source's newest "
            f"enabled version is {newest or 'none'}; not acting on it",
            operation="rotation",
        )
        return None
    return newest


def _continues(recorded: Progress | None, nonce: str, *, source: str, number: int) -> bool:
    """A continuation may take part only with the nonce the record holds for this very fan-out."""
    return (
        recorded is not None
        and bool(recorded.nonce)
        # compare_digest takes ASCII text only (TypeError otherwise): a nonce anyone may publish is compared as bytes.
        and hmac.compare_digest(recorded.nonce.encode("utf-8", "replace"), nonce.encode("utf-8", "replace"))
        and (recorded.source, recorded.version) == (source, number)
    )


def _comparable(
    recorded: Progress | None, *, source: str, number: int, newest: str, secret: PlatformSecret, deadline: Deadline
) -> Progress | str | None:
    """The record as this notification may compare with it: None for another source, a done version 0 when the
    source was recreated, "outdated" when a newer version appeared meanwhile."""
    if recorded is not None and recorded.source != source:
        return None  # the record of another source (PULL_SECRET_SOURCE changed): start over
    if recorded is None or recorded.version <= number:
        return recorded
    if secret.newest_version(newest, deadline) != newest:
        # A newer version was added since we checked (its rotation recorded it): this one is outdated.
        log.info(f"rotation to {newest}: a newer version is being fanned out; nothing to do", operation="rotation")
        return "outdated"
    # `number` is the source's newest version, so the recorded one no longer exists: the source was deleted and
    # created again and numbers its versions from 1 again.
    log.warning(
        f"rotation: the record names version {recorded.version} of {source}, which is past its newest "
        f"({number}): the secret was recreated; starting over",
        operation="rotation",
    )
    recorded = dataclasses.replace(recorded, version=0, done=True)
    return recorded


def _claim(
    ledger: Ledger, recorded: Progress | None, fresh: Progress, *, me: str, now: float, lease: float
) -> Progress | None:
    """Become the holder (R1, R2); None when the record changed meanwhile (read it again); raises Held."""
    busy = recorded is not None and recorded.lease_until > now and recorded.holder != me
    if recorded is not None and recorded.version < fresh.version:
        # A newer version: record it at once (the older holder stops at its next save), publish only when the
        # older lease is free or over.
        start = dataclasses.replace(fresh, lease_until=recorded.lease_until if busy else 0.0)
        if not ledger.save(start):
            return None
        recorded = start
    if busy and recorded is not None:
        raise Held(
            f"rotation to version {fresh.version}: another delivery holds the fan-out for "
            f"{recorded.lease_until - now:.0f} s more; Pub/Sub redelivers this one",
            service="secretmanager",
        )
    claim = dataclasses.replace(recorded or fresh, holder=me, lease_until=now + lease, nonce="")
    return claim if ledger.save(claim) else None


def fan_out(
    settings: Settings,
    notification: SecretVersionAdded,
    *,
    hyperfleet: HyperFleetClient,
    store: SecretStore,
    secret: PlatformSecret,
    publisher: Publisher,
    deadline: Deadline,
    state_project: str | None = None,
    clock: Callable[[], float] = time.time,
) -> tuple[str, int]:
    """Handle one SECRET_VERSION_ADD (or its continuation); returns (result, events published).

    `store` keeps the progress record; `secret` is the source's own reads and cache (dropped here). Raises
    TransientError (the notification is redelivered and resumes from the saved progress), Held when another
    delivery holds the fan-out.
    """
    newest = _verified_newest(settings, notification, secret=secret, deadline=deadline)
    if newest is None:
        return "ignored", 0
    project = settings.secret_project_id or state_project
    if project is None:
        raise TransientError("rotation: no project for the progress record (set SECRET_PROJECT_ID)")
    secret.invalidate()
    source, number = names.secret_of(newest), names.version_number(newest)
    ledger = Ledger(
        store,
        name=names.secret_name(project, progress_secret_id(settings)),
        labels={"managed-by": "hyperfleet", "adapter": settings.adapter_name, "resource-type": "rotation-progress"},
        deadline=deadline,
    )
    me = uuid.uuid4().hex
    for _ in range(5):
        found = ledger.load()
        nonce = notification.continuation
        if nonce is not None and not _continues(found, nonce, source=source, number=number):
            log.warning(
                "rotation: a continuation message without the progress record's nonce; refused",
                operation="rotation",
            )
            return "refused", 0
        recorded = _comparable(found, source=source, number=number, newest=newest, secret=secret, deadline=deadline)
        if isinstance(recorded, str):
            return "ignored", 0
        if recorded is not None and recorded.version == number and recorded.done:
            log.info(f"rotation to {newest}: every cluster was already published", operation="rotation")
            return "done", 0
        claim = _claim(
            ledger,
            recorded,
            Progress(source, number),
            me=me,
            now=clock(),
            lease=settings.rotation_slice_s + LEASE_MARGIN_S,
        )
        if claim is None:
            continue
        log.info(
            f"rotation to {newest}: " + (f"resuming after {claim.after}" if claim.after else "starting"),
            operation="rotation",
        )
        return _publish_from(
            settings,
            notification,
            progress=claim,
            hyperfleet=hyperfleet,
            publisher=publisher,
            ledger=ledger,
            deadline=deadline,
            clock=clock,
        )
    raise TransientError("rotation progress: it kept changing", reason="WriteConflict", service="secretmanager")


def _publish_from(
    settings: Settings,
    notification: SecretVersionAdded,
    *,
    progress: Progress,
    hyperfleet: HyperFleetClient,
    publisher: Publisher,
    ledger: Ledger,
    deadline: Deadline,
    clock: Callable[[], float],
) -> tuple[str, int]:
    """Publish one event per cluster after `progress.after`, a page at a time, saving the place after each page;
    hands on (`continued`) when the slice or the lease is about to end."""
    topic = settings.adapter_topic
    assert topic is not None
    interval = 1.0 / settings.publish_rate()
    reserve = min(HAND_ON_RESERVE_S, settings.rotation_slice_s / 4)
    lease = settings.rotation_slice_s + LEASE_MARGIN_S
    published = 0
    next_at = time.monotonic()
    futures: list[Any] = []
    while True:
        search = f"id > '{progress.after}'" if progress.after else None
        with log.step("hyperfleet.list_clusters", after=progress.after):
            clusters, _total = hyperfleet.list_clusters(page=1, size=PAGE_SIZE, search=search, order="id asc")
        after = progress.after
        for cluster in clusters:
            if deadline.remaining() < reserve or clock() >= progress.lease_until:
                _flush(futures, deadline=deadline, after=progress.after)
                return _hand_on_after(
                    progress,
                    after=after,
                    published=published,
                    notification=notification,
                    topic=topic,
                    publisher=publisher,
                    ledger=ledger,
                    clock=clock,
                )
            cluster_id = _next_id(cluster, after)
            if cluster_id is None:
                continue  # not a cluster id we can page on, or one the API should not have listed again
            after = cluster_id
            if cluster.get("deleted_time"):
                continue
            next_at = _pace(next_at, interval)
            futures.append(publisher.publish(topic, sentinel_event(cluster)))
            published += 1
        _flush(futures, deadline=deadline, after=progress.after)
        last = len(clusters) < PAGE_SIZE
        reached = _reached(progress, after=after, last=last, lease_until=0.0 if last else clock() + lease)
        if not _save(ledger, reached, clock=clock):
            return "superseded", published
        progress = reached
        if last:
            break
    log.info(
        f"platform pull secret rotated (version {progress.version}): published {published} "
        f"reconcile event(s) to {topic} in this invocation",
        operation="rotation",
        published=published,
    )
    return "rotated", published


def _next_id(cluster: dict[str, Any], after: str) -> str | None:
    """The cluster's id when the keyset cursor may move to it: a safe id past `after`; else None."""
    cluster_id = cluster.get("id")
    if not isinstance(cluster_id, str) or not _SAFE_ID.match(cluster_id) or cluster_id <= after:
        return None
    return cluster_id


def _pace(next_at: float, interval: float) -> float:
    """Sleep until `next_at` (the publish rate); the time the next event may go out."""
    delay = next_at - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    return max(next_at, time.monotonic()) + interval


def _reached(progress: Progress, *, after: str, last: bool, lease_until: float) -> Progress:
    """The record once a page is published up to `after`: done and free after the last page, else held on."""
    return dataclasses.replace(
        progress, after=after, done=last, holder="" if last else progress.holder, lease_until=lease_until
    )


def _flush(futures: list[Any], *, deadline: Deadline, after: str) -> None:
    """Wait for every publish; on failure raise (the redelivery resumes after the last save)."""
    try:
        for future in futures:
            future.result(timeout=max(deadline.remaining(), 1.0))
    except Exception as exc:  # noqa: BLE001 - any publish failure means: let Pub/Sub redelivers
        raise TransientError(
            f"publishing reconcile events failed ({type(exc).__name__}); redelivery resumes after "
            f"{after or 'the start'}",
            reason="PublishFailed",
            service="pubsub",
        ) from None
    finally:
        futures.clear()


def _save(ledger: Ledger, at: Progress, *, clock: Callable[[], float]) -> bool:
    """Save `at`; False when a newer rotation took the record (then this fan-out stops: `superseded`)."""
    if ledger.save(at):
        return True
    theirs = ledger.load()
    if theirs is not None and (theirs.source, theirs.version) != (at.source, at.version):
        if theirs.lease_until > clock() and not theirs.holder:
            # The newer rotation waits for our lease: free it (best effort), so its redelivery goes at once.
            ledger.save(dataclasses.replace(theirs, lease_until=0.0))
        log.info(f"rotation to version {at.version}: a newer version took over; stopping", operation="rotation")
        return False
    raise Held(f"rotation to version {at.version}: another delivery took over the fan-out", service="secretmanager")


def _hand_on_after(
    progress: Progress,
    *,
    after: str,
    published: int,
    notification: SecretVersionAdded,
    topic: str,
    publisher: Publisher,
    ledger: Ledger,
    clock: Callable[[], float],
) -> tuple[str, int]:
    """Save the place (`after`) with a fresh nonce and publish the continuation that takes over from it."""
    nonce = secrets.token_urlsafe(24)
    here = dataclasses.replace(progress, after=after, holder="", lease_until=0.0, nonce=nonce)
    if not _save(ledger, here, clock=clock):
        return "superseded", published
    hand_on(publisher, topic=topic, notification=notification, nonce=nonce)
    log.info(
        f"rotation to version {progress.version}: handed on after {after or 'the start'} following "
        f"{published} event(s)",
        operation="rotation",
        published=published,
    )
    return "continued", published


def hand_on(publisher: Publisher, *, topic: str, notification: SecretVersionAdded, nonce: str) -> None:
    """Publish the notification again on ADAPTER_TOPIC with the record's nonce: its invocation takes over."""
    attributes = {
        "eventType": "SECRET_VERSION_ADD",
        "secretId": notification.secret,
        "versionId": notification.version,
        CONTINUATION: nonce,
    }
    data = json.dumps({"name": notification.secret}).encode("utf-8")
    try:
        publisher.publish_raw(topic, data, attributes).result(timeout=30.0)
    except Exception as exc:  # noqa: BLE001 - the place is saved: a redelivery resumes from it
        raise TransientError(
            f"handing the rotation on failed ({type(exc).__name__}); a redelivery resumes from the saved place",
            reason="PublishFailed",
            service="pubsub",
        ) from None
