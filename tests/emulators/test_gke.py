"""The GKE emulator driven by the official ClusterManagerClient over real gRPC."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc
from google.cloud import container_v1

from emulators.faults import FaultBook
from emulators.gke import GkeEmulator
from tests.emulators.gke_client import CA_PEM, NAME, NUMBER, PROJECT, SA, TOKENS, make_client


@pytest.fixture
def book() -> FaultBook:
    return FaultBook()


@pytest.fixture
def emulator(book: FaultBook) -> Iterator[GkeEmulator]:
    emu = GkeEmulator(book)
    emu.add_project(PROJECT, NUMBER)
    emu.add_cluster(NAME, endpoint="127.0.0.1:6443", ca_pem=CA_PEM, dns_endpoint="gke-abc.us-central1.gke.goog")
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def client(emulator: GkeEmulator) -> container_v1.ClusterManagerClient:
    return make_client(emulator.address)


def test_get_cluster_gives_endpoint_ca_and_dns_endpoint(client: container_v1.ClusterManagerClient) -> None:
    cluster = client.get_cluster(name=NAME)
    assert cluster.endpoint == "127.0.0.1:6443"
    assert base64.b64decode(cluster.master_auth.cluster_ca_certificate) == CA_PEM
    assert cluster.control_plane_endpoints_config.dns_endpoint_config.endpoint == "gke-abc.us-central1.gke.goog"
    assert cluster.status == container_v1.Cluster.Status.RUNNING
    assert cluster.location == "us-central1" and cluster.name == "mgmt-1"
    assert cluster.self_link.endswith(f"/projects/{PROJECT}/locations/us-central1/clusters/mgmt-1")


def test_project_number_and_legacy_fields(client: container_v1.ClusterManagerClient) -> None:
    by_number = client.get_cluster(name=f"projects/{NUMBER}/locations/us-central1/clusters/mgmt-1")
    assert by_number.endpoint == "127.0.0.1:6443"
    legacy = client.get_cluster(
        request=container_v1.GetClusterRequest(project_id=PROJECT, zone="us-central1", cluster_id="mgmt-1")
    )
    assert legacy.id == by_number.id


def test_no_dns_endpoint_when_not_configured(emulator: GkeEmulator, client: container_v1.ClusterManagerClient) -> None:
    emulator.add_cluster(f"projects/{PROJECT}/locations/us-east1-b/clusters/zonal", endpoint="10.0.0.1", ca_pem=CA_PEM)
    cluster = client.get_cluster(name=f"projects/{PROJECT}/locations/us-east1-b/clusters/zonal")
    assert "dns_endpoint_config" not in cluster.control_plane_endpoints_config
    assert "/zones/us-east1-b/" in cluster.self_link


def test_control_plane_shapes_use_the_real_fields(
    emulator: GkeEmulator, client: container_v1.ClusterManagerClient
) -> None:
    public = client.get_cluster(name=NAME).control_plane_endpoints_config
    assert public.ip_endpoints_config.enable_public_endpoint and public.ip_endpoints_config.public_endpoint
    assert public.dns_endpoint_config.allow_external_traffic is True

    emulator.add_cluster(
        NAME, endpoint="10.0.0.2", ca_pem=CA_PEM, dns_endpoint="gke-abc.goog", dns_allow_external_traffic=False,
        public_endpoint=False,
    )  # fmt: skip
    private = client.get_cluster(name=NAME)
    ip = private.control_plane_endpoints_config.ip_endpoints_config
    assert "enable_public_endpoint" in ip and not ip.enable_public_endpoint  # explicitly false, not unset
    assert ip.private_endpoint == private.endpoint == "10.0.0.2" and not ip.public_endpoint
    assert private.private_cluster_config.enable_private_endpoint is True
    dns = private.control_plane_endpoints_config.dns_endpoint_config
    assert "allow_external_traffic" in dns and not dns.allow_external_traffic

    emulator.add_cluster(NAME, endpoint="10.0.0.2", ca_pem=CA_PEM, public_endpoint=False, legacy_private_config=True)
    legacy = client.get_cluster(name=NAME)
    assert "ip_endpoints_config" not in legacy.control_plane_endpoints_config
    assert legacy.private_cluster_config.enable_private_endpoint and legacy.endpoint == "10.0.0.2"

    emulator.add_cluster(NAME, endpoint="10.0.0.2", ca_pem=CA_PEM, dns_endpoint="gke-abc.goog", ip_endpoints=False)
    dns_only = client.get_cluster(name=NAME)
    assert not dns_only.control_plane_endpoints_config.ip_endpoints_config.enabled and dns_only.endpoint == ""

    status, body = emulator.handle_admin(
        "PUT", "/clusters", {"name": NAME, "endpoint": "x", "ca_pem": CA_PEM.decode(), "public_endpoint": False}
    )
    assert status == 200 and body[0]["public_endpoint"] is False
    bad = {"name": NAME, "endpoint": "x", "ca_pem": CA_PEM.decode(), "public_endpoint": "no"}
    assert emulator.handle_admin("PUT", "/clusters", bad)[0] == 400


def test_not_found_and_invalid(client: container_v1.ClusterManagerClient) -> None:
    wrong_location = f"projects/{PROJECT}/locations/us-central1-a/clusters/mgmt-1"
    with pytest.raises(gexc.NotFound, match=f"Not found: {wrong_location}"):
        client.get_cluster(name=wrong_location, retry=None)
    with pytest.raises(gexc.NotFound):  # projects are separate namespaces
        client.get_cluster(name="projects/other-project/locations/us-central1/clusters/mgmt-1", retry=None)
    with pytest.raises(gexc.InvalidArgument):
        client.get_cluster(name="clusters/mgmt-1", retry=None)
    with pytest.raises(gexc.InvalidArgument):
        client.get_cluster(request=container_v1.GetClusterRequest(project_id=PROJECT, zone="us-central1"))


def test_faults_and_counters(client: container_v1.ClusterManagerClient, book: FaultBook) -> None:
    book.add({"service": "gke", "method": "GetCluster", "code": "UNAVAILABLE", "count": 1})
    with pytest.raises(gexc.ServiceUnavailable):
        client.get_cluster(name=NAME, retry=None)
    assert client.get_cluster(name=NAME, retry=None).endpoint
    book.add({"service": "gke", "method": "*", "code": "PERMISSION_DENIED", "rate": 1.0})
    with pytest.raises(gexc.PermissionDenied):
        client.get_cluster(name=NAME, retry=None)
    book.clear()
    book.add({"service": "gke", "method": "GetCluster", "code": "timeout", "count": 1})
    start = time.monotonic()
    with pytest.raises(gexc.DeadlineExceeded):
        client.get_cluster(name=NAME, retry=None, timeout=0.3)
    assert time.monotonic() - start < 5
    assert book.calls()["gke"]["GetCluster"] == 4
    assert book.faults_injected()["gke"]["GetCluster"] == 3


def test_auth_and_iam(book: FaultBook) -> None:
    emu = GkeEmulator(book, authenticate=TOKENS.get)
    emu.add_cluster(NAME, endpoint="127.0.0.1:6443", ca_pem=CA_PEM)
    emu.start()
    try:
        with pytest.raises(gexc.Unauthenticated):
            make_client(emu.address).get_cluster(name=NAME, retry=None)
        with pytest.raises(gexc.Unauthenticated):
            make_client(emu.address, "nope").get_cluster(name=NAME, retry=None)
        assert make_client(emu.address, "tok-b").get_cluster(name=NAME).endpoint  # no grants yet: open
        emu.grant(PROJECT, SA)
        assert make_client(emu.address, "tok-a").get_cluster(name=NAME).endpoint
        with pytest.raises(gexc.PermissionDenied, match=r"container\.clusters\.get"):
            make_client(emu.address, "tok-b").get_cluster(name=NAME, retry=None)
    finally:
        emu.stop()


def test_admin_routes(emulator: GkeEmulator, client: container_v1.ClusterManagerClient) -> None:
    name = f"projects/{NUMBER}/locations/europe-west1/clusters/mgmt-2"
    status, clusters = emulator.handle_admin(
        "PUT", "/clusters", {"name": name, "endpoint": "127.0.0.1:7443", "ca_pem": CA_PEM.decode()}
    )
    assert status == 200 and len(clusters) == 2
    assert client.get_cluster(name=f"projects/{PROJECT}/locations/europe-west1/clusters/mgmt-2").endpoint == (
        "127.0.0.1:7443"
    )
    assert emulator.handle_admin("PUT", "/clusters", {"name": "bad", "endpoint": "x", "ca_pem": "x"})[0] == 400
    assert emulator.handle_admin("PUT", "/clusters", {"name": name})[0] == 400
    assert emulator.handle_admin("GET", "/clusters", None)[1][0]["ca_pem"] == CA_PEM.decode()
    assert emulator.handle_admin("POST", "/iam", {"project": PROJECT, "identity": SA})[0] == 200
    [owner] = emulator.state()["iam"]
    assert (owner["member"], owner["role"], owner["resource"]) == (SA, "roles/owner", f"projects/{NUMBER}")
    assert emulator.handle_admin("POST", "/reset", None)[0] == 200
    assert emulator.state()["clusters"] == []
    with pytest.raises(gexc.NotFound):
        client.get_cluster(name=NAME, retry=None)
    assert emulator.handle_admin("DELETE", "/clusters", None)[0] == 404
