"""The Kubernetes Secret on the management cluster: apply and delete with ownership and generation guards.

Writes happen only when the live object differs from the desired one (data, type, our labels and
annotations), never to a Secret without `managed-by=hyperfleet`, never from an older generation over
a newer one. Updates are server-side apply with our field manager and the read `resourceVersion` as
precondition, so a concurrent writer makes us re-read instead of losing its update.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from pullsecret import retrying
from pullsecret.errors import TerminalError, TransientError, from_kube, is_retryable_kube, kube_status
from pullsecret.retrying import Deadline

DOCKERCONFIGJSON = "kubernetes.io/dockerconfigjson"
KEY = ".dockerconfigjson"
A_SOURCE = "hyperfleet.io/gcp-secret-path"
A_CREATED_BY = "hyperfleet.io/created-by"
A_CREATED_AT = "hyperfleet.io/created-at"
A_FINGERPRINT = "hyperfleet.io/fingerprint"
A_GENERATION = "hyperfleet.io/generation"
A_LINEAGE = "hyperfleet.io/lineage"  # compact JSON: registry names and short fingerprints only
_LABEL_BAD = re.compile(r"[^A-Za-z0-9_.-]")
MAX_ATTEMPTS = 8


class OwnershipConflict(TerminalError):
    default_reason = "OwnershipConflict"


def label_value(value: str) -> str:
    """Sanitise to a Kubernetes label value: <= 63 chars, alphanumeric at both ends."""
    cleaned = _LABEL_BAD.sub("-", value)[:63]
    return cleaned.strip("-_.")


@dataclass(frozen=True)
class DesiredSecret:
    namespace: str
    name: str
    content: bytes = field(repr=False)
    fingerprint: str
    generation: int
    source_version: str
    labels: dict[str, str]
    created_by: str
    lineage: str | None = None  # None: keep what the live object records (this event computed none)

    def annotations(self) -> dict[str, str]:
        annotations = {
            A_SOURCE: self.source_version,
            A_CREATED_BY: self.created_by,
            A_FINGERPRINT: self.fingerprint,
            A_GENERATION: str(self.generation),
        }
        if self.lineage is not None:
            annotations[A_LINEAGE] = self.lineage
        return annotations

    def data(self) -> dict[str, str]:
        return {KEY: base64.b64encode(self.content).decode("ascii")}

    def manifest(
        self, created_at: str, resource_version: str | None = None, kept_lineage: str | None = None
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": dict(self.labels),
            "annotations": {
                **({A_LINEAGE: kept_lineage} if kept_lineage is not None and self.lineage is None else {}),
                **self.annotations(),
                A_CREATED_AT: created_at,
            },
        }
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": DOCKERCONFIGJSON,
            "data": self.data(),
        }


@dataclass(frozen=True)
class ApplyResult:
    written: bool
    resource_version: str
    stale: bool = False
    recorded_generation: int = 0


def _generation(annotations: dict[str, str]) -> int:
    try:
        return int(annotations.get(A_GENERATION, "0"))
    except ValueError:
        return 0


def differs(live: dict[str, Any], desired: DesiredSecret) -> bool:
    """True when the live object's content or our metadata differ from the desired state."""
    metadata = live.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    if live.get("type") != DOCKERCONFIGJSON or (live.get("data") or {}) != desired.data():
        return True
    if any(labels.get(k) != v for k, v in desired.labels.items()):
        return True
    return any(annotations.get(k) != v for k, v in desired.annotations().items()) or A_CREATED_AT not in annotations


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubeSecrets:
    """Apply / delete the pull Secret through one Secrets API (pullsecret.kubeapi)."""

    def __init__(self, field_manager: str) -> None:
        self._field_manager = field_manager

    def _call(self, what: str, deadline: Deadline, fn: Any, *args: Any, **kwargs: Any) -> Any:
        def attempt() -> Any:
            return fn(
                *args,
                **kwargs,
                _preload_content=False,
                _request_timeout=max(min(deadline.remaining(), 20.0), 0.5),
            )

        return retrying.call(
            attempt,
            predicate=is_retryable_kube,
            deadline=deadline,
            on_give_up=lambda cause: from_kube(cause, what=what),
        )

    def read(self, api: Any, namespace: str, name: str, deadline: Deadline) -> dict[str, Any] | None:
        """The live Secret as a dict, or None when it does not exist."""
        what = f"read Secret {namespace}/{name}"
        try:
            response = self._call(what, deadline, api.read_namespaced_secret, name, namespace)
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status[0] == 404:
                return None
            raise from_kube(exc, what=what) from None
        body: dict[str, Any] = json.loads(response.data)
        return body

    def apply(
        self,
        api: Any,
        desired: DesiredSecret,
        deadline: Deadline,
        live: dict[str, Any] | None,
    ) -> ApplyResult:
        """Make the Secret equal `desired`, starting from `live` as just read (None: it does not exist).

        Raises OwnershipConflict / TerminalError / TransientError. After a lost race it reads again.
        """
        ns, name = desired.namespace, desired.name
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                live = self.read(api, ns, name, deadline)
            if live is None:
                result = self._create(api, desired, deadline)
                if result is not None:
                    return result
                continue  # created concurrently by someone else: re-read and decide again
            metadata = live.get("metadata") or {}
            labels = metadata.get("labels") or {}
            annotations = metadata.get("annotations") or {}
            if labels.get("managed-by") != "hyperfleet":
                raise OwnershipConflict(
                    f"Kubernetes Secret {ns}/{name} exists without the label managed-by=hyperfleet; "
                    "refusing to overwrite it",
                    service="kubernetes",
                )
            recorded = _generation(annotations)
            if recorded > desired.generation:
                return ApplyResult(
                    False, str(metadata.get("resourceVersion", "")), stale=True, recorded_generation=recorded
                )
            if not differs(live, desired):
                return ApplyResult(False, str(metadata.get("resourceVersion", "")), recorded_generation=recorded)
            if live.get("type") != DOCKERCONFIGJSON:
                raise TerminalError(
                    f"Kubernetes Secret {ns}/{name} has type {str(live.get('type'))[:60]!r}; the type is immutable, "
                    "delete it to let the adapter recreate it",
                    reason="SecretTypeMismatch",
                    service="kubernetes",
                )
            created_at = annotations.get(A_CREATED_AT) or _now()
            body = desired.manifest(
                created_at,
                resource_version=str(metadata.get("resourceVersion", "")),
                kept_lineage=annotations.get(A_LINEAGE),
            )
            what = f"apply Secret {ns}/{name}"
            try:
                response = self._call(
                    what,
                    deadline,
                    api.patch_namespaced_secret,
                    name,
                    ns,
                    body,
                    field_manager=self._field_manager,
                    force=True,
                    _content_type="application/apply-patch+yaml",
                )
            except (TerminalError, TransientError):
                raise
            except ApiException as exc:
                status = kube_status(exc)
                if status is not None and status[0] in (404, 409):
                    continue  # changed or deleted since we read it: the next round reads again
                raise from_kube(exc, what=what) from None
            applied = json.loads(response.data)
            return ApplyResult(
                True,
                str(applied["metadata"].get("resourceVersion", "")),
                recorded_generation=desired.generation,
            )
        raise TransientError(
            f"apply Secret {ns}/{name}: kept conflicting with concurrent writers",
            reason="WriteConflict",
            service="kubernetes",
        )

    def _create(self, api: Any, desired: DesiredSecret, deadline: Deadline) -> ApplyResult | None:
        what = f"create Secret {desired.namespace}/{desired.name}"
        try:
            response = self._call(
                what,
                deadline,
                api.create_namespaced_secret,
                desired.namespace,
                desired.manifest(_now()),
                field_manager=self._field_manager,
            )
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status == (409, "AlreadyExists"):
                return None
            if status is not None and status[0] == 404:
                # The namespace is missing: the placement adapter may still be creating it.
                raise TransientError(
                    f"{what}: namespace {desired.namespace} not found (yet)",
                    reason="NamespaceMissing",
                    service="kubernetes",
                ) from None
            raise from_kube(exc, what=what) from None
        created = json.loads(response.data)
        return ApplyResult(
            True, str(created["metadata"].get("resourceVersion", "")), recorded_generation=desired.generation
        )

    def delete(self, api: Any, namespace: str, name: str, deadline: Deadline) -> bool:
        """Delete our Secret (only if it carries managed-by=hyperfleet); True if something was deleted."""
        live = self.read(api, namespace, name, deadline)
        if live is None:
            return False
        metadata = live.get("metadata") or {}
        if (metadata.get("labels") or {}).get("managed-by") != "hyperfleet":
            raise OwnershipConflict(
                f"Kubernetes Secret {namespace}/{name} is not labelled managed-by=hyperfleet; not deleting it",
                service="kubernetes",
            )
        what = f"delete Secret {namespace}/{name}"
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": metadata.get("uid"), "resourceVersion": metadata.get("resourceVersion")},
        }
        try:
            self._call(what, deadline, api.delete_namespaced_secret, name, namespace, body=body)
        except (TerminalError, TransientError):
            raise
        except ApiException as exc:
            status = kube_status(exc)
            if status is not None and status[0] == 404:
                return False
            if status is not None and status[0] == 409:
                raise TransientError(
                    f"{what}: it changed while deleting", reason="WriteConflict", service="kubernetes"
                ) from None
            raise from_kube(exc, what=what) from None
        return True
