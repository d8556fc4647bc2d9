"""The operator's own read-only identity on the management cluster (PULLSECRET_OPERATOR_KUBECONFIG) for what
`inspect` and `fleet` show of direct mode's Secret.

The function's runtime identity may not read Secrets (terraform/kubernetes/rbac.yaml), so the CLI run with it
cannot show what direct delivery wrote. With PULLSECRET_OPERATOR_KUBECONFIG naming a kubeconfig (the playground's
env file names one for a read-only operator; on GKE, `gcloud container clusters get-credentials` writes one with
the operator's own identity), the delivery reads the cluster that kubeconfig's current context names with it:
that context's cluster is the management cluster whose last name segment equals it (`mgmt-1`), or gcloud's
`gke_PROJECT_LOCATION_NAME`. Any other management cluster is read as before. The CLI only reads with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from pullsecret.errors import ConfigError
from pullsecret.retrying import Deadline

if TYPE_CHECKING:
    from pullsecret.delivery.direct.kubeapi import SecretsApi

ENV_NAME = "PULLSECRET_OPERATOR_KUBECONFIG"


def _matches(kube_cluster: str, management_cluster: str) -> bool:
    parts = management_cluster.split("/")  # projects/P/locations/L/clusters/C
    if len(parts) != 6:
        return False
    return kube_cluster in (parts[5], f"gke_{parts[1]}_{parts[3]}_{parts[5]}")


class ClusterApis(Protocol):
    """What direct mode asks of its management clusters (pullsecret.delivery.direct.management_clusters)."""

    def api_for(self, cluster_name: str, deadline: Deadline) -> SecretsApi: ...

    def invalidate(self, cluster_name: str) -> None: ...


class _ReadsClusters(Protocol):
    """A delivery that reads management clusters through `clusters` (direct mode's DirectDelivery)."""

    clusters: ClusterApis


class OperatorClusters:
    """ManagementClusters' `api_for` and `invalidate`: the kubeconfig's cluster with its identity, else `fallback`."""

    def __init__(self, kube_cluster: str, api: SecretsApi, fallback: ClusterApis) -> None:
        self._kube_cluster = kube_cluster
        self._api = api
        self._fallback = fallback

    def api_for(self, cluster_name: str, deadline: Deadline) -> SecretsApi:
        if _matches(self._kube_cluster, cluster_name):
            return self._api
        return self._fallback.api_for(cluster_name, deadline)

    def invalidate(self, cluster_name: str) -> None:
        self._fallback.invalidate(cluster_name)


def use(delivery: object, env: Mapping[str, str]) -> None:
    """Have a direct delivery read with the operator's kubeconfig, when one is named; raises ConfigError when it
    cannot be read. Other deliveries read no cluster: nothing to do."""
    path = (env.get(ENV_NAME) or "").strip()
    clusters = getattr(delivery, "clusters", None)
    if not path or clusters is None:
        return
    from kubernetes.config import list_kube_config_contexts, new_client_from_config
    from kubernetes.config.config_exception import ConfigException

    from pullsecret.delivery.direct.kubeapi import SecretsApi

    try:
        _, active = list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
        client = new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
    except (OSError, ConfigException, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{ENV_NAME} names no usable kubeconfig ({path}): {type(exc).__name__}") from None
    client.configuration.retries = False
    cast(_ReadsClusters, delivery).clusters = OperatorClusters(
        str(active["context"]["cluster"]), SecretsApi(client.configuration), clusters
    )
