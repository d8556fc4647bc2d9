"""Where one cluster's pull secret goes: its Secret Manager secret id and Kubernetes Secret name, and its `Target`.

Pure: the names come from the settings' templates and the cluster id, checked so that no API value can form a
name the services would refuse or the admission policy would not admit (InvalidCluster, terminal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pullsecret.delivery.base import Where
from pullsecret.model import preconditions
from pullsecret.model.names import DNS_SUBDOMAIN_RE, SECRET_ID_RE, kube_label_value, secret_name
from pullsecret.settings.common import Settings


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


def target_of(settings: Settings, cluster_id: str, cluster: dict[str, Any], act: preconditions.Act) -> Target:
    """The target of a cluster to provision; raises InvalidCluster."""
    secret_id, kube_name = names(settings, cluster_id)
    where = Where(
        cluster_id=cluster_id,
        secret_name=secret_name(act.project_id, secret_id),
        placement=act.placement,
        kube_name=kube_name,
    )
    return Target(cluster_id, str(cluster.get("name") or cluster_id), secret_id, where)
