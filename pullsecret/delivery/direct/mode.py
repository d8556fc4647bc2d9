"""KUBERNETES_DELIVERY=direct: our Kubernetes Secret on the management cluster, written by the function itself.

The management cluster's Secrets API comes from GKE (pullsecret.delivery.direct.management_clusters, cached per
cluster); every write relies on the admission policy being installed (`KubeSecrets.ensure_guarded`, checked
before the probe and before a delete), and the Secret is probed, applied and deleted without the right to read
any Secret (pullsecret.delivery.direct.kubewrites).
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from typing import Any

from pullsecret.delivery.base import (
    Cleaned,
    Delivered,
    Desired,
    DryRun,
    Leaving,
    Stray,
    Where,
    Wiring,
)
from pullsecret.delivery.direct import admission_policy, kubesecret
from pullsecret.delivery.direct import doctor as doctor_direct
from pullsecret.delivery.direct.kubeapi import SecretsApi
from pullsecret.delivery.direct.kubewrites import KubeSecrets
from pullsecret.delivery.direct.management_clusters import ManagementClusters
from pullsecret.delivery.direct.operator_kubeconfig import ClusterApis, OperatorClusters
from pullsecret.delivery.direct.reports import WORDING, DirectData
from pullsecret.delivery.direct.settings import MODE, DirectSettings
from pullsecret.doctor.kit import DoctorCheck
from pullsecret.errors import AdapterError, OwnershipConflict, TransientError
from pullsecret.gke.api import GkeClusters
from pullsecret.logs import bind, log
from pullsecret.model import dockerconfig
from pullsecret.model.preconditions import Placement
from pullsecret.model.status_data import OwnData, StatusData
from pullsecret.retrying import Deadline

# What fleet cannot look for in this mode.
NOT_LISTABLE = (
    "Kubernetes Secrets whose Secret Manager secret is gone too are not looked for: the runtime identity may not "
    "get, list or watch Secrets (terraform/kubernetes/rbac.yaml grants create, patch and delete); with your own "
    "credentials: kubectl get secrets -A -l hyperfleet.io/resource-type=pull-secret"
)


@dataclass(frozen=True)
class DirectProbed:
    """Our live Secret as the dry-run probe saw it, and the Secrets API of the cluster it lives on."""

    secret: kubesecret.Probed
    api: SecretsApi
    kube: KubeSecrets
    placement: Placement

    @property
    def present(self) -> bool:
        return self.secret.live is not None

    @property
    def recorded_generation(self) -> int:
        return self.secret.recorded_generation

    @property
    def recorded_lineage(self) -> str | None:
        annotations = ((self.secret.live or {}).get("metadata") or {}).get("annotations") or {}
        return annotations.get(kubesecret.A_LINEAGE)

    def apply(self, desired: Desired, deadline: Deadline) -> Delivered:
        with log.step("kubernetes.apply_secret", namespace=desired.namespace, name=desired.name) as fields:
            applied = self.kube.apply(self.api, kubesecret.rendered(desired), deadline, self.secret)
            fields.update(written=applied.written, stale=applied.stale)
        return applied

    def dry_run(self, desired: Desired, *, store_writes: bool) -> DryRun:
        live, where = self.secret.live, f"{self.placement.management_cluster}, namespace {self.placement.namespace}"
        if live is None:
            return DryRun(True, [f"Kubernetes: would create Secret {desired.name} on {where}"])
        if kubesecret.differs(live, kubesecret.rendered(desired)) or store_writes:
            held = ((live.get("metadata") or {}).get("annotations") or {}).get(kubesecret.A_FINGERPRINT, "")[:12]
            return DryRun(True, [f"Kubernetes: would update Secret {desired.name} on {where} (it holds {held or '?'})"])
        return DryRun(False, [f"Kubernetes: Secret {desired.name} on {where} is as it should be"])


class DirectDelivery:
    """Probe, apply and delete our Secret through each management cluster's Secrets API; thread-safe."""

    mode = MODE
    wording = WORDING

    def __init__(self, clusters: ClusterApis, kube: KubeSecrets) -> None:
        self.clusters = clusters
        self.kube = kube

    def _guarded_api(self, placement: Placement, deadline: Deadline) -> SecretsApi:
        api = self.clusters.api_for(placement.management_cluster, deadline)
        self.kube.ensure_guarded(api, deadline)  # every write relies on the policy (and a delete to spare others')
        return api

    def probe(self, where: Where, deadline: Deadline) -> DirectProbed:
        api = self._guarded_api(where.placement, deadline)
        with log.step("kubernetes.probe_secret"):
            probed = self.kube.probe(api, where.placement.namespace, where.kube_name, deadline)
        return DirectProbed(secret=probed, api=api, kube=self.kube, placement=where.placement)

    def status_data(self, where: Where, applied: Delivered, *, stored_written: bool) -> OwnData:
        data: DirectData = {"kubernetes_resource_version": applied.revision}
        return data

    def after_transient(self, placement: Placement, error: TransientError) -> None:
        """An unreachable API server's endpoint or CA may have changed: the redelivery asks GKE again."""
        if error.service == "kubernetes" and error.reason == "Unreachable":
            self.clusters.invalidate(placement.management_cluster)

    def cleanup(self, leaving: Leaving, deadline: Deadline) -> Cleaned:
        placement = leaving.placement
        if placement is None:
            unknown: DirectData = {"kubernetes_cleanup": "placement unknown; nothing to delete"}
            return Cleaned(unknown, f"Kubernetes Secret {unknown['kubernetes_cleanup']}")
        where: StatusData = {
            "management_cluster": placement.management_cluster,
            "kubernetes_namespace": placement.namespace,
            "kubernetes_name": leaving.kube_name,
        }
        data = self._delete(leaving, placement, deadline)
        return Cleaned({**where, **data}, f"Kubernetes Secret {data['kubernetes_cleanup']}")

    def _delete(self, leaving: Leaving, placement: Placement, deadline: Deadline) -> DirectData:
        bind(management_cluster=placement.management_cluster)
        data: DirectData = {}
        api = self._guarded_api(placement, deadline)
        with log.step("kubernetes.delete_secret", namespace=placement.namespace, name=leaving.kube_name) as fields:
            try:
                deleted = self.kube.delete(api, placement.namespace, leaving.kube_name, deadline)
                data["kubernetes_cleanup"] = "deleted" if deleted else "absent"
            except OwnershipConflict as exc:
                log.warning(exc.message, operation="kubernetes.delete_secret")
                data["kubernetes_cleanup"] = "not managed by hyperfleet; left in place"
            fields["result"] = data["kubernetes_cleanup"]
        return data

    def inspect(self, placement: Placement, kube_name: str, deadline: Deadline) -> dict[str, Any]:
        """The live Secret read with the caller's own credentials (the runtime identity may not read Secrets)."""
        try:
            api = self.clusters.api_for(placement.management_cluster, deadline)
            live = self.kube.read(api, placement.namespace, kube_name, deadline)
        except AdapterError as exc:
            error = exc.message
            if exc.reason == "PermissionDenied":
                # By design: the function's runtime identity may not read Secrets (terraform/kubernetes/rbac.yaml).
                error += (
                    "; inspect reads the Secret with the credentials it runs with: use your own "
                    "(gcloud auth application-default login), not the function's service account"
                )
            return {"error": error}
        if live is None:
            return {"exists": False}
        return _shown(live)

    def strays(self, where: Where, deadline: Deadline) -> list[Stray]:
        """Nothing but our Secret is written in this mode, and it is the delivery itself."""
        return []

    def left_behind(self, cluster_id: str, leaving: Leaving, deadline: Deadline) -> list[Stray]:
        """A gone cluster's Kubernetes Secret: looked up by name; its removal is the gone secret's fix."""
        if leaving.placement is None:
            return []
        shown = self.inspect(leaving.placement, leaving.kube_name, deadline)
        where = f"Kubernetes Secret {leaving.placement.namespace}/{leaving.kube_name}"
        if shown.get("exists") is True:
            return [Stray("kubernetes-secret", where, f"cluster {cluster_id} is gone; removed with its secret")]
        if "error" in shown:
            why = (
                f"cluster {cluster_id} is gone; cannot tell whether it is there with these credentials "
                "(the runtime identity may not read Secrets); --fix deletes it by name if it is ours"
            )
            return [Stray("kubernetes-secret", where, why)]
        return []

    def fleet_notes(self) -> list[str]:
        return [NOT_LISTABLE]

    def doctor_checks(self) -> list[DoctorCheck]:
        return [DoctorCheck("gke", functools.partial(doctor_direct.management_clusters, clusters=self.clusters))]


