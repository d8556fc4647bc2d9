"""Secret Manager: ensure the per-cluster secret, add a version only when the content changed, verify it.

Bookkeeping lives in the secret's annotations (Secret Manager annotation keys allow no '/'):

    hyperfleet-fingerprint   SHA-256 of the canonical content of the recorded version
    hyperfleet-generation    the cluster generation that wrote it
    hyperfleet-version       the version resource name holding it
    hyperfleet-claim         "<fingerprint>:<generation>:<unix time>" while a writer adds a version

The claim is taken with the secret's etag (compare-and-swap), so of many concurrent deliveries of
the same content exactly one adds a version; the others wait for its commit and find the content
unchanged. A claim older than `CLAIM_LEASE_S` is abandoned (its writer died) and may be taken over.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
from google.api_core import exceptions as gexc
from google.protobuf import field_mask_pb2

from pullsecret import lineage, retrying
from pullsecret.dockerconfig import PullSecret
from pullsecret.errors import AdapterError, TerminalError, TransientError, from_google, is_retryable_google
from pullsecret.retrying import Deadline

A_FINGERPRINT = "hyperfleet-fingerprint"
A_GENERATION = "hyperfleet-generation"
A_VERSION = "hyperfleet-version"
A_CLAIM = "hyperfleet-claim"
CLAIM_LEASE_S = 30.0
CHECKED_CACHE_MAX = 50_000
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
    lineage: dict[str, Any] = field(default_factory=dict)  # see pullsecret.lineage


@dataclass(frozen=True)
class Claim:
    fingerprint: str
    generation: int
    since: float

    def encode(self) -> str:
        return f"{self.fingerprint}:{self.generation}:{int(self.since)}"

    @staticmethod
    def decode(text: str | None) -> Claim | None:
        if not text:
            return None
        parts = text.split(":")
        if len(parts) != 3:
            return None
        try:
            return Claim(parts[0], int(parts[1]), float(parts[2]))
        except ValueError:
            return None

    def live(self, now: float) -> bool:
        return now - self.since < CLAIM_LEASE_S


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
        self._checked: dict[str, float] = {}  # version name -> monotonic time it was last seen ENABLED

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
        except (TerminalError, TransientError):
            raise
        except gexc.NotFound:
            raise
        except gexc.AlreadyExists:
            raise
        except gexc.FailedPrecondition:
            raise
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
    def store(
        self,
        *,
        project: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        labels: dict[str, str],
        deadline: Deadline,
        replace_version: str | None = None,
    ) -> StoreResult:
        """Ensure the secret and a version with `secret`'s content; raises Terminal/TransientError.

        `replace_version`: the recorded version is unusable (disabled or destroyed by hand), so equal
        content still gets a fresh version, unless another delivery already recorded a different one.
        """
        from google.cloud.secretmanager_v1 import types

        name = f"projects/{project}/secrets/{secret_id}"
        fingerprint = secret.fingerprint
        claimed_etag: str | None = None
        wait = 0.05
        while True:
            if deadline.expired():
                raise TransientError(
                    f"secret {secret_id}: another delivery is still writing this content",
                    reason="WriteInProgress",
                    service=SERVICE,
                )
            current = self._get_or_create(
                name=name,
                project=project,
                secret_id=secret_id,
                labels=labels,
                fingerprint=fingerprint,
                generation=generation,
                deadline=deadline,
            )
            if isinstance(current, tuple):  # we created it, with our claim in place
                current, claimed_etag = current[0], current[0].etag
            if current.labels.get("managed-by") != "hyperfleet":
                raise OwnershipConflict(
                    f"Secret Manager secret {secret_id} in project {project} exists without the label "
                    "managed-by=hyperfleet; refusing to adopt or overwrite it",
                    service=SERVICE,
                )
            annotations = dict(current.annotations)
            recorded_generation = _int(annotations.get(A_GENERATION))
            recorded_version = annotations.get(A_VERSION)
            recorded_lineage = lineage.decode(annotations.get(lineage.A_LINEAGE))
            if recorded_generation > generation:
                return StoreResult(
                    recorded_version or "",
                    written=False,
                    stale=True,
                    recorded_generation=recorded_generation,
                    lineage=recorded_lineage,
                )
            if (
                annotations.get(A_FINGERPRINT) == fingerprint
                and recorded_version
                and recorded_version != replace_version
            ):
                return StoreResult(
                    recorded_version,
                    written=False,
                    recorded_generation=recorded_generation,
                    lineage=recorded_lineage,
                )
            claim = Claim.decode(annotations.get(A_CLAIM))
            now = time.time()
            if claimed_etag is None and claim is not None and claim.live(now):
                if claim.generation > generation:
                    return StoreResult(
                        recorded_version or "",
                        written=False,
                        stale=True,
                        recorded_generation=claim.generation,
                    )
                # Someone else is writing (this content or an older generation's): wait for its commit.
                time.sleep(min(wait, deadline.remaining()))
                wait = min(wait * 2, 1.0)
                continue
            if claimed_etag is None:
                annotations[A_CLAIM] = Claim(fingerprint, generation, now).encode()
                try:
                    updated = self._call(
                        f"claim secret {secret_id}",
                        deadline,
                        self._client.update_secret,
                        secret=types.Secret(name=current.name, annotations=annotations, etag=current.etag),
                        update_mask=field_mask_pb2.FieldMask(paths=["annotations"]),
                    )
                except (gexc.FailedPrecondition, gexc.Aborted):
                    continue  # lost the race for the claim: re-read
                except gexc.NotFound:
                    continue  # deleted under us: create again
                claimed_etag = updated.etag
                annotations = dict(updated.annotations)
            try:
                return self._write_version(
                    secret_name=current.name,
                    secret_id=secret_id,
                    secret=secret,
                    generation=generation,
                    annotations=dict(annotations),
                    etag=claimed_etag,
                    deadline=deadline,
                )
            except AdapterError:
                # Let the next delivery write at once instead of waiting out the lease.
                self._release_claim(current.name, annotations, claimed_etag)
                raise

    def _get_or_create(
        self,
        *,
        name: str,
        project: str,
        secret_id: str,
        labels: dict[str, str],
        fingerprint: str,
        generation: int,
        deadline: Deadline,
    ) -> Any:
        from google.cloud.secretmanager_v1 import types

        try:
            return self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            pass
        except gexc.FailedPrecondition as exc:
            raise from_google(exc, service=SERVICE, what=f"get secret {secret_id}") from None
        claim = Claim(fingerprint, generation, time.time()).encode()
        try:
            created = self._call(
                f"create secret {secret_id}",
                deadline,
                self._client.create_secret,
                parent=f"projects/{project}",
                secret_id=secret_id,
                secret=types.Secret(replication=self._replication(), labels=labels, annotations={A_CLAIM: claim}),
            )
        except gexc.AlreadyExists:
            # A concurrent delivery created it first: that is success; read what it wrote.
            return self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            raise TerminalError(
                f"create secret {secret_id}: project {project} not found",
                reason="ProjectNotFound",
                service=SERVICE,
            ) from None
        except gexc.FailedPrecondition as exc:
            raise from_google(exc, service=SERVICE, what=f"create secret {secret_id}") from None
        return (created,)

    def _write_version(
        self,
        *,
        secret_name: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        annotations: dict[str, str],
        etag: str,
        deadline: Deadline,
    ) -> StoreResult:
        from google.cloud.secretmanager_v1 import types

        data = secret.canonical
        checksum = google_crc32c.value(data)
        try:
            version = self._call(
                f"add version to secret {secret_id}",
                deadline,
                self._client.add_secret_version,
                parent=secret_name,
                payload=types.SecretPayload(data=data, data_crc32c=checksum),
            )
        except (gexc.NotFound, gexc.FailedPrecondition) as exc:
            raise TransientError(f"add version to secret {secret_id}: {type(exc).__name__}", service=SERVICE) from None
        self.verify(version.name, data, deadline)
        self._remember_usable(version.name)
        annotations.pop(A_CLAIM, None)
        advanced = lineage.advance(
            lineage.decode(annotations.get(lineage.A_LINEAGE)),
            fingerprints=secret.registry_fingerprints(),
            version_name=version.name,
            previous_version=annotations.get(A_VERSION),
            now=int(time.time()),
        )
        encoded = lineage.encode(advanced)
        if encoded is None:
            annotations.pop(lineage.A_LINEAGE, None)
        else:
            annotations[lineage.A_LINEAGE] = encoded
        annotations.update({A_FINGERPRINT: secret.fingerprint, A_GENERATION: str(generation), A_VERSION: version.name})
        try:
            self._call(
                f"record version on secret {secret_id}",
                deadline,
                self._client.update_secret,
                secret=types.Secret(name=secret_name, annotations=annotations, etag=etag),
                update_mask=field_mask_pb2.FieldMask(paths=["annotations"]),
            )
        except (gexc.FailedPrecondition, gexc.Aborted, gexc.NotFound):
            # Our claim was taken over (lease expired) or the secret changed: the version exists and is
            # verified; the next delivery will find the record and settle it.
            raise TransientError(
                f"record version on secret {secret_id}: the secret changed while writing",
                reason="WriteInProgress",
                service=SERVICE,
            ) from None
        return StoreResult(
            version.name, written=True, recorded_generation=generation, lineage=advanced if encoded else {}
        )

    def _release_claim(self, secret_name: str, annotations: dict[str, str], etag: str) -> None:
        """Best effort: drop our claim; if this fails too, the lease (CLAIM_LEASE_S) frees it."""
        from google.cloud.secretmanager_v1 import types

        released = {k: v for k, v in annotations.items() if k != A_CLAIM}
        with contextlib.suppress(gexc.GoogleAPICallError):
            self._client.update_secret(
                secret=types.Secret(name=secret_name, annotations=released, etag=etag),
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

    # -- drift, retention and deletion ---------------------------------------------------------
    def version_usable(self, version_name: str, deadline: Deadline, *, max_age_s: float | None) -> bool:
        """True when the version is ENABLED (checked at most every `max_age_s` per process; None forces).

        Uses AccessSecretVersion (the 90,000/min access quota, not the 600/min read quota): a
        disabled or destroyed version answers FAILED_PRECONDITION, a missing one NOT_FOUND.
        Raises TransientError / TerminalError for other failures.
        """
        now = time.monotonic()
        checked = self._checked.get(version_name)
        if max_age_s is not None and checked is not None and now - checked < max_age_s:
            return True
        try:
            self._call(f"check {version_name}", deadline, self._client.access_secret_version, name=version_name)
        except (gexc.NotFound, gexc.FailedPrecondition):
            self._checked.pop(version_name, None)
            return False
        self._remember_usable(version_name)
        return True

    def _remember_usable(self, version_name: str) -> None:
        if len(self._checked) >= CHECKED_CACHE_MAX:
            self._checked.clear()  # crude bound; a cleared entry costs one extra read, never a wrong answer
        self._checked[version_name] = time.monotonic()

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
        versions = list(pager)
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
            self._checked.pop(version.name, None)
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
            except (gexc.FailedPrecondition, gexc.Aborted):
                continue  # changed since we read it (etag): read again and decide again
            self._checked.clear()
            return "deleted"
        raise TransientError(
            f"delete secret {secret_id}: it kept changing while deleting", reason="WriteConflict", service=SERVICE
        )

    def _disable_all(self, secret_name: str, secret_id: str, deadline: Deadline) -> str:
        from google.cloud.secretmanager_v1 import types

        pager = self._call(
            f"list versions of secret {secret_id}",
            deadline,
            self._client.list_secret_versions,
            request=types.ListSecretVersionsRequest(parent=secret_name, filter="state:ENABLED", page_size=100),
        )
        count = 0
        for version in list(pager):
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
            self._checked.pop(version.name, None)
            count += 1
        return f"disabled {count} version(s)" if count else "all versions disabled"

    def describe(self, *, project: str, secret_id: str, deadline: Deadline) -> dict[str, Any] | None:
        """Metadata of the cluster's secret and its versions, never a payload (for `inspect`)."""
        name = f"projects/{project}/secrets/{secret_id}"
        try:
            secret = self._call(f"get secret {secret_id}", deadline, self._client.get_secret, name=name)
        except gexc.NotFound:
            return None
        pager = self._call(
            f"list versions of secret {secret_id}", deadline, self._client.list_secret_versions, parent=name
        )
        versions = sorted(pager, key=lambda v: _int(v.name.rsplit("/", 1)[-1]), reverse=True)
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
