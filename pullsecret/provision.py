"""The parts of a provisioning reconcile that decide nothing about order: where the pull secret goes (`Target`),
what to deliver and the lineage it records, version retention, and the status `data`."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from typing import Any

from pullsecret import secretstore
from pullsecret.config import Settings
from pullsecret.delivery.base import Delivered, Desired, Probed, Where
from pullsecret.errors import AdapterError
from pullsecret.logs import log
from pullsecret.model import lineage, preconditions, status
from pullsecret.model.dockerconfig import MergeResult
from pullsecret.model.names import DNS_SUBDOMAIN_RE, SECRET_ID_RE, kube_label_value, secret_name, secret_of
from pullsecret.registry import verification as registry_verification
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore


def names(settings: Settings, cluster_id: str) -> tuple[str, str]:
    """(Secret Manager secret id, Kubernetes Secret name) of a cluster; raises InvalidCluster."""
    secret_id = settings.secret_id_template.format(cluster_id=cluster_id)
    if not SECRET_ID_RE.match(secret_id):
        raise preconditions.InvalidCluster(
            f"cluster id {cluster_id[:80]!r} cannot form a Secret Manager secret id ([A-Za-z0-9_-], 255 max)"
        )
    kube_name = settings.kubernetes_secret_template.format(cluster_id=cluster_id)
    if len(kube_name) > 253 or not DNS_SUBDOMAIN_RE.match(kube_name):
        raise preconditions.InvalidCluster(
            f"cluster id {cluster_id[:80]!r} cannot form a Kubernetes Secret name (lowercase DNS subdomain)"
        )
    if kube_label_value(cluster_id) != cluster_id:
        # The admission policy admits only the Secret named after its cluster-id label's value.
        raise preconditions.InvalidCluster(
            f"cluster id {cluster_id[:80]!r} is not a Kubernetes label value (63 characters, alphanumeric ends)"
        )
    return secret_id, kube_name


@dataclass(frozen=True)
class Target:
    """Where one cluster's pull secret goes: its Secret Manager secret and its delivery."""

    cluster_id: str
    cluster_name: str
    secret_id: str
    where: Where

    @property
    def secret_name(self) -> str:  # projects/P/secrets/ID
        return self.where.secret_name

    @property
    def kube_name(self) -> str:
        return self.where.kube_name


def target(settings: Settings, cluster_id: str, cluster: dict[str, Any], act: preconditions.Act) -> Target:
    """The target of a cluster to provision; raises InvalidCluster."""
    secret_id, kube_name = names(settings, cluster_id)
    where = Where(
        cluster_id=cluster_id,
        secret_name=secret_name(act.project_id, secret_id),
        placement=act.placement,
        kube_name=kube_name,
    )
    return Target(cluster_id, str(cluster.get("name") or cluster_id), secret_id, where)


def desired_secret(
    settings: Settings, target: Target, act: preconditions.Act, *, merged: MergeResult, version: str, created_by: str
) -> Desired:
    """What to deliver: the stored content (`version`), where, and what the delivered object records."""
    return Desired(
        cluster_id=target.cluster_id,
        cluster_name=target.cluster_name,
        adapter=settings.adapter_name,
        namespace=act.placement.namespace,
        name=target.kube_name,
        content=merged.secret.canonical,
        fingerprint=merged.secret.fingerprint,
        generation=act.generation,
        source_version=version,
        created_by=created_by,
    )


def with_lineage(
    desired: Desired,
    store: SecretStore,
    *,
    stored: secretstore.StoreResult,
    own: dict[str, Any] | None,
    probed: Probed,
    merged: MergeResult,
    deadline: Deadline,
) -> tuple[Desired, dict[str, Any]]:
    """`desired` carrying the lineage of the version it points at, and that lineage."""
    recorded = lineage_of(
        store,
        stored,
        previous=lineage.from_report(((own or {}).get("data") or {}).get("lineage")),
        live=lineage.decode(probed.recorded_lineage),
        fingerprints=merged.secret.registry_fingerprints(),
        deadline=deadline,
    )
    if recorded:
        desired = dataclasses.replace(desired, lineage=lineage.encode(recorded))
    return desired, recorded


def lineage_of(
    store: SecretStore,
    stored: secretstore.StoreResult,
    *,
    previous: dict[str, Any],
    live: dict[str, Any],
    fingerprints: dict[str, str],
    deadline: Deadline,
) -> dict[str, Any]:
    """The lineage of the version the Secret points at: from our last status, else the live Secret,
    else advanced from the last status to this version ("since" = the version's creation time, so
    every delivery pointing at it computes the same object and the Kubernetes Secret is written once).

    A record naming this version is believed only when its fingerprints are those computed from the content
    (`fingerprints`): one that names other registries or fingerprints is forged or stale and is dropped, so
    the lineage is recomputed rather than written through."""
    version = lineage.version_id(stored.version_name)
    previous, live = (
        {} if known.get("version") == version and not lineage.describes(known, fingerprints=fingerprints) else known
        for known in (previous, live)
    )
    for known in (previous, live):
        if known and known.get("version") == version:
            return known
    created = stored.created_at
    if created is None:
        created = store.created_at(stored.version_name, deadline) or int(time.time())
    return lineage.advance(
        previous or live,
        fingerprints=fingerprints,
        version_name=stored.version_name,
        previous_version=(previous or live).get("version"),
        now=created,
    )


