"""The status `data` record: every key the adapter reports, typed and documented once, and what our last one says.

Pure. Every writer (pullsecret.reconcile.provisioning, pullsecret.reconcile.finalize, each delivery's `status_data` and
`cleanup`, each
source's `status_data` and `revoke`, registry verification) builds a `StatusData`, so mypy checks each key against
this record; an implementation that reports a key of its own declares it here (one line, with its meaning). No key
contains a word HyperFleet's condition mapping masks (pullsecret.model.status's docstring; contract.md §2):
`sm_*` names Secret Manager things, `kubernetes_*` Kubernetes ones, registry names are values, never keys.
"""

from __future__ import annotations

import hashlib
from typing import Any, TypedDict

from pullsecret.model.dockerconfig import MergeResult
from pullsecret.model.preconditions import Placement


class Retention(TypedDict, total=False):
    """Version retention after a write: how many versions are kept, which were destroyed, or why it was skipped."""

    keep: int
    destroyed: list[str]
    error: str  # the reason retention was skipped (the next write tries again)


class StatusData(TypedDict, total=False):
    """The status `data` of every report (each key's writer in brackets)."""

    # Where the pull secret went and what it holds [provisioning; finalize names sm_name too].
    sm_name: str  # projects/P/secrets/ID: the cluster's Secret Manager secret
    sm_version: str  # projects/P/secrets/ID/versions/N: the version delivered
    management_cluster: str  # the GKE management cluster (projects/P/locations/L/clusters/C)
    kubernetes_namespace: str  # the namespace on it
    kubernetes_name: str  # the Kubernetes Secret's name
    fingerprint: str  # the first 12 hex digits of the pull secret's SHA-256 (never its content)
    registries: list[str]  # the registries the pull secret holds, by name
    conflicts: list[str]  # registries both sides of the merge define (MERGE_PRECEDENCE chose)
    conflict_details: list[dict[str, str]]  # per conflict: the side that won, and each side's fingerprint
    shadowed: list[dict[str, Any]]  # registry keys folded into another of the same registry (names, fingerprints)
    # What an event repaired: secret_manager_version, kubernetes_secret, kubernetes_secret_recreated [provisioning],
    # access_binding [external-secrets delivery].
    repaired: str
    lineage: dict[str, Any]  # which credential per registry, since which version (pullsecret.model.lineage.report)
    retention: Retention  # after a Secret Manager write
    # The delivery's own [delivery/direct, delivery/external_secrets].
    kubernetes_resource_version: str | None  # the delivered Secret's resourceVersion (direct)
    delivery: str  # the KUBERNETES_DELIVERY value, when not direct (external-secrets)
    access_member: str  # the principal granted access to the secret (external-secrets)
    access_cleanup: str  # deletion: what became of that access (external-secrets)
    kubernetes_cleanup: str  # deletion: what became of the Kubernetes Secret
    # The source's own [source/service].
    source: str  # the source that answered, when not the platform pull secret
    minted: list[dict[str, Any]]  # per registry: its id, the username's fingerprint, when it was created
    revoked: str  # deletion: the source's answer to revoking the cluster's credentials
    # Registry verification [registry/verdicts].
    registry_verification: str  # REGISTRY_VERIFICATION's mode
    registry_checks: list[dict[str, Any]]  # each registry's answer (at most 100)
    # Deletion [finalize].
    deletion_policy: str  # DELETION_POLICY applied
    sm_cleanup: str  # what became of the Secret Manager secret


def provisioned_data(
    *, sm_name: str, sm_version: str, placement: Placement, kubernetes_name: str, merged: MergeResult
) -> StatusData:
    """The status `data` of a provisioned pull secret: where it went, what it holds (names and fingerprints)."""
    data: StatusData = {
        "sm_name": sm_name,
        "sm_version": sm_version,
        "management_cluster": placement.management_cluster,
        "kubernetes_namespace": placement.namespace,
        "kubernetes_name": kubernetes_name,
        "fingerprint": merged.secret.short_fingerprint,
        "registries": list(merged.secret.registries),
    }
    if merged.conflicts:
        data["conflicts"] = list(merged.conflicts)
        data["conflict_details"] = [dict(d) for d in merged.conflict_details[:50]]
    if merged.shadowed:
        data["shadowed"] = [dict(d) for d in merged.shadowed[:50]]
    return data


# -- what our last status says (read back with the other adapters' statuses; anyone may write one: untrusted) ----
def observed_generation(own: dict[str, Any] | None) -> int:
    """The generation our last status claims (0: none)."""
    value = (own or {}).get("observed_generation")
    return value if isinstance(value, int) else 0


def first_provisioning(own: dict[str, Any] | None) -> bool:
    """Our status records no stored version: as far as we reported, the cluster has nothing of ours yet.

    Only a hint of which call comes first (the service source's generate-or-retrieve in place of its GET): a
    status that lies about it costs a round trip, never a wrong result.
    """
    data = (own or {}).get("data")
    return not (isinstance(data, dict) and data.get("sm_version"))


def still_ours(own: dict[str, Any] | None, secret: str, latest_name: str | None, latest_data: bytes | None) -> bool:
    """Our last status names this secret, and its newest version (`latest_name`, holding `latest_data`) is still
    the one we pointed at, with the content we reported (a secret deleted and created again numbers its versions
    from 1 again).

    Then nobody else wrote to it since we did, and its ownership was checked when we first wrote it.
    """
    data = (own or {}).get("data") or {}
    if latest_data is None or data.get("sm_name") != secret or data.get("sm_version") != latest_name:
        return False
    return bool(data.get("fingerprint")) and hashlib.sha256(latest_data).hexdigest()[:12] == data.get("fingerprint")
