"""The GKE emulator's REST form driven by the official ClusterManagerClient over real HTTP (transport="rest"), and
by the adapter's own GetCluster (`pullsecret.gke.api`): the same answers as the gRPC form."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import container_v1
from google.oauth2.credentials import Credentials

from emulators.faults import FaultBook
from emulators.gke import GkeEmulator
from pullsecret.gke.api import ClusterAnswer, GkeClusters
from pullsecret.identity.google import RuntimeIdentity
from tests.emulators.gke_client import CA_PEM, NAME, NUMBER, PROJECT, SA, TOKENS, make_client

PRIVATE = f"projects/{PROJECT}/locations/us-central1/clusters/private-1"
LEGACY = f"projects/{PROJECT}/locations/us-central1/clusters/legacy-1"


def rest_client(emulator: GkeEmulator, token: str) -> container_v1.ClusterManagerClient:
    return container_v1.ClusterManagerClient(
        transport="rest",
        credentials=Credentials(token=token),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": f"http://{emulator.rest_address}"},
    )


@pytest.fixture
def book() -> FaultBook:
    return FaultBook()


@pytest.fixture
def emulator(book: FaultBook) -> Iterator[GkeEmulator]:
    emu = GkeEmulator(book, authenticate=TOKENS.get)
    emu.add_project(PROJECT, NUMBER)
    emu.add_cluster(NAME, endpoint="127.0.0.1:6443", ca_pem=CA_PEM, dns_endpoint="gke-abc.us-central1.gke.goog")
    emu.add_cluster(PRIVATE, endpoint="10.0.0.2", ca_pem=CA_PEM, dns_endpoint="gke-p.goog", public_endpoint=False)
    emu.add_cluster(LEGACY, endpoint="10.0.0.3", ca_pem=CA_PEM, public_endpoint=False, legacy_private_config=True)
    emu.grant(PROJECT, SA)
    emu.start()
    yield emu
    emu.stop()


class Token(RuntimeIdentity):
    """A fixed access token (the emulator's TOKENS), as the metadata server would issue it."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token

    def token(self) -> str:
        return self._token


@pytest.mark.parametrize("name", [NAME, PRIVATE, LEGACY])
def test_rest_and_grpc_forms_answer_the_same_cluster(emulator: GkeEmulator, name: str) -> None:
    channel_client = make_client(emulator.address, "tok-a")
    assert rest_client(emulator, "tok-a").get_cluster(name=name) == channel_client.get_cluster(name=name)


def test_the_adapter_reads_what_the_official_client_reads(emulator: GkeEmulator) -> None:
    cluster = rest_client(emulator, "tok-a").get_cluster(name=PRIVATE)
    answer = GkeClusters(Token("tok-a"), emulator.rest_address).get_cluster(PRIVATE, timeout=5)
    assert answer == ClusterAnswer(
        endpoint=cluster.endpoint,
        ca_certificate=cluster.master_auth.cluster_ca_certificate,
        dns_endpoint="gke-p.goog",
        dns_allow_external_traffic=True,
        ip_enabled=True,
        ip_public=False,
        legacy_private_endpoint=True,
    )
    legacy = GkeClusters(Token("tok-a"), emulator.rest_address).get_cluster(LEGACY, timeout=5)
    assert (legacy.ip_enabled, legacy.ip_public, legacy.legacy_private_endpoint, legacy.dns_endpoint) == (
        None,
        None,
        True,
        "",
    )


def test_errors_carry_googles_json_body_and_the_grpc_forms_codes(emulator: GkeEmulator) -> None:
    wrong = f"projects/{PROJECT}/locations/us-central1-a/clusters/mgmt-1"
    with pytest.raises(gexc.NotFound, match=f"Not found: {wrong}"):
        rest_client(emulator, "tok-a").get_cluster(name=wrong, retry=None)
    with pytest.raises(gexc.Forbidden, match=r"container\.clusters\.get"):  # the REST client maps the HTTP status
        rest_client(emulator, "tok-b").get_cluster(name=NAME, retry=None)
    for headers in ({}, {"Authorization": "Bearer nope"}):  # no token, a token the metadata server never issued
        answer = requests.get(f"http://{emulator.rest_address}/v1/{NAME}", headers=headers, timeout=5)
        assert answer.status_code == 401
        assert answer.json()["error"]["status"] == "UNAUTHENTICATED"
    # `$alt=json;enum-encoding=int` (what the official client asks for) prints enums as numbers, else as names.
    with_token = {"Authorization": "Bearer tok-a"}
    plain = requests.get(f"http://{emulator.rest_address}/v1/{NAME}", headers=with_token, timeout=5).json()
    numeric = requests.get(
        f"http://{emulator.rest_address}/v1/{NAME}",
        params={"$alt": "json;enum-encoding=int"},
        headers=with_token,
        timeout=5,
    ).json()
    assert (plain["status"], numeric["status"]) == ("RUNNING", 2)
    assert requests.get(f"http://{emulator.rest_address}/v1/clusters/x", timeout=5).status_code == 404
    # The adapter's client names the same codes the gRPC client did (they reach status messages).
    adapter = GkeClusters(Token("tok-b"), emulator.rest_address)
    with pytest.raises(gexc.PermissionDenied) as denied:
        adapter.get_cluster(NAME, timeout=5)
    assert denied.value.grpc_status_code is not None and denied.value.grpc_status_code.name == "PERMISSION_DENIED"
    with pytest.raises(gexc.NotFound):
        GkeClusters(Token("tok-a"), emulator.rest_address).get_cluster(wrong, timeout=5)


def test_faults_and_counters_are_shared_with_the_grpc_form(emulator: GkeEmulator, book: FaultBook) -> None:
    adapter = GkeClusters(Token("tok-a"), emulator.rest_address)
    book.add({"service": "gke", "method": "GetCluster", "code": "UNAVAILABLE", "count": 1})
    with pytest.raises(gexc.ServiceUnavailable):
        adapter.get_cluster(NAME, timeout=5)
    book.add({"service": "gke", "method": "GetCluster", "code": "429", "count": 1})
    with pytest.raises(gexc.TooManyRequests):
        adapter.get_cluster(NAME, timeout=5)
    book.add({"service": "gke", "method": "GetCluster", "code": "reset", "count": 1})
    with pytest.raises(Exception) as reset:  # a transport error, whichever urllib3 raises
        adapter.get_cluster(NAME, timeout=5)
    assert type(reset.value).__module__.startswith("urllib3")
    assert adapter.get_cluster(NAME, timeout=5).endpoint == "127.0.0.1:6443"
    assert make_client(emulator.address, "tok-a").get_cluster(name=NAME).endpoint
    assert book.calls()["gke"]["GetCluster"] == 5
    assert book.faults_injected()["gke"]["GetCluster"] == 3
