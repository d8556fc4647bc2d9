"""A GKE cluster's control-plane endpoint and CA, as this function can reach it (the GKE API's GetCluster).

Shared by whatever the function calls on a GKE cluster's Kubernetes API: the management clusters of the direct
delivery (delivery/direct/management_clusters.py) and the regional cluster whose TokenRequest mints the adapter's
ServiceAccount tokens (satoken.py). It reads one cluster through GKE's REST GetCluster (gke.GkeClusters, retried
inside the caller's deadline) and decides which endpoint to use; it holds no client.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from google.api_core import exceptions as gexc

from pullsecret import retrying
from pullsecret.errors import TerminalError, from_google, is_retryable_google
from pullsecret.gke.api import ClusterAnswer, GkeClusters
from pullsecret.retrying import Deadline

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


def get_cluster(gke: GkeClusters, cluster_name: str, deadline: Deadline, *, what: str, not_found: str) -> ClusterAnswer:
    """GetCluster with our retries inside `deadline`; a missing cluster is a TerminalError with reason `not_found`."""

    def attempt() -> ClusterAnswer:
        return gke.get_cluster(cluster_name, timeout=deadline.call_timeout())

    try:
        return retrying.call(
            attempt,
            predicate=is_retryable_google,
            deadline=deadline,
            on_give_up=lambda cause: from_google(cause, service="gke", what=what),
        )
    except gexc.NotFound:
        raise TerminalError(f"{what}: no such GKE cluster", reason=not_found, service="gke") from None
    except gexc.GoogleAPICallError as exc:
        raise from_google(exc, service="gke", what=what) from None
