"""choose_endpoint: which control-plane endpoint a GetCluster answer allows, and the fix named when none.

Each answer is a `google.container.v1` Cluster printed in proto3 JSON, as the REST form sends it, and read by the
adapter's own parser (`gke.parse_cluster`)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google.cloud.container_v1 import types as t
from google.protobuf import json_format

from pullsecret.errors import TerminalError
from pullsecret.gke.api import ClusterAnswer, parse_cluster
from pullsecret.gke.endpoints import Endpoint, choose_endpoint

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CP = t.ControlPlaneEndpointsConfig


def cluster(*, public: bool | None = True, dns: bool | None = True, legacy_private: bool = False) -> ClusterAnswer:
    endpoints = CP()
    if public is not None:
        endpoints.ip_endpoints_config = CP.IPEndpointsConfig(enabled=True, enable_public_endpoint=public)
    if dns is not None:
        endpoints.dns_endpoint_config = CP.DNSEndpointConfig(endpoint="gke-x.goog", allow_external_traffic=dns)
    answer = t.Cluster(
        endpoint="10.0.0.2",
        master_auth=t.MasterAuth(cluster_ca_certificate=base64.b64encode(CA).decode()),
        control_plane_endpoints_config=endpoints,
        private_cluster_config=t.PrivateClusterConfig(enable_private_endpoint=legacy_private),
    )
    return parse_cluster(json_format.MessageToJson(t.Cluster.pb(answer)).encode())


def test_usable_endpoints() -> None:
    assert choose_endpoint(cluster(), mode="ip", vpc_egress=False, what="c") == Endpoint("10.0.0.2", CA)
    assert choose_endpoint(cluster(), mode="dns", vpc_egress=False, what="c") == Endpoint("gke-x.goog", None)
    # dns mode on a cluster without a DNS endpoint keeps using the IP endpoint
    assert choose_endpoint(cluster(dns=None), mode="dns", vpc_egress=False, what="c").host == "10.0.0.2"
    assert choose_endpoint(cluster(public=False), mode="ip", vpc_egress=True, what="c").host == "10.0.0.2"
    assert choose_endpoint(cluster(public=None), mode="ip", vpc_egress=False, what="c").host == "10.0.0.2"


@pytest.mark.parametrize(
    ("shape", "mode", "fragments"),
    [
        ({"dns": False}, "dns", ["enable external traffic on the DNS endpoint", "MANAGEMENT_ENDPOINT=ip"]),
        ({"public": False}, "ip", ["only a private endpoint", "Direct VPC egress", "MANAGEMENT_ENDPOINT=dns"]),
        ({"public": False, "dns": False}, "ip", ["Direct VPC egress", "enable its DNS endpoint"]),
        ({"public": None, "legacy_private": True}, "ip", ["only a private endpoint", "VPC_EGRESS=true"]),
    ],
)
def test_unreachable_shapes_are_terminal_and_name_the_fix(
    shape: dict[str, Any], mode: str, fragments: list[str]
) -> None:
    with pytest.raises(TerminalError) as caught:
        choose_endpoint(cluster(**shape), mode=mode, vpc_egress=False, what="get management cluster c")
    assert caught.value.reason == "ManagementClusterUnreachable"
    for fragment in fragments:
        assert fragment in str(caught.value)
