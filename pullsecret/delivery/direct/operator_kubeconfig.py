"""The operator's own read-only identity on a management cluster (PULLSECRET_OPERATOR_KUBECONFIG), for what
`inspect` and `fleet` show of direct mode's Secret.

The function's runtime identity may not read Secrets (terraform/kubernetes/rbac.yaml), so the CLI run with it
cannot show what direct delivery wrote. With PULLSECRET_OPERATOR_KUBECONFIG naming a kubeconfig (the playground's
env file names one for a read-only operator; on GKE, `gcloud container clusters get-credentials` writes one with
the operator's own identity), the delivery reads the cluster that kubeconfig's current context names with it:
that context's cluster is the management cluster whose last name segment equals it (`mgmt-1`), or gcloud's
`gke_PROJECT_LOCATION_NAME`. Any other management cluster is reached through GKE as before.

The setting is this mode's (pullsecret.delivery.direct.settings reads and checks it); the operator CLI hands it only
to the commands that read (`inspect`, `fleet` without `--fix`): writes and the doctor never use it.
"""

from __future__ import annotations

from typing import Protocol

from pullsecret.delivery.direct.kubeapi import SecretsApi
from pullsecret.delivery.direct.settings import load
from pullsecret.retrying import Deadline


class ClusterApis(Protocol):
    """What direct mode asks of its management clusters (ManagementClusters, or OperatorClusters over it)."""

    def api_for(self, cluster_name: str, deadline: Deadline) -> SecretsApi: ...

    def invalidate(self, cluster_name: str) -> None: ...


def matches(kube_cluster: str, management_cluster: str) -> bool:
    """Whether a kubeconfig's cluster name is this management cluster (`projects/P/locations/L/clusters/C`)."""
    parts = management_cluster.split("/")
    if len(parts) != 6:
        return False
    return kube_cluster in (parts[5], f"gke_{parts[1]}_{parts[3]}_{parts[5]}")


class OperatorClusters:
    """ClusterApis: the kubeconfig's cluster read with its identity, any other through `fallback`."""

    def __init__(self, kube_cluster: str, api: SecretsApi, fallback: ClusterApis) -> None:
        self._kube_cluster = kube_cluster
        self._api = api
        self._fallback = fallback

    @classmethod
    def from_kubeconfig(cls, path: str, fallback: ClusterApis) -> OperatorClusters:
        """Raises ConfigError when `path` is no usable kubeconfig."""
        cluster, client = load(path)
        return cls(cluster, SecretsApi(client.configuration), fallback)

    def api_for(self, cluster_name: str, deadline: Deadline) -> SecretsApi:
        if matches(self._kube_cluster, cluster_name):
            return self._api
        return self._fallback.api_for(cluster_name, deadline)

    def invalidate(self, cluster_name: str) -> None:
        self._fallback.invalidate(cluster_name)