def add_applied(
    data: dict[str, Any],
    settings: Settings,
    store: SecretStore,
    *,
    present: bool,
    stored: secretstore.StoreResult,
    applied: Delivered,
    recorded: dict[str, Any],
) -> None:
    """Add to `data` what an apply that was not stale did: what it repaired, the lineage, and after a Secret
    Manager write, the version retention (run now: the delivery points at the new version)."""
    if applied.written and not stored.written and present:
        data.setdefault("repaired", "kubernetes_secret")
    elif applied.written and not present and not stored.written:
        data.setdefault("repaired", "kubernetes_secret_recreated")
    data["lineage"] = lineage.report(
        recorded, sm_version=stored.version_name, kubernetes_resource_version=applied.revision
    )
    if stored.written:
        data["retention"] = retention(settings, store, stored.version_name, kubernetes_points_at=stored.version_name)


def retention(settings: Settings, store: SecretStore, version_name: str, kubernetes_points_at: str) -> dict[str, Any]:
    """Best effort after a successful write: failures are logged, the next write tries again.

    Runs after the Kubernetes apply succeeded, so the Secret points at `kubernetes_points_at` now;
    that version is never destroyed, whatever its age.
    """
    protected = {version_name, kubernetes_points_at}
    newest = lineage.version_id(version_name)
    if newest.isdigit() and int(newest) <= settings.retain_versions:
        return {"keep": settings.retain_versions, "destroyed": []}  # nothing can be older: no list call
    try:
        with log.step("secretmanager.retention", keep=settings.retain_versions) as fields:
            result = store.apply_retention(
                secret_of(version_name),
                keep=settings.retain_versions,
                protected=protected,
                deadline=Deadline(min(10.0, settings.retry_deadline_s)),
            )
            fields["destroyed"] = len(result.destroyed)
    except AdapterError as exc:
        log.warning(f"version retention skipped: {exc.message}", operation="secretmanager.retention")
        return {"keep": settings.retain_versions, "error": exc.reason}
    return {"keep": settings.retain_versions, "destroyed": list(result.destroyed)}


def with_registries(report: status.Report, checks: registry_verification.Pending | None) -> status.Report:
    """Add each registry's answer to `data`; a refused credential that did not stop the write (report mode, or
    a platform entry in enforce mode) turns Health False in either mode."""
    if checks is None:
        return report
    verification = checks.result()
    report.data.update(verification.data())
    if verification.rejected:
        return status.registry_rejected(report, verification.rejected)
    return report


def provisioned_data(target: Target, merged: MergeResult, stored: secretstore.StoreResult) -> dict[str, Any]:
    """The status `data` of a provisioned pull secret: where it went, what it holds (names and fingerprints)."""
    placement = target.where.placement
    data: dict[str, Any] = {
        "sm_name": target.secret_name,
        "sm_version": stored.version_name,
        "management_cluster": placement.management_cluster,
        "kubernetes_namespace": placement.namespace,
        "kubernetes_name": target.kube_name,
        "fingerprint": merged.secret.short_fingerprint,
        "registries": list(merged.secret.registries),
    }
    if merged.conflicts:
        data["conflicts"] = list(merged.conflicts)
        data["conflict_details"] = [dict(d) for d in merged.conflict_details[:50]]
    if merged.shadowed:
        data["shadowed"] = [dict(d) for d in merged.shadowed[:50]]
    return data


def observed_generation(own: dict[str, Any] | None) -> int:
    value = (own or {}).get("observed_generation")
    return value if isinstance(value, int) else 0


def first_provisioning(own: dict[str, Any] | None) -> bool:
    """Our status records no stored version: as far as we reported, the cluster has nothing of ours yet.

    Only a hint of which call comes first (the service source's generate-or-retrieve in place of its GET): a
    status that lies about it costs a round trip, never a wrong result.
    """
    data = (own or {}).get("data")
    return not (isinstance(data, dict) and data.get("sm_version"))


def still_ours(own: dict[str, Any] | None, secret: str, latest: secretstore.Latest) -> bool:
    """Our last status names this secret, and its newest version is still the one we pointed at, with the
    content we reported (a secret deleted and created again numbers its versions from 1 again).

    Then nobody else wrote to it since we did, and its ownership was checked when we first wrote it.
    """
    data = (own or {}).get("data") or {}
    if latest.data is None or data.get("sm_name") != secret or data.get("sm_version") != latest.name:
        return False
    return bool(data.get("fingerprint")) and hashlib.sha256(latest.data).hexdigest()[:12] == data.get("fingerprint")
