"""Secret Manager: the per-cluster secret's newest version holds the cluster's pull secret, written only on change.

Steady state reads the newest version's content with AccessSecretVersion (the 90,000/min access quota, not
the 600/min read quota) and compares bytes: equal content costs that one call, and a newest version that
was disabled or destroyed by hand shows up at once (FAILED_PRECONDITION) and gets a fresh version.

A write is claimed before it is made. The claim is the secret's annotations, set with the secret's etag
(compare-and-swap) or by CreateSecret itself:

    hyperfleet-fingerprint   SHA-256 of the canonical content being written
    hyperfleet-generation    the cluster generation writing it (older generations never write over it)
    hyperfleet-claimed-version  the version resource name the write produces (was `hyperfleet-version`, which
                             is also a label with another meaning; a claim drops the old key)
    hyperfleet-claimed-at    unix seconds of the claim (a claim is live for CLAIM_LEASE_S)
    hyperfleet-lineage       per-registry fingerprints and since-when (pullsecret.lineage)

Of many concurrent deliveries of the same content exactly one wins the claim and adds the version (two
writes in all); the others see a live claim and wait until the version it names exists.
A claim whose version never appears within `CLAIM_LEASE_S` was abandoned (its writer died) and may be
taken over.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
from google.api_core import exceptions as gexc
from google.protobuf import field_mask_pb2

from pullsecret import lineage, retrying
from pullsecret.dockerconfig import PullSecret
from pullsecret.errors import (
    AdapterError,
    TerminalError,
    TransientError,
    from_google,
    is_retryable_google,
    mapped_pages,
)
from pullsecret.retrying import Deadline

A_FINGERPRINT = "hyperfleet-fingerprint"
A_GENERATION = "hyperfleet-generation"
A_VERSION = "hyperfleet-claimed-version"
_LEGACY_A_VERSION = "hyperfleet-version"  # the annotation's former name; the label of that name stays "v1"
A_CLAIM = "hyperfleet-claimed-at"  # unix seconds when the write was claimed
CLAIM_LEASE_S = 30.0
SERVICE = "secretmanager"

_LABEL_VALUE_BAD = re.compile(r"[^a-z0-9_-]")


class OwnershipConflict(TerminalError):
    default_reason = "OwnershipConflict"


def label_value(value: str) -> str:
    """Sanitise to Secret Manager's label value rule: [a-z0-9_-]{0,63}."""
    return _LABEL_VALUE_BAD.sub("-", value.lower())[:63]


def secret_labels(*, adapter: str, cluster_id: str, cluster_name: str) -> dict[str, str]:
    return {
        "managed-by": "hyperfleet",
        "adapter": label_value(adapter),
        "cluster-id": label_value(cluster_id),
        "cluster-name": label_value(cluster_name),
        "resource-type": "pull-secret",
        "hyperfleet-version": "v1",
    }


@dataclass(frozen=True)
class StoreResult:
    version_name: str  # the version holding the content (projects/NUMBER/secrets/ID/versions/N)
    written: bool  # a new version was added by this call
    stale: bool = False  # a newer generation is recorded; nothing was written
    recorded_generation: int = 0
    lineage: dict[str, Any] = field(default_factory=dict)  # see pullsecret.lineage; set when written
    repaired: bool = False  # the newest version had been disabled or destroyed by hand
    verify: Callable[[], None] | None = field(default=None, repr=False)  # read-back of a new version


@dataclass(frozen=True)
class Latest:
    """The newest version: its resolved name and content when ENABLED."""

    name: str | None
    data: bytes | None = field(repr=False)
    state: str  # "enabled" | "unusable" (disabled/destroyed) | "missing" (no secret or no versions)


@dataclass(frozen=True)
class _Claimed:
    """This writer holds the claim recorded on the secret (etag after the claim)."""

    secret_name: str
    etag: str
    annotations: dict[str, str]
    version_id: str  # the version number AddSecretVersion is expected to give
    repaired: bool


@dataclass(frozen=True)
class _Wait:
    """Another delivery holds a live claim: wait for its version (its record's lineage is the one to carry)."""

    lineage: dict[str, Any]


class _Exists:
    """CreateSecret found the secret already there (without versions, or created concurrently)."""


_EXISTS = _Exists()


