"""GKE management cluster → an authenticated Kubernetes API client, cached per cluster.

GKE's GetCluster (over REST: `gke.GkeClusters`, retried by `get_cluster`) gives the endpoint and CA (or the DNS
endpoint, trusted through the system store), and `choose_endpoint` tells whether this function can reach that endpoint
at all (both in pullsecret/gke/endpoints.py, shared with the ServiceAccount token's cluster). The CA stays in memory
(the client's `ca_cert_data`): nothing is written to the temp folder, which Cloud Run holds in memory.
The bearer token is the runtime identity's access token, fetched for each request through the client's
`refresh_api_key_hook`, so an expiring token is refreshed before it is sent.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from pullsecret.delivery.direct.kubeapi import SecretsApi
from pullsecret.gke.api import GkeClusters
from pullsecret.gke.endpoints import choose_endpoint, get_cluster
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.retrying import Deadline

ENDPOINT_TTL_S = 3600.0


@dataclass
class _Entry:
    api: SecretsApi
    created: float


class ManagementClusters:
    """Thread-safe cache of Kubernetes clients keyed by GKE cluster resource name."""

    def __init__(
        self,
        gke: GkeClusters,
        identity: RuntimeIdentity,
        *,
        endpoint: str = "ip",
        vpc_egress: bool = False,
        pool_size: int = 64,
    ) -> None:
        self._gke = gke
        self._identity = identity
        self._endpoint = endpoint
        self._vpc_egress = vpc_egress
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._building: dict[str, threading.Lock] = {}

    def api_for(self, cluster_name: str, deadline: Deadline) -> SecretsApi:
        """The Secrets API of the management cluster (built once, shared); raises Terminal/TransientError."""
        with self._lock:
            entry = self._entries.get(cluster_name)
            if entry is not None and time.monotonic() - entry.created < ENDPOINT_TTL_S:
                return entry.api
            building = self._building.setdefault(cluster_name, threading.Lock())
        # One builder per cluster; concurrent requests for the same cluster wait for it.
        with building:
            with self._lock:
                entry = self._entries.get(cluster_name)
                if entry is not None and time.monotonic() - entry.created < ENDPOINT_TTL_S:
                    return entry.api
            entry = self._build(cluster_name, deadline)
            with self._lock:
                self._entries[cluster_name] = entry
            return entry.api

    def invalidate(self, cluster_name: str) -> None:
        """Forget a cluster's endpoint (after TLS or connection failures: it may have rotated)."""
        with self._lock:
            self._entries.pop(cluster_name, None)

    def _build(self, cluster_name: str, deadline: Deadline) -> _Entry:
        from kubernetes.client.configuration import Configuration

        what = f"get management cluster {cluster_name}"

        cluster = get_cluster(self._gke, cluster_name, deadline, what=what, not_found="ManagementClusterNotFound")
        endpoint = choose_endpoint(cluster, mode=self._endpoint, vpc_egress=self._vpc_egress, what=what)
        config = Configuration()
        config.host = f"https://{endpoint.host}"
        if endpoint.ca_pem is not None:
            config.ca_cert_data = endpoint.ca_pem.decode()  # urllib3 loads PEM data from memory: no temp file
        config.verify_ssl = True
        config.connection_pool_maxsize = self._pool_size
        config.retries = False  # retries are ours (backoff with jitter inside the event deadline)
        identity = self._identity

        def refresh_token(configuration: Any) -> None:
            configuration.api_key["authorization"] = f"Bearer {identity.token()}"

        config.refresh_api_key_hook = refresh_token  # type: ignore[assignment]
        config.api_key["authorization"] = ""
        # The Secret calls only, on the REST layer: no generated API class, no ApiClient (kubeapi).
        return _Entry(api=SecretsApi(config), created=time.monotonic())
