"""Our Kubernetes Secret as data: its manifest, labels and annotations, and what the API server's answers say.

Pure (the calls are pullsecret.delivery.direct.kubewrites'): the Secret the adapter applies (`DesiredSecret`), the
labels the admission policy recognises it by (`kube_labels`), the dry-run probe's manifest, whether a live
Secret differs in a field we own, and the reading of refusals (a denial by our policy, a dry-run create, a
field-manager conflict).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pullsecret.delivery.base import Desired
from pullsecret.delivery.direct.kubeapi import ApiException
from pullsecret.errors import kube_status
from pullsecret.logs import answer_text
from pullsecret.model.names import kube_label_value

DOCKERCONFIGJSON = "kubernetes.io/dockerconfigjson"
KEY = ".dockerconfigjson"
A_SOURCE = "hyperfleet.io/gcp-secret-path"
A_CREATED_BY = "hyperfleet.io/created-by"
A_CREATED_AT = "hyperfleet.io/created-at"
A_FINGERPRINT = "hyperfleet.io/fingerprint"
A_GENERATION = "hyperfleet.io/generation"
A_LINEAGE = "hyperfleet.io/lineage"  # compact JSON: registry names and short fingerprints only
# A policy denial names its validation's reason first: "... denied request: StaleGeneration: ..."
_DENIAL = re.compile(r"ValidatingAdmissionPolicy '([^']*)' with binding '[^']*' denied request: (\w+): ")


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
        return {KEY: base64.b64encode(self.content).decode()}

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


# The label migration (docs/lifecycle.md "Labels"): the adapter framework's keys (hyperfleet-adapter
# pkg/constants/constants.go; charts/examples: managed-by = the adapter's name), and the previous release's
# `managed-by=hyperfleet`, still written so that its policy and function recognise every Secret while both
# releases may run. Server-side apply drops the other old labels (`adapter`, `cluster-id`, ...) our manager owned.
L_MANAGED_BY = "hyperfleet.io/managed-by"
L_CLUSTER_ID = "hyperfleet.io/cluster-id"
L_RESOURCE_TYPE = "hyperfleet.io/resource-type"
L_CLUSTER_NAME = "hyperfleet.io/cluster-name"
L_PREVIOUS_MANAGED_BY = "managed-by"


def kube_labels(*, adapter: str, cluster_id: str, cluster_name: str) -> dict[str, str]:
    """The labels of our Kubernetes Secret; the admission policy recognises it by hyperfleet.io/managed-by and the
    name KUBERNETES_SECRET_TEMPLATE gives the cluster of hyperfleet.io/cluster-id."""
    return {
        L_MANAGED_BY: kube_label_value(adapter),
        L_CLUSTER_ID: kube_label_value(cluster_id),
        L_RESOURCE_TYPE: "pull-secret",
        L_CLUSTER_NAME: kube_label_value(cluster_name),
        L_PREVIOUS_MANAGED_BY: "hyperfleet",
    }


def probe_manifest(namespace: str, name: str) -> dict[str, Any]:
    """What the dry-run probe applies: our label and type, values our live Secret already has (no change)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"managed-by": "hyperfleet"}},
        "type": DOCKERCONFIGJSON,
    }


@dataclass(frozen=True)
class Probed:
    """Our live Secret as the dry-run probe saw it (None: absent)."""

    live: dict[str, Any] | None

    @property
    def recorded_generation(self) -> int:
        return generation_of(((self.live or {}).get("metadata") or {}).get("annotations") or {})


def rendered(desired: Desired) -> DesiredSecret:
    """The Kubernetes Secret that holds `desired`: its name, content, labels and annotations."""
    return DesiredSecret(
        namespace=desired.namespace,
        name=desired.name,
        content=desired.content,
        fingerprint=desired.fingerprint,
        generation=desired.generation,
        source_version=desired.source_version,
        labels=kube_labels(adapter=desired.adapter, cluster_id=desired.cluster_id, cluster_name=desired.cluster_name),
        created_by=desired.created_by,
        lineage=desired.lineage,
    )


def generation_of(annotations: dict[str, str]) -> int:
    try:
        return int(annotations.get(A_GENERATION) or 0)
    except ValueError:
        return 0


