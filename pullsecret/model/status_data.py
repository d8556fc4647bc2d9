"""The status `data` record: every key the adapter reports, typed and documented once, and what our last one says.

Pure. The invariant, stated once: a report's `data` holds the keys declared here (`StatusData`: what every
deployment reports) and the chosen delivery mode's and source's own, each declared by its registration as a TypedDict
of its own (`pullsecret.model.status.Declared.keys`) and added with `add_own`. Every writer builds one of these
records, so mypy checks each key where it is written (pullsecret.reconcile.provisioning and finalize and registry
verification build a `StatusData`; a delivery's `status_data` and `cleanup` and a source's `status_data` and `revoke`
their own record); tests/unit/test_status_data.py checks that every key a report carries is declared, once. No key
contains a word HyperFleet's condition mapping masks (pullsecret.model.status's docstring; contract.md §2): `sm_*`
names Secret Manager things, registry names are values, never keys.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, TypedDict, cast

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
    # or a delivery's own repair.
    repaired: str
    lineage: dict[str, Any]  # which credential per registry, since which version (pullsecret.model.lineage.report)
    retention: Retention  # after a Secret Manager write
    # Registry verification [registry/verdicts].
    registry_verification: str  # REGISTRY_VERIFICATION's mode
    registry_checks: list[dict[str, Any]]  # each registry's answer (at most 100)
    # Deletion [finalize].
    deletion_policy: str  # DELETION_POLICY applied
    sm_cleanup: str  # what became of the Secret Manager secret


# An implementation's own status keys: a record of the TypedDict its registration declares (Declared.keys).
OwnData = Mapping[str, object]


def add_own(data: StatusData, own: OwnData) -> None:
    """Add an implementation's own keys to `data` (mypy checked each where its TypedDict was built; a TypedDict, like
    StatusData, admits keys beyond its own)."""
    cast(dict[str, object], data).update(own)


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