def _shown(live: dict[str, Any]) -> dict[str, Any]:
    """What inspect shows of a live Secret: metadata, our annotations, the content's fingerprints (`_sensitive`:
    the strings the caller redacts from its output)."""
    metadata = live.get("metadata") or {}
    out: dict[str, Any] = {
        "exists": True,
        "resource_version": metadata.get("resourceVersion"),
        "labels": metadata.get("labels") or {},
        # Only our annotations: kubectl's last-applied-configuration would carry the data itself.
        "annotations": {k: v for k, v in (metadata.get("annotations") or {}).items() if k.startswith("hyperfleet.io/")},
        "type": live.get("type"),
    }
    raw = (live.get("data") or {}).get(kubesecret.KEY)
    try:
        secret = dockerconfig.parse(base64.b64decode(raw or ""), source="the Kubernetes Secret")
    except (dockerconfig.InvalidPullSecret, ValueError):
        out["content"] = "not a valid dockerconfigjson"
        return out
    out["content_fingerprint"] = secret.short_fingerprint
    out["registries"] = secret.registry_fingerprints()
    out["_sensitive"] = secret.sensitive_strings()
    return out


def build(wiring: Wiring) -> DirectDelivery:
    """The direct delivery of `wiring`'s settings: a GKE client (reading the cluster the operator's kubeconfig names
    with it, when its setting is given: pullsecret.delivery.direct.settings), the admission policy this release
    renders. Raises ConfigError when that kubeconfig is no longer usable."""
    settings, identity = wiring.settings, wiring.identity
    clusters: ClusterApis = ManagementClusters(
        GkeClusters(identity, settings.gke_emulator_host),
        identity,
        endpoint=settings.management_endpoint,
        vpc_egress=settings.vpc_egress,
    )
    own = settings.of(DirectSettings)
    kubeconfig = own.operator_kubeconfig
    if kubeconfig:
        clusters = OperatorClusters.from_kubeconfig(kubeconfig, clusters)
    return DirectDelivery(
        clusters,
        KubeSecrets(
            settings.field_manager,
            admission_policy.expected(
                identity_email=identity.email,
                namespace_pattern=settings.management_namespace_pattern.pattern,
                adapter_name=settings.adapter_name,
                secret_template=settings.kubernetes_secret_template,
                policy_name=own.admission_policy_name,
            ),
        ),
    )