def differs(live: dict[str, Any], desired: DesiredSecret) -> bool:
    """True when a field the adapter owns differs from the desired state.

    Only our fields: data[.dockerconfigjson], type, our labels and annotations. Another manager's key (say,
    added with kubectl edit) is not compared: apply never removes it, so comparing it would write forever.
    """
    metadata = live.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    if live.get("type") != DOCKERCONFIGJSON or (live.get("data") or {}).get(KEY) != desired.data()[KEY]:
        return True
    if any(labels.get(k) != v for k, v in desired.labels.items()):
        return True
    return any(annotations.get(k) != v for k, v in desired.annotations().items()) or A_CREATED_AT not in annotations


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def body_of(exc: ApiException) -> dict[str, Any]:
    if not exc.body:  # ApiException always has a body attribute: None when nothing was read
        return {}
    try:
        parsed = json.loads(exc.body)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def policy_denial(exc: BaseException, *, policy_name: str) -> tuple[str, str] | None:
    """(reason, message) of a denial by our admission policy (named `policy_name`: ADMISSION_POLICY_NAME), else
    None: another instance's policy, or anyone else's, is not ours to explain."""
    if not isinstance(exc, ApiException):
        return None
    message = body_of(exc).get("message")
    if not isinstance(message, str):
        return None
    found = _DENIAL.search(message)
    if found is None or found.group(1) != policy_name:
        return None
    return found.group(2), answer_text(message[found.start() :], 400)


def would_create_without_data(exc: ApiException) -> bool:
    """The probe's dry run had to create the Secret and validation wants its data: nothing is at that name."""
    if kube_status(exc) != (422, "Invalid"):
        return False
    details = body_of(exc).get("details") or {}
    causes = details.get("causes") if isinstance(details, dict) else None
    # Exactly that one cause: a Secret of another type also lacks the key, but is refused for its type too.
    return bool(causes) and all(
        isinstance(c, dict) and c.get("field") == f"data[{KEY}]" and c.get("reason") == "FieldValueRequired"
        for c in causes or []
    )


def _owned_paths(tree: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The field paths a managedFields entry's fieldsV1 names: {"f:data": {"f:k": {}}} -> {("data",), ("data", "k")}."""
    out: set[tuple[str, ...]] = set()
    for key, child in tree.items() if isinstance(tree, dict) else ():
        if key.startswith("f:"):
            path = (*prefix, key[2:])
            out.add(path)
            out |= _owned_paths(child, path)
    return out


def _applied_paths(body: dict[str, Any]) -> set[tuple[str, ...]]:
    """The leaf fields our apply sets: type, data keys, our labels and annotations."""
    metadata = body.get("metadata") or {}
    out: set[tuple[str, ...]] = {("type",)} if "type" in body else set()
    out |= {("data", k) for k in body.get("data") or {}}
    out |= {("metadata", "labels", k) for k in metadata.get("labels") or {}}
    out |= {("metadata", "annotations", k) for k in metadata.get("annotations") or {}}
    return out


def only_ours_own(live: dict[str, Any], body: dict[str, Any], managers: set[str]) -> bool:
    """True when every managedFields entry owning a field of `body` is one of our managers, whatever its operation.

    The API server keys a field manager by (name, operation) (kubernetes/kubernetes#107417, #80916): the Update
    entry our create recorded is "another manager" to our Apply, so a force=false apply changing one of its fields
    conflicts with ourselves. When no other name owns a field we apply, force=true takes nothing from anyone else
    and saves that refused round trip. Without managedFields to judge by, False: force=false stays the guard.
    """
    entries = (live.get("metadata") or {}).get("managedFields")
    if not isinstance(entries, list) or not entries:
        return False
    ours = _applied_paths(body)
    for entry in entries:
        if not isinstance(entry, dict):
            return False
        if entry.get("manager") not in managers and _owned_paths(entry.get("fieldsV1")) & ours:
            return False
    return True


def field_conflict(exc: ApiException) -> bool:
    """A server-side apply conflict: fields we apply are owned by another manager with other values."""
    details = body_of(exc).get("details") or {}
    causes = details.get("causes") if isinstance(details, dict) else None
    return any(isinstance(c, dict) and c.get("reason") == "FieldManagerConflict" for c in causes or [])
