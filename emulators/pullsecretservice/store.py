"""The Pull Secret Service's state: per-cluster credential sets, their rotations, and their life at the registry.

Rules kept here, each with its source in the design record (openshift-hyperfleet/architecture
`hyperfleet/docs/pull-secret-service-ddr.md`, commit 53cd706, "Last Updated 2026-03-25"; "DDR §n" below), or
marked "assumed" where the DDR is silent (emulators/contracts/pull-secret-service.md lists every assumption):

- Generate is generate-or-retrieve: a registry's existing credential is reused, a missing one is minted
  (§3.2.1 "Idempotent operation", §3.3.1 "Idempotent Retry"). All or nothing: when a registry's API fails, the
  call fails and the credentials minted before it stay, to be reused by the retry (§3.3.1, §1.4 Principle 1 Ex. 3).
- Generate during a rotation is a conflict, HYPERFLEET-CNF-001 (§3.2.1 "Response 409").
- Names: Quay robot `redhat-openshift+hyperfleet_{provider}_{region}_{uuid}` (§1.4 Principle 5 "Naming:
  hyperfleet_provider_region_uuid", org `redhat-openshift` §2.3.6, example username §3.2.1), the region without
  its dashes as in the example (`us-east1` -> `useast1`); RHIT partner SA `|hyp-cls-{id}` (§1.4 Principle 5
  "Format: PIPE + name", "Naming: hyp-cls-id"; example `|hyp-cls-abc123def456` for cluster `cls-abc123def456`, so a
  leading `cls-` of the cluster id is not repeated). A rotation's second RHIT name gets `-r{n}` (assumed: the DDR
  does not say how two live partner SAs of one cluster are named).
- Rotation (§3.2.3 lifecycle): created `pending`; the reconciler (§2.2, every 5 minutes; here at once, assumed)
  marks the current set "rotating", mints a new set and moves to `in_progress` (the dual-credential period: both
  sets valid, §3.2.3 "What is the Dual Credential Period?", Appendix A). The pull secret served is the new set
  (§3.2.3 timeline T3 "Adapter retrieves new credentials"). Completion (the cluster's confirmation, §3.2.3
  Phases 4-6) deletes the old set at the registry and marks the rotation `completed`. A second rotation while one
  is pending or in progress is HYPERFLEET-CNF-002 (§3.2.3 "Response 409"). `force_immediate` (§3.2.3 request)
  skips the dual period (assumed semantics: the old set is deleted at once).
- Delete revokes every credential of the cluster at the registry, cancels pending/in-progress rotations (status
  `cancelled`) and answers 204 also when nothing exists (§3.2.6 "Behavior", "Idempotency"). While a rotation is in
  progress the DDR's default is to cancel and proceed (§3.2.6 "Conflict Resolution Strategy" 1); its alternative,
  409 HYPERFLEET-CNF-002 with `retry_after_seconds` 300, is `delete_during_rotation="conflict"`.

Invariant: the registry accepts exactly the live credentials (active and, during a dual period, rotating) the
store holds: every credential is added to the registry when minted and removed when deleted, under the store's
lock. Tokens never leave this module except inside a pull secret; `state()` and every repr omit them.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

PROVIDERS = ("gcp", "aws", "azure")  # §3.2.1 400 example: "Must be one of: gcp, aws, azure"
REGISTRY_IDS = ("quay", "rhit")  # §3.6 GeneratePullSecretRequest.registries enum, default [quay, rhit]
REASONS = ("scheduled", "compromise", "manual")  # §3.2.3 "Reason Values"
ROTATION_STATUSES = ("pending", "in_progress", "completed", "failed")  # §3.2.4 "Rotation Status Values"
OPEN_ROTATION = ("pending", "in_progress")
QUAY_ORG = "redhat-openshift"  # §2.3.6 registries.quay.org_name
ESTIMATED_ROTATION = timedelta(days=7)  # assumed from the §3.2.3/§3.2.4 examples (created + 7 days)
DELETE_RETRY_AFTER_S = 300  # §3.2.6 409 example


class RegistryAccounts(Protocol):
    """The registry side of a credential: accepted from mint to deletion (emulators.registry.RegistryEmulator)."""

    def add_account(self, user: str, password: str) -> None: ...

    def remove_account(self, user: str) -> None: ...


class ServiceError(Exception):
    """An answer other than success: its status, problem type slug, title, HyperFleet code and extensions."""

    def __init__(
        self, status: int, code: str, detail: str, *, slug: str, title: str, extensions: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.slug = slug
        self.title = title
        self.extensions = extensions or {}


def not_found(detail: str, **extensions: Any) -> ServiceError:
    # §3.2.2 "Response 404 Not Found"
    return ServiceError(
        404, "HYPERFLEET-NTF-001", detail, slug="resource-not-found", title="Resource Not Found", extensions=extensions
    )


def conflict(code: str, detail: str, **extensions: Any) -> ServiceError:
    # §3.2.1, §3.2.3 and §3.2.6 "409 Conflict"
    return ServiceError(409, code, detail, slug="resource-conflict", title="Resource Conflict", extensions=extensions)


def invalid(field_name: str, value: Any, constraint: str, message: str) -> ServiceError:
    # §3.2.1 "Response 400 Bad Request": code HYPERFLEET-VAL-001 and one `errors` entry per field
    entry = {"field": field_name, "value": value, "constraint": constraint, "message": message}
    return ServiceError(
        400,
        "HYPERFLEET-VAL-001",
        f"Invalid {field_name}: {message}",
        slug="validation-error",
        title="Validation Error",
        extensions={"errors": [entry]},
    )


def now_rfc3339(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Credential:
    """One registry credential of a cluster (§5.1 REGISTRY_CREDENTIALS); `token` is never printed."""

    registry_id: str
    username: str
    token: str = field(repr=False)
    created_at: str

    def public(self) -> dict[str, Any]:
        # §3.2.1 response `credentials[]`
        return {
            "registry_id": self.registry_id,
            "username": self.username,
            "created_at": self.created_at,
            "expires_at": None,
        }


@dataclass
class Rotation:
    """One rotation (§5.1 PULL_SECRET_ROTATIONS, §3.2.3/§3.2.4 shapes)."""

    rotation_id: str
    cluster_id: str
    reason: str
    force_immediate: bool
    created: datetime
    status: str = "pending"
    started_at: str | None = None
    completed_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rotation_id": self.rotation_id,
            "cluster_id": self.cluster_id,
            "status": self.status,
            "reason": self.reason,
            "force_immediate": self.force_immediate,
            "created_at": now_rfc3339(self.created),
            "estimated_completion": now_rfc3339(self.created + ESTIMATED_ROTATION),
        }
        if self.started_at is not None:
            out["started_at"] = self.started_at
        if self.completed_at is not None:
            out["completed_at"] = self.completed_at
        if self.status != "pending":
            # §3.2.4 `progress`
            out["progress"] = {
                "phase": "dual_credential_period" if self.status == "in_progress" else self.status,
                "old_credentials_revoked": self.status == "completed",
                "new_credentials_created": True,
            }
        return out


@dataclass
class ClusterRecord:
    """A cluster's credential set: `active` is served; `rotating` is the old set during a dual period."""

    cluster_id: str
    cloud_provider: str
    region: str
    created_at: str
    active: dict[str, Credential] = field(default_factory=dict)
    rotating: dict[str, Credential] = field(default_factory=dict)
    last_rotated_at: str | None = None
    generation: int = 0  # rotations started: names a rotation's RHIT partner SA


