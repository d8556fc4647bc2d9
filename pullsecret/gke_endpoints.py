"""A GKE cluster's control-plane endpoint and CA, as this function can reach it (the GKE API's GetCluster).

Shared by whatever the function calls on a GKE cluster's Kubernetes API: the management clusters of the direct
delivery (delivery/direct/management_clusters.py) and the regional cluster whose TokenRequest mints the adapter's
ServiceAccount tokens (satoken.py). It reads one cluster and decides which endpoint to use; it holds no client.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc

from pullsecret import retrying
from pullsecret.errors import TerminalError, from_google, is_retryable_google
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


def choose_endpoint(cluster: Any, *, mode: str, vpc_egress: bool, what: str) -> Endpoint:
    """The endpoint this function can use for a GetCluster answer; TerminalError naming the fix when none.

    Fields (google.container.v1, https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation):
    - `control_plane_endpoints_config.dns_endpoint_config`: `allow_external_traffic` false means the DNS
      endpoint takes no user traffic at all (only Google-managed services), whatever the caller's network.
    - `control_plane_endpoints_config.ip_endpoints_config`: `enabled` false turns IP access off;
      `enable_public_endpoint` false leaves only the private endpoint, which is then `cluster.endpoint`.
      Older answers say the same with `private_cluster_config.enable_private_endpoint`.
    A private endpoint is reachable only from the cluster's VPC, so only with VPC egress (`vpc_egress`).
    """
    endpoints = cluster.control_plane_endpoints_config
    dns = endpoints.dns_endpoint_config
    if mode == "dns" and dns.endpoint:
        if not dns.allow_external_traffic:
            raise TerminalError(
                f"{what}: its DNS endpoint {dns.endpoint} does not allow external traffic "
                "(allow_external_traffic=false): enable external traffic on the DNS endpoint (the cluster's "
                "--enable-dns-access setting), or set MANAGEMENT_ENDPOINT=ip "
                f"(a private IP endpoint also needs VPC egress: {VPC_EGRESS_FIX})",
                reason=UNREACHABLE,
                service="gke",
            )
        return Endpoint(dns.endpoint, None)
    ip = endpoints.ip_endpoints_config
    dns_hint = (
        f", or set MANAGEMENT_ENDPOINT=dns (its DNS endpoint {dns.endpoint} allows external traffic)"
        if dns.endpoint and dns.allow_external_traffic
        else ", or enable its DNS endpoint with external traffic and set MANAGEMENT_ENDPOINT=dns"
    )
    if "enabled" in ip and not ip.enabled:
        raise TerminalError(
            f"{what}: its IP endpoints are disabled: set MANAGEMENT_ENDPOINT=dns "
            "(its DNS endpoint must allow external traffic)",
            reason=UNREACHABLE,
            service="gke",
        )
    if not cluster.endpoint or not cluster.master_auth.cluster_ca_certificate:
        raise TerminalError(
            f"{what}: the cluster has no endpoint or CA certificate", reason="ManagementClusterNotReady", service="gke"
        )
    private_only = (
        not ip.enable_public_endpoint
        if "enable_public_endpoint" in ip
        else cluster.private_cluster_config.enable_private_endpoint
    )
    if private_only and not vpc_egress:
        raise TerminalError(
            f"{what}: its control plane has only a private endpoint ({cluster.endpoint}), which the function "
            f"reaches only from the cluster's VPC: {VPC_EGRESS_FIX}{dns_hint}",
            reason=UNREACHABLE,
            service="gke",
        )
    return Endpoint(cluster.endpoint, base64.b64decode(cluster.master_auth.cluster_ca_certificate))


def get_cluster(gke_client: Any, cluster_name: str, deadline: Deadline, *, what: str, not_found: str) -> Any:
    """GetCluster with our retries inside `deadline`; a missing cluster is a TerminalError with reason `not_found`."""

    def attempt() -> Any:
        return gke_client.get_cluster(name=cluster_name, retry=None, timeout=deadline.call_timeout())

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
