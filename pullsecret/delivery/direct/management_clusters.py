"""GKE management cluster → an authenticated Kubernetes API client, cached per cluster.

GKE's GetCluster (over REST: `gke.GkeClusters`) gives the endpoint and CA (or the DNS endpoint, trusted through the
system store), and `choose_endpoint` tells whether this function can reach that endpoint at all. The CA stays in memory
(the client's `ca_cert_data`): nothing is written to the temp folder, which Cloud Run holds in memory.
The bearer token is the runtime identity's access token, fetched for each request through the client's
`refresh_api_key_hook`, so an expiring token is refreshed before it is sent.
"""

from __future__ import annotations

import base64
import threading
import time
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc

from pullsecret import retrying
from pullsecret.clients import RuntimeIdentity
from pullsecret.delivery.direct.gke import ClusterAnswer, GkeClusters
from pullsecret.delivery.direct.kubeapi import SecretsApi
from pullsecret.errors import TerminalError, from_google, is_retryable_google
from pullsecret.retrying import Deadline

ENDPOINT_TTL_S = 3600.0
UNREACHABLE = "ManagementClusterUnreachable"
VPC_EGRESS_FIX = (
    "configure Direct VPC egress for the function (terraform variables vpc_network/vpc_subnetwork, which also "
    "set VPC_EGRESS=true)"
)


@dataclass(frozen=True)
class Endpoint:
    """Where to reach a control plane: https://host, with the cluster CA (PEM) or the system trust store."""

    host: str
    ca_pem: bytes | None


def choose_endpoint(cluster: ClusterAnswer, *, mode: str, vpc_egress: bool, what: str) -> Endpoint:
    """The endpoint this function can use for a GetCluster answer; TerminalError naming the fix when none.

    Fields (google.container.v1, https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation):
    - `controlPlaneEndpointsConfig.dnsEndpointConfig`: `allowExternalTraffic` false means the DNS
      endpoint takes no user traffic at all (only Google-managed services), whatever the caller's network.
    - `controlPlaneEndpointsConfig.ipEndpointsConfig`: `enabled` false turns IP access off;
      `enablePublicEndpoint` false leaves only the private endpoint, which is then `endpoint`.
      Older answers say the same with `privateClusterConfig.enablePrivateEndpoint`.
    A private endpoint is reachable only from the cluster's VPC, so only with VPC egress (`vpc_egress`).
    """
    dns = cluster.dns_endpoint
    if mode == "dns" and dns:
        if not cluster.dns_allow_external_traffic:
            raise TerminalError(
                f"{what}: its DNS endpoint {dns} does not allow external traffic "
                "(allow_external_traffic=false): enable external traffic on the DNS endpoint (the cluster's "
                "--enable-dns-access setting), or set MANAGEMENT_ENDPOINT=ip "
                f"(a private IP endpoint also needs VPC egress: {VPC_EGRESS_FIX})",
                reason=UNREACHABLE,
                service="gke",
            )
        return Endpoint(dns, None)
    dns_hint = (
        f", or set MANAGEMENT_ENDPOINT=dns (its DNS endpoint {dns} allows external traffic)"
        if dns and cluster.dns_allow_external_traffic
        else ", or enable its DNS endpoint with external traffic and set MANAGEMENT_ENDPOINT=dns"
    )
    if cluster.ip_enabled is False:
        raise TerminalError(
            f"{what}: its IP endpoints are disabled: set MANAGEMENT_ENDPOINT=dns "
            "(its DNS endpoint must allow external traffic)",
            reason=UNREACHABLE,
            service="gke",
        )
    if not cluster.endpoint or not cluster.ca_certificate:
        raise TerminalError(
            f"{what}: the cluster has no endpoint or CA certificate", reason="ManagementClusterNotReady", service="gke"
        )
    private_only = not cluster.ip_public if cluster.ip_public is not None else cluster.legacy_private_endpoint
    if private_only and not vpc_egress:
        raise TerminalError(
            f"{what}: its control plane has only a private endpoint ({cluster.endpoint}), which the function "
            f"reaches only from the cluster's VPC: {VPC_EGRESS_FIX}{dns_hint}",
            reason=UNREACHABLE,
            service="gke",
        )
    return Endpoint(cluster.endpoint, base64.b64decode(cluster.ca_certificate))


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
        from kubernetes.client.api_client import ApiClient
        from kubernetes.client.configuration import Configuration

        what = f"get management cluster {cluster_name}"

        def attempt() -> ClusterAnswer:
            return self._gke.get_cluster(cluster_name, timeout=deadline.call_timeout())

        try:
            cluster = retrying.call(
                attempt,
                predicate=is_retryable_google,
                deadline=deadline,
                on_give_up=lambda cause: from_google(cause, service="gke", what=what),
            )
        except gexc.NotFound:
            raise TerminalError(
                f"{what}: no such GKE cluster", reason="ManagementClusterNotFound", service="gke"
            ) from None
        except gexc.GoogleAPICallError as exc:
            raise from_google(exc, service="gke", what=what) from None

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
        # The Secret calls only: CoreV1Api would import 250 pydantic models on the first event (kubeapi).
        return _Entry(api=SecretsApi(ApiClient(config)), created=time.monotonic())