def quay_robot(provider: str, region: str) -> str:
    compact = re.sub(r"[^a-z0-9]", "", region.lower())
    return f"{QUAY_ORG}+hyperfleet_{provider}_{compact}_{uuid.uuid4().hex}"


def rhit_account(cluster_id: str, generation: int) -> str:
    name = cluster_id.removeprefix("cls-")
    return f"|hyp-cls-{name}" + (f"-r{generation}" if generation else "")


class CredentialStore:
    """All clusters' credentials and rotations; thread-safe; keeps the registry in step (module invariant)."""

    def __init__(
        self,
        *,
        registry_hosts: Mapping[str, str] | Callable[[], Mapping[str, str]],
        registry: RegistryAccounts | None = None,
        alias_hosts: Mapping[str, str] | None = None,
        delete_during_rotation: str = "cancel",
    ) -> None:
        if delete_during_rotation not in ("cancel", "conflict"):
            raise ValueError('delete_during_rotation is "cancel" or "conflict"')
        # A mapping, or a callable read at each use: a stack knows the registry emulator's ports only once it runs.
        self._hosts = registry_hosts if callable(registry_hosts) else _checked(registry_hosts)
        # A host that reuses another registry's credential (Appendix A "CloudAlias"; §3.2.1 shows cloud.openshift.com
        # with the Quay credential): host -> registry id.
        self.alias_hosts = dict(alias_hosts or {})
        self.delete_during_rotation = delete_during_rotation
        self._registry = registry
        self._lock = threading.RLock()
        self._clusters: dict[str, ClusterRecord] = {}
        self._rotations: dict[str, list[Rotation]] = {}  # kept after a delete: the history outlives credentials
        self._sequence = 0

    @property
    def registry_hosts(self) -> dict[str, str]:
        """Registry id -> the host its credentials are for (the pull secret's `auths` key)."""
        return _checked(self._hosts() if callable(self._hosts) else self._hosts)

    def reset(self) -> None:
        with self._lock:
            for record in self._clusters.values():
                for cred in [*record.active.values(), *record.rotating.values()]:
                    self._forget(cred)
            self._clusters.clear()
            self._rotations.clear()

    # -- pull secrets ----------------------------------------------------------------------
    def generate(
        self,
        cluster_id: str,
        *,
        cloud_provider: str,
        region: str,
        registries: Sequence[str],
        registry_api: Callable[[str], bool],
    ) -> dict[str, Any]:
        """Generate or retrieve (§3.2.1); `registry_api(registry_id)` is False when that registry's API fails."""
        with self._lock:
            rotation = self._open_rotation(cluster_id)
            if rotation is not None:
                raise conflict(
                    "HYPERFLEET-CNF-001",
                    f"Cannot generate pull secret while rotation is in progress for cluster {cluster_id}",
                    rotation_id=rotation.rotation_id,
                    rotation_status=rotation.status,
                )
            record = self._clusters.get(cluster_id)
            if record is None:
                record = ClusterRecord(cluster_id, cloud_provider, region, now_rfc3339())
                self._clusters[cluster_id] = record
            served: list[Credential] = []
            for registry_id in registries:
                cred = record.active.get(registry_id)
                if cred is None:
                    if not registry_api(registry_id):
                        raise ServiceError(
                            500,
                            "HYPERFLEET-INT-002",
                            f"Failed to create credential for registry {registry_id}",
                            slug="credential-creation-failed",
                            title="Credential Creation Failed",
                            extensions={
                                "errors": [
                                    {
                                        "field": "registry",
                                        "code": "EXTERNAL_API_ERROR",
                                        "message": f"{registry_id} API returned 500: Service temporarily unavailable",
                                    }
                                ]
                            },
                        )
                    cred = self._mint(record, registry_id)
                    record.active[registry_id] = cred
                served.append(cred)
            return {
                "cluster_id": cluster_id,
                "pull_secret": self._pull_secret(served),
                "credentials": [c.public() for c in served],
                "created_at": record.created_at,
            }

    def retrieve(self, cluster_id: str, *, include_metadata: bool) -> dict[str, Any]:
        """The served pull secret (§3.2.2); with `include_metadata` also `credentials` (assumed shape: §3.2.1's)."""
        with self._lock:
            record = self._clusters.get(cluster_id)
            if record is None or not record.active:
                raise not_found(f"Pull secret not found for cluster {cluster_id}", cluster_id=cluster_id)
            creds = list(record.active.values())
            out: dict[str, Any] = {
                "cluster_id": cluster_id,
                "pull_secret": self._pull_secret(creds),
                "created_at": record.created_at,
                "last_rotated_at": record.last_rotated_at,
            }
            if include_metadata:
                out["credentials"] = [c.public() for c in creds]
            return out

    def delete(self, cluster_id: str) -> None:
        """Revoke and delete every credential; cancel open rotations (§3.2.6). Nothing there: done all the same."""
        with self._lock:
            rotation = self._open_rotation(cluster_id)
            if rotation is not None and self.delete_during_rotation == "conflict":
                raise conflict(
                    "HYPERFLEET-CNF-002",
                    f"Cannot delete credentials while rotation {rotation.rotation_id} is in progress",
                    rotation_id=rotation.rotation_id,
                    rotation_status=rotation.status,
                    retry_after_seconds=DELETE_RETRY_AFTER_S,
                )
            for r in self._rotations.get(cluster_id, []):
                if r.status in OPEN_ROTATION:
                    r.status = "cancelled"
            record = self._clusters.pop(cluster_id, None)
            if record is not None:
                for cred in [*record.active.values(), *record.rotating.values()]:
                    self._forget(cred)

    # -- rotations -------------------------------------------------------------------------
    def start_rotation(self, cluster_id: str, *, reason: str, force_immediate: bool) -> dict[str, Any]:
        """Create a rotation (201 body: as created, `pending`), then run the reconciler's step on it."""
        with self._lock:
            record = self._clusters.get(cluster_id)
            if record is None or not record.active:
                raise not_found(f"Pull secret not found for cluster {cluster_id}", cluster_id=cluster_id)
            current = self._open_rotation(cluster_id)
            if current is not None:
                raise conflict(
                    "HYPERFLEET-CNF-002",
                    f"Rotation already in progress for cluster {cluster_id}",
                    rotation_id=current.rotation_id,
                    rotation_status=current.status,
                    started_at=current.started_at or now_rfc3339(current.created),
                )
            self._sequence += 1
            rotation = Rotation(f"rot-{self._sequence:06d}", cluster_id, reason, force_immediate, datetime.now(UTC))
            self._rotations.setdefault(cluster_id, []).append(rotation)
            created = rotation.to_json()
            self._reconcile(record, rotation)
            return created

    def complete_rotation(self, cluster_id: str) -> dict[str, Any]:
        """The cluster confirmed the new set (§3.2.3 Phases 4-6): the old set is deleted, the rotation completed."""
        with self._lock:
            rotation = self._open_rotation(cluster_id)
            record = self._clusters.get(cluster_id)
            if rotation is None or record is None or rotation.status != "in_progress":
                # An admin answer, not the API's: no HyperFleet code.
                raise conflict(
                    "EMULATOR-NO-ROTATION", f"No rotation in its dual-credential period for cluster {cluster_id}"
                )
            self._finish(record, rotation)
            return rotation.to_json()

    def rotation(self, cluster_id: str, rotation_id: str) -> dict[str, Any]:
        with self._lock:
            for r in self._rotations.get(cluster_id, []):
                if r.rotation_id == rotation_id:
                    return r.to_json()
        raise not_found(f"Rotation {rotation_id} not found for cluster {cluster_id}", cluster_id=cluster_id)

    def rotations(
        self, cluster_id: str, *, status: str | None, limit: int, cursor: str | None, since: datetime | None
    ) -> dict[str, Any]:
        """§3.2.5: newest first (created_at, then rotation_id), cursor = base64 JSON {created_at, id}."""
        with self._lock:
            if cluster_id not in self._clusters and cluster_id not in self._rotations:
                raise not_found(f"Cluster {cluster_id} not found", cluster_id=cluster_id)
            items = sorted(self._rotations.get(cluster_id, []), key=lambda r: (r.created, r.rotation_id), reverse=True)
        items = [r for r in items if (status is None or r.status == status) and (since is None or r.created > since)]
        total = len(items)
        if cursor is not None:
            after = _decode_cursor(cursor)
            items = [r for r in items if (now_rfc3339(r.created), r.rotation_id) < after]
        page, more = items[:limit], len(items) > limit
        next_cursor = None
        if more:
            last = page[-1]
            raw = json.dumps({"created_at": now_rfc3339(last.created), "id": last.rotation_id}).encode()
            next_cursor = base64.b64encode(raw).decode()
        return {
            "rotations": [r.to_json() for r in page],
            "pagination": {"next_cursor": next_cursor, "has_more": more, "total_count": total},
        }

    # -- views -----------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Clusters, usernames and rotations; never a token."""
        with self._lock:
            clusters = {
                cid: {
                    "cloud_provider": r.cloud_provider,
                    "region": r.region,
                    "created_at": r.created_at,
                    "last_rotated_at": r.last_rotated_at,
                    "credentials": [c.public() for c in r.active.values()],
                    "rotating": [c.public() for c in r.rotating.values()],
                }
                for cid, r in self._clusters.items()
            }
            rotations = {cid: [r.to_json() for r in rs] for cid, rs in self._rotations.items()}
        return {"clusters": clusters, "rotations": rotations}

    def live_usernames(self) -> set[str]:
        with self._lock:
            return {c.username for r in self._clusters.values() for c in [*r.active.values(), *r.rotating.values()]}

    # -- internals -------------------------------------------------------------------------
    def _open_rotation(self, cluster_id: str) -> Rotation | None:
        return next((r for r in self._rotations.get(cluster_id, []) if r.status in OPEN_ROTATION), None)

    def _reconcile(self, record: ClusterRecord, rotation: Rotation) -> None:
        # §3.2.3 Phase 2: mark the old set rotating, mint the new one.
        record.generation += 1
        record.rotating = dict(record.active)
        record.active = {registry_id: self._mint(record, registry_id) for registry_id in record.rotating}
        rotation.status = "in_progress"
        rotation.started_at = now_rfc3339()
        if rotation.force_immediate:
            self._finish(record, rotation)

    def _finish(self, record: ClusterRecord, rotation: Rotation) -> None:
        # §3.2.3 Phase 6: delete the old credentials at the registry, then mark the rotation completed.
        for cred in record.rotating.values():
            self._forget(cred)
        record.rotating = {}
        rotation.status = "completed"
        rotation.completed_at = now_rfc3339()
        record.last_rotated_at = rotation.completed_at

    def _mint(self, record: ClusterRecord, registry_id: str) -> Credential:
        if registry_id == "quay":
            username = quay_robot(record.cloud_provider, record.region)
        else:
            username = rhit_account(record.cluster_id, record.generation)
        cred = Credential(registry_id, username, f"pss-{registry_id}-{secrets.token_urlsafe(24)}", now_rfc3339())
        if self._registry is not None:
            self._registry.add_account(cred.username, cred.token)
        return cred

    def _forget(self, cred: Credential) -> None:
        if self._registry is not None:
            self._registry.remove_account(cred.username)

    def _pull_secret(self, creds: Sequence[Credential]) -> dict[str, Any]:
        # §3.2.1: a dockerconfigjson object, one `auth` (base64 of username:token) per registry host.
        by_registry = {c.registry_id: c for c in creds}
        hosts = self.registry_hosts
        auths: dict[str, dict[str, str]] = {}
        for cred in creds:
            auths[hosts[cred.registry_id]] = {"auth": _basic(cred)}
        for host, registry_id in self.alias_hosts.items():
            if registry_id in by_registry:
                auths[host] = {"auth": _basic(by_registry[registry_id])}
        return {"auths": auths}


def _checked(hosts: Mapping[str, str]) -> dict[str, str]:
    unknown = set(hosts) - set(REGISTRY_IDS)
    if unknown:
        raise ValueError(f"unknown registry ids {sorted(unknown)}; known: {list(REGISTRY_IDS)}")
    return dict(hosts)


def _basic(cred: Credential) -> str:
    return base64.b64encode(f"{cred.username}:{cred.token}".encode()).decode()


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = json.loads(base64.b64decode(cursor, validate=True))
        created_at, rotation_id = raw["created_at"], raw["id"]
    except (ValueError, KeyError, TypeError):
        raise invalid("cursor", cursor, "format", "Invalid pagination cursor") from None
    if not isinstance(created_at, str) or not isinstance(rotation_id, str):
        raise invalid("cursor", cursor, "format", "Invalid pagination cursor")
    return created_at, rotation_id