def _record(
    secret: PullSecret, generation: int, now: float, advanced: dict[str, Any], version_name: str
) -> dict[str, str]:
    """The annotations a write records, in the same call that claims it (`version_name`: what it will produce)."""
    record = {
        A_FINGERPRINT: secret.fingerprint,
        A_GENERATION: str(generation),
        A_VERSION: version_name,
        A_CLAIM: str(int(now)),
    }
    encoded = lineage.encode(advanced)
    if encoded is not None:
        record[lineage.A_LINEAGE] = encoded
    return record


def _claim_live(text: str | None, now: float) -> bool:
    """A claim younger than the lease: its writer may still be adding the version."""
    try:
        return text is not None and now - float(text) < CLAIM_LEASE_S
    except ValueError:
        return False


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


class SecretStore:
    """Per-cluster secrets and the platform source, through one shared SecretManagerServiceClient."""

    def __init__(
        self,
        client: Any,
        *,
        replication_locations: tuple[str, ...] = (),
        kms_key: str | None = None,
        source_ttl_s: float = 30.0,
    ) -> None:
        self._client = client
        self._locations = replication_locations
        self._kms_key = kms_key
        self._source_ttl_s = source_ttl_s
        self._source_cache: dict[str, tuple[float, bytes]] = {}

    # -- plumbing ------------------------------------------------------------------------------
    def _call(self, what: str, deadline: Deadline, fn: Any, **kwargs: Any) -> Any:
        def attempt() -> Any:
            return fn(**kwargs, retry=None, timeout=max(min(deadline.remaining(), 20.0), 0.5))

        try:
            return retrying.call(
                attempt,
                predicate=is_retryable_google,
                deadline=deadline,
                on_give_up=lambda cause: from_google(cause, service=SERVICE, what=what),
            )
        except (TerminalError, TransientError, gexc.NotFound, gexc.AlreadyExists, gexc.FailedPrecondition):
            raise  # the outcomes callers branch on (a missing secret, a lost create race, an etag mismatch)
        except gexc.GoogleAPICallError as exc:
            raise from_google(exc, service=SERVICE, what=what) from None

    def _replication(self) -> Any:
        from google.cloud.secretmanager_v1 import types

        def cmek(location: str | None) -> Any:
            if not self._kms_key:
                return None
            key = self._kms_key.replace("{location}", location or "global")
            return types.CustomerManagedEncryption(kms_key_name=key)

        if self._locations:
            replicas = [
                types.Replication.UserManaged.Replica(location=loc, customer_managed_encryption=cmek(loc))
                for loc in self._locations
            ]
            return types.Replication(user_managed=types.Replication.UserManaged(replicas=replicas))
        return types.Replication(automatic=types.Replication.Automatic(customer_managed_encryption=cmek(None)))

    # -- the platform source -------------------------------------------------------------------
    def read_source(self, version_name: str, deadline: Deadline) -> bytes:
        """The platform pull secret's bytes (cached for a short TTL); raises Terminal/TransientError."""
        now = time.monotonic()
        cached = self._source_cache.get(version_name)
        if cached is not None and now - cached[0] < self._source_ttl_s:
            return cached[1]
        what = f"read PULL_SECRET_SOURCE {version_name}"
        try:
            response = self._call(what, deadline, self._client.access_secret_version, name=version_name)
        except gexc.NotFound:
            raise TerminalError(f"{what}: not found", reason="SourceNotFound", service=SERVICE) from None
        except gexc.FailedPrecondition:
            raise TerminalError(
                f"{what}: the version is disabled or destroyed", reason="SourceUnavailable", service=SERVICE
            ) from None
        data = bytes(response.payload.data)
        if response.payload.data_crc32c and google_crc32c.value(data) != response.payload.data_crc32c:
            raise TransientError(f"{what}: checksum mismatch in transit", reason="DataCorrupted", service=SERVICE)
        self._source_cache[version_name] = (now, data)
        return data

    def invalidate_source(self) -> None:
        self._source_cache.clear()

    # -- the per-cluster secret ----------------------------------------------------------------
    def latest(self, secret_name: str, deadline: Deadline) -> Latest:
        """The newest version's content (AccessSecretVersion: the 90,000/min access quota, not the read quota)."""
        what = f"read {secret_name}/versions/latest"
        try:
            response = self._call(
                what, deadline, self._client.access_secret_version, name=f"{secret_name}/versions/latest"
            )
        except gexc.NotFound:
            return Latest(None, None, "missing")  # no secret, or a secret without versions
        except gexc.FailedPrecondition:
            return Latest(None, None, "unusable")  # disabled or destroyed (by hand): drift to repair
        data = bytes(response.payload.data)
        if response.payload.data_crc32c and google_crc32c.value(data) != response.payload.data_crc32c:
            raise TransientError(f"{what}: checksum mismatch in transit", reason="DataCorrupted", service=SERVICE)
        return Latest(str(response.name), data, "enabled")

    def store(
        self,
        *,
        project: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        labels: dict[str, str],
        deadline: Deadline,
        latest: Latest | None = None,
    ) -> StoreResult:
        """Ensure the secret's newest version holds `secret`; raises OwnershipConflict / Terminal/TransientError.

        `latest`: the newest version as already read (`self.latest`), so callers can overlap that read
        with others and still make no write before every read succeeded.

        Unchanged content costs one AccessSecretVersion. A change costs GetSecret, one claim (the etag-guarded
        annotation update, or the CreateSecret itself) and AddSecretVersion: two writes. The returned
        `verify` reads the new version back; the caller runs it beside the Kubernetes apply.
        """
        name = f"projects/{project}/secrets/{secret_id}"
        wait = 0.05
        exists = False
        carried: dict[str, Any] = {}
        while True:
            if deadline.expired():
                raise TransientError(
                    f"secret {secret_id}: another delivery is still writing this content",
                    reason="WriteInProgress",
                    service=SERVICE,
                )
            if latest is None:
                latest = self.latest(name, deadline)
            if latest.data == secret.canonical and latest.name:
                # A delivery that raced another's write carries that write's lineage, so that both
                # describe the Kubernetes Secret identically (one write there, not two).
                if exists and not carried:
                    carried = self.recorded_lineage(name, secret_id, deadline)
                return StoreResult(latest.name, written=False, lineage=carried)
            claimed = self._claim(
                name=name,
                project=project,
                secret_id=secret_id,
                secret=secret,
                generation=generation,
                labels=labels,
                latest=latest,
                deadline=deadline,
                created_before=exists,
            )
            latest = None  # read again on the next round
            if isinstance(claimed, _Exists):
                exists = True
                continue
            if isinstance(claimed, StoreResult):
                return claimed  # stale: a newer generation is recorded
            if isinstance(claimed, _Wait):
                carried = claimed.lineage or carried
                time.sleep(min(wait, deadline.remaining()))  # another writer holds a live claim
                wait = min(wait * 2, 1.0)
                continue
            try:
                return self._add_version(claimed, secret=secret, secret_id=secret_id, deadline=deadline)
            except AdapterError:
                # Let the next delivery write at once instead of waiting out the lease.
                self._release_claim(claimed)
                raise

    def _claim(
        self,
        *,
        name: str,
        project: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        labels: dict[str, str],
        latest: Latest,
        deadline: Deadline,
        created_before: bool = False,
    ) -> _Claimed | StoreResult | _Exists | _Wait:
        """Take the write claim: a _Claimed, a stale StoreResult, None (someone else is writing: wait) or _EXISTS."""
        from google.cloud.secretmanager_v1 import types

        now = time.time()
        fingerprints = secret.registry_fingerprints()
        current: Any = None
        # A missing newest version usually means a missing secret: try to create it first (one round trip
        # fewer on first provisioning); AlreadyExists (a secret without versions, or a race) reads it.
        if latest.state != "missing" or created_before:
            try:
                current = self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
            except gexc.NotFound:
                current = None
            except gexc.FailedPrecondition as exc:
                raise from_google(exc, service=SERVICE, what=f"get secret {secret_id}") from None
        if current is None:
            advanced = lineage.advance(
                {}, fingerprints=fingerprints, version_name="1", previous_version=None, now=int(now)
            )
            record = _record(secret, generation, now, advanced, f"{name}/versions/1")
            try:
                created = self._call(
                    f"create secret {secret_id}",
                    deadline,
                    self._client.create_secret,
                    parent=f"projects/{project}",
                    secret_id=secret_id,
                    secret=types.Secret(replication=self._replication(), labels=labels, annotations=record),
                )
            except gexc.AlreadyExists:
                return _EXISTS  # it exists (without versions, or created concurrently): read it
            except gexc.NotFound:
                raise TerminalError(
                    f"create secret {secret_id}: project {project} not found", reason="ProjectNotFound", service=SERVICE
                ) from None
            except gexc.FailedPrecondition as exc:
                raise from_google(exc, service=SERVICE, what=f"create secret {secret_id}") from None
            return _Claimed(created.name, created.etag, dict(created.annotations), "1", repaired=False)

        if current.labels.get("managed-by") != "hyperfleet":
            raise OwnershipConflict(
                f"Secret Manager secret {secret_id} in project {project} exists without the label "
                "managed-by=hyperfleet; refusing to adopt or overwrite it",
                service=SERVICE,
            )
        annotations = dict(current.annotations)
        recorded_generation = _int(annotations.get(A_GENERATION))
        if recorded_generation > generation:
            return StoreResult(
                latest.name or annotations.get(A_VERSION, ""),
                written=False,
                stale=True,
                recorded_generation=recorded_generation,
            )
        newest = self._newest_version_id(name, latest, deadline)
        if _claim_live(annotations.get(A_CLAIM), now):
            # The record names the version its write produces: once that number exists, the write is done.
            # (Its generation was checked above: an older claim than ours is never waited for as newer.)
            expected = lineage.version_id(annotations.get(A_VERSION))
            finished = newest is not None and expected.isdigit() and newest >= int(expected)
            if not finished:
                return _Wait(lineage.decode(annotations.get(lineage.A_LINEAGE)))
        next_id = str((newest or 0) + 1)
        previous = lineage.decode(annotations.get(lineage.A_LINEAGE))
        advanced = lineage.advance(
            previous,
            fingerprints=fingerprints,
            version_name=next_id,
            previous_version=latest.name or annotations.get(A_VERSION),
            now=int(now),
        )
        annotations.pop(_LEGACY_A_VERSION, None)
        annotations.update(_record(secret, generation, now, advanced, f"{current.name}/versions/{next_id}"))
        try:
            updated = self._call(
                f"claim secret {secret_id}",
                deadline,
                self._client.update_secret,
                secret=types.Secret(name=current.name, annotations=annotations, etag=current.etag),
                update_mask=field_mask_pb2.FieldMask(paths=["annotations"]),
            )
        except (gexc.FailedPrecondition, gexc.NotFound):
            return _Wait({})  # lost the race for the claim (or deleted under us): read again
        return _Claimed(
            updated.name, updated.etag, dict(updated.annotations), next_id, repaired=latest.state == "unusable"
        )

    def recorded_lineage(self, name: str, secret_id: str, deadline: Deadline) -> dict[str, Any]:
        """The lineage recorded on the secret ({} when none); one GetSecret (read quota), so only off steady state."""
        try:
            current = self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
        except (gexc.NotFound, gexc.FailedPrecondition):
            return {}
        return lineage.decode(dict(current.annotations).get(lineage.A_LINEAGE))

    def _newest_version_id(self, name: str, latest: Latest, deadline: Deadline) -> int | None:
        """The newest version's number, whatever its state; None when the secret has no versions."""
        if latest.name:
            return int(lineage.version_id(latest.name))
        if latest.state == "missing":
            return None
        try:  # the newest version is disabled or destroyed: its metadata still carries the number
            newest = self._call(
                f"get {name}/versions/latest", deadline, self._client.get_secret_version, name=f"{name}/versions/latest"
            )
        except (gexc.NotFound, gexc.FailedPrecondition):
            return None
        return int(lineage.version_id(str(newest.name)))

    def _add_version(self, claimed: _Claimed, *, secret: PullSecret, secret_id: str, deadline: Deadline) -> StoreResult:
        from google.cloud.secretmanager_v1 import types

        data = secret.canonical
        try:
            version = self._call(
                f"add version to secret {secret_id}",
                deadline,
                self._client.add_secret_version,
                parent=claimed.secret_name,
                payload=types.SecretPayload(data=data, data_crc32c=google_crc32c.value(data)),
            )
        except (gexc.NotFound, gexc.FailedPrecondition) as exc:
            raise TransientError(f"add version to secret {secret_id}: {type(exc).__name__}", service=SERVICE) from None
        recorded = lineage.decode(claimed.annotations.get(lineage.A_LINEAGE))
        actual_id = lineage.version_id(version.name)
        if actual_id != claimed.version_id:
            # Someone added a version by hand between our claim and our add: correct the record.
            recorded = self._correct_record(claimed, version.name, recorded, deadline)
        version_name = str(version.name)
        return StoreResult(
            version_name,
            written=True,
            recorded_generation=_int(claimed.annotations.get(A_GENERATION)),
            lineage=recorded,
            repaired=claimed.repaired,
            verify=lambda: self.verify(version_name, data, deadline),
        )

    def _correct_record(
        self, claimed: _Claimed, version_name: str, recorded: dict[str, Any], deadline: Deadline
    ) -> dict[str, Any]:
        from google.cloud.secretmanager_v1 import types

        actual = lineage.version_id(version_name)
        registries = recorded.get("registries") if isinstance(recorded.get("registries"), dict) else {}
        assert isinstance(registries, dict)
        for value in registries.values():
            if isinstance(value, list) and len(value) == 3 and value[1] == claimed.version_id:
                value[1] = actual
        recorded["version"] = actual
        annotations = dict(claimed.annotations)
        annotations[A_VERSION] = version_name
        encoded = lineage.encode(recorded)
        if encoded is not None:
            annotations[lineage.A_LINEAGE] = encoded
        with contextlib.suppress(gexc.GoogleAPICallError, AdapterError):
            self._call(
                f"correct the record on {claimed.secret_name}",
                deadline,
                self._client.update_secret,
                secret=types.Secret(name=claimed.secret_name, annotations=annotations, etag=claimed.etag),
                update_mask=field_mask_pb2.FieldMask(paths=["annotations"]),
            )
        return recorded

    def _release_claim(self, claimed: _Claimed) -> None:
        """Best effort: drop our claim; if this fails too, the lease (CLAIM_LEASE_S) frees it."""
        from google.cloud.secretmanager_v1 import types

        released = {k: v for k, v in claimed.annotations.items() if k != A_CLAIM}
        with contextlib.suppress(gexc.GoogleAPICallError):
            self._client.update_secret(
                secret=types.Secret(name=claimed.secret_name, annotations=released, etag=claimed.etag),
                update_mask=field_mask_pb2.FieldMask(paths=["annotations"]),
                retry=None,
                timeout=2.0,
            )

    def verify(self, version_name: str, expected: bytes, deadline: Deadline) -> None:
        """Read the version back and compare bytes and checksum; raises TransientError on mismatch."""
        what = f"verify {version_name}"
        try:
            response = self._call(what, deadline, self._client.access_secret_version, name=version_name)
        except (gexc.NotFound, gexc.FailedPrecondition) as exc:
            raise TransientError(
                f"{what}: {type(exc).__name__}", reason="VerificationFailed", service=SERVICE
            ) from None
        data = bytes(response.payload.data)
        if data != expected or (
            response.payload.data_crc32c and response.payload.data_crc32c != google_crc32c.value(data)
        ):
            raise TransientError(
                f"{what}: the stored bytes differ from what was written",
                reason="VerificationFailed",
                service=SERVICE,
            )

    # -- retention and deletion ----------------------------------------------------------------
    def apply_retention(
        self, secret_name: str, *, keep: int, protected: set[str], deadline: Deadline
    ) -> RetentionResult:
        """Destroy versions older than the newest `keep` enabled ones, never one in `protected`.

        With a `version_destroy_ttl` on the secret the service only schedules destruction (the version
        is disabled until then); versions already scheduled are left alone. Raises TransientError /
        TerminalError when listing fails; a single destroy that fails is skipped (the next write retries).
        """
        from google.cloud.secretmanager_v1 import types

        what = f"list versions of {secret_name}"
        pager = self._call(
            what,
            deadline,
            self._client.list_secret_versions,
            request=types.ListSecretVersionsRequest(parent=secret_name, page_size=100),
        )
        versions = list(mapped_pages(pager, service=SERVICE, what=what))
        # Newest first, whatever order the answer had (version ids are increasing integers).
        versions.sort(key=lambda v: _int(v.name.rsplit("/", 1)[-1]), reverse=True)
        enabled = types.SecretVersion.State.ENABLED
        destroyed_state = types.SecretVersion.State.DESTROYED
        protected_ids = {p.rsplit("/", 1)[-1] for p in protected if p}
        kept = 0
        destroyed: list[str] = []
        for version in versions:
            number = version.name.rsplit("/", 1)[-1]
            if version.state == destroyed_state or _has_schedule(version):
                continue
            if number in protected_ids:
                kept += version.state == enabled
                continue
            if kept < keep:
                # Inside the window: keep enabled versions; leave disabled ones (someone disabled them on
                # purpose, and they are not older than what we keep).
                kept += version.state == enabled
                continue
            try:
                self._call(
                    f"destroy {version.name}",
                    deadline,
                    self._client.destroy_secret_version,
                    request=types.DestroySecretVersionRequest(name=version.name, etag=version.etag),
                )
            except (gexc.FailedPrecondition, gexc.NotFound):
                continue  # changed or destroyed concurrently
            except (TransientError, TerminalError):
                continue
            destroyed.append(number)
        return RetentionResult(kept=kept, destroyed=tuple(destroyed))

    def delete_secret(self, *, project: str, secret_id: str, policy: str, deadline: Deadline) -> str:
        """Apply the deletion policy to the cluster's secret; returns what happened (for the status).

        DELETE: delete with the secret's etag, only if labelled managed-by=hyperfleet. DISABLE: disable
        every enabled version. RETAIN: touch nothing. Raises OwnershipConflict (foreign secret, DELETE or
        DISABLE), TransientError, TerminalError.
        """
        from google.cloud.secretmanager_v1 import types

        name = f"projects/{project}/secrets/{secret_id}"
        if policy == "RETAIN":
            return "retained"
        for _ in range(5):
            try:
                current = self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
            except gexc.NotFound:
                return "absent"
            except gexc.FailedPrecondition as exc:
                raise from_google(exc, service=SERVICE, what=f"get secret {secret_id}") from None
            if current.labels.get("managed-by") != "hyperfleet":
                raise OwnershipConflict(
                    f"Secret Manager secret {secret_id} in project {project} is not labelled managed-by=hyperfleet; "
                    "not deleting or disabling it",
                    service=SERVICE,
                )
            if policy == "DISABLE":
                return self._disable_all(current.name, secret_id, deadline)
            try:
                self._call(
                    f"delete secret {secret_id}",
                    deadline,
                    self._client.delete_secret,
                    request=types.DeleteSecretRequest(name=current.name, etag=current.etag),
                )
            except gexc.NotFound:
                return "absent"
            except gexc.FailedPrecondition:
                continue  # changed since we read it (etag): read again and decide again
            return "deleted"
        raise TransientError(
            f"delete secret {secret_id}: it kept changing while deleting", reason="WriteConflict", service=SERVICE
        )

    def _disable_all(self, secret_name: str, secret_id: str, deadline: Deadline) -> str:
        from google.cloud.secretmanager_v1 import types

        what = f"list versions of secret {secret_id}"
        pager = self._call(
            what,
            deadline,
            self._client.list_secret_versions,
            request=types.ListSecretVersionsRequest(parent=secret_name, filter="state:ENABLED", page_size=100),
        )
        count = 0
        for version in list(mapped_pages(pager, service=SERVICE, what=what)):
            try:
                self._call(
                    f"disable {version.name}",
                    deadline,
                    self._client.disable_secret_version,
                    request=types.DisableSecretVersionRequest(name=version.name, etag=version.etag),
                )
            except (gexc.FailedPrecondition, gexc.NotFound):
                raise TransientError(
                    f"disable {version.name}: it changed while disabling", reason="WriteConflict", service=SERVICE
                ) from None
            count += 1
        return f"disabled {count} version(s)" if count else "all versions disabled"

    def describe(self, *, project: str, secret_id: str, deadline: Deadline) -> dict[str, Any] | None:
        """Metadata of the cluster's secret and its versions, never a payload (for `inspect`)."""
        name = f"projects/{project}/secrets/{secret_id}"
        try:
            secret = self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            return None
        what = f"list versions of secret {secret_id}"
        pager = self._call(what, deadline, self._client.list_secret_versions, parent=name)
        versions = sorted(
            mapped_pages(pager, service=SERVICE, what=what), key=lambda v: _int(v.name.rsplit("/", 1)[-1]), reverse=True
        )
        return {
            "name": secret.name,
            "labels": dict(secret.labels),
            "annotations": {k: v for k, v in secret.annotations.items() if k != A_CLAIM},
            "versions": [
                {
                    "name": v.name,
                    "state": v.state.name,
                    "create_time": _iso(v.create_time),
                }
                for v in versions
            ],
        }


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return str(value.isoformat())
    except AttributeError:
        return str(value)


def _has_schedule(version: Any) -> bool:
    try:
        return "scheduled_destroy_time" in version and bool(version.scheduled_destroy_time)
    except TypeError:
        return bool(getattr(version, "scheduled_destroy_time", None))


@dataclass(frozen=True)
class RetentionResult:
    kept: int
    destroyed: tuple[str, ...]  # version ids destroyed (or scheduled for destruction) by this call
