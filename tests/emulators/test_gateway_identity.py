"""The gateway's machine identity in front of the HyperFleet emulator, and the Pull Secret Service's TokenReview.

Tokens are minted with the official `kubernetes` client (TokenRequest) at a Kubernetes emulator; the gateway and
the service review them over real HTTPS TokenReview under their own credentials; callers use plain HTTP. Rules:
emulators/hyperfleet/gateway.py (hyperfleet-infra helm/hyperfleet-gateway after 5da6143) and
emulators/pullsecretservice/access.py (the DDR's TokenReview).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client

from emulators.faults import FaultBook
from emulators.hyperfleet import HyperFleetEmulator, Tenancy
from emulators.hyperfleet.gateway import GatewayConfig
from emulators.idtoken import IdTokenIssuer, TrustedIssuer
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.delegated import TokenReviewer
from emulators.pullsecretservice import PullSecretServiceEmulator

RUNTIME = "hf-pullsecret-run@proj.iam.gserviceaccount.com"
RUNTIME_TOKEN = "tok-runtime"
NS = "hyperfleet"
ADAPTER, STRANGER = "pullsecret-adapter", "some-other-component"
CLUSTER = "c-gateway-1"
PSS_AUDIENCE = "pull-secret-service"
HUMAN_ISSUER = "https://idp.example.com/realms/hyperfleet"


@dataclass
class World:
    kube: KubernetesEmulator
    hyperfleet: HyperFleetEmulator
    pss: PullSecretServiceEmulator
    reviewer: TokenReviewer
    ca_file: Path
    humans: IdTokenIssuer

    def mint(self, name: str = ADAPTER, audience: str = "hyperfleet-api", seconds: int = 600) -> str:
        config = client.Configuration(
            host=f"https://{self.kube.address}",
            ssl_ca_cert=str(self.ca_file),
            api_key={"authorization": f"Bearer {RUNTIME_TOKEN}"},
        )
        core = client.CoreV1Api(client.ApiClient(config))
        spec = client.V1TokenRequestSpec(audiences=[audience], expiration_seconds=seconds)
        token: str = core.create_namespaced_service_account_token(
            name, NS, client.AuthenticationV1TokenRequest(spec=spec)
        ).status.token
        return token

    def get(self, authorization: str | None, **headers: str) -> requests.Response:
        if authorization is not None:
            headers["Authorization"] = authorization
        return requests.get(f"{self.hyperfleet.url}/api/hyperfleet/v1/clusters/{CLUSTER}", headers=headers, timeout=10)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    book = FaultBook()
    kube = KubernetesEmulator(book, authenticate={RUNTIME_TOKEN: RUNTIME}.get)
    kube.start()
    hyperfleet = HyperFleetEmulator(book, token="hf-opaque-token")
    hyperfleet.start()
    pss = PullSecretServiceEmulator(book, registry_hosts=lambda: {})
    pss.start()
    ca_file = Path(tmp_path_factory.mktemp("kube")) / "ca.pem"
    ca_file.write_bytes(kube.ca_pem)
    try:
        yield World(
            kube, hyperfleet, pss, TokenReviewer(kube.reviewer(NS, "hyperfleet-gateway")), ca_file, IdTokenIssuer()
        )
    finally:
        pss.stop()
        hyperfleet.stop()
        kube.stop()


@pytest.fixture
def world(running: World) -> World:
    kube = running.kube
    kube.reset()
    running.reviewer = TokenReviewer(kube.reviewer(NS, "hyperfleet-gateway"))  # the same token after reset
    for name in (ADAPTER, STRANGER):
        kube.service_accounts.add_service_account(NS, name)
    kube.grant(RUNTIME, namespace=NS, verbs=("create",), resources=("serviceaccounts/token",))
    running.hyperfleet.reset()
    running.hyperfleet.seed_cluster(CLUSTER, {"name": CLUSTER})
    running.hyperfleet.set_gateway(gateway(running))
    return running


def gateway(world: World, **changes: Any) -> GatewayConfig:
    humans = (TrustedIssuer(HUMAN_ISSUER, "hyperfleet-api", world.humans.jwks, "email"),)
    values: dict[str, Any] = {
        "namespace": NS,
        "allowed_service_accounts": (ADAPTER, "clusters-hyperfleet-sentinel"),
        "humans": humans,
        **changes,
    }
    return GatewayConfig(world.reviewer, **values)


def assert_bare_401(answer: requests.Response) -> None:
    assert answer.status_code == 401
    assert answer.content == b""  # Authorino's denial: no problem+json, no HyperFleet code
    assert 'ServiceAccount realm="hyperfleet-components"' in answer.headers["WWW-Authenticate"]
    assert answer.headers["x-ext-auth-reason"]


def test_an_allowed_service_account_reads_through_the_gateway(world: World) -> None:
    answer = world.get(f"ServiceAccount {world.mint()}")
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] == CLUSTER
    assert world.hyperfleet.gateway is not None
    assert world.hyperfleet.gateway.admitted == [f"system:serviceaccount:{NS}:{ADAPTER}"]


def test_without_the_gateway_the_api_keeps_its_own_authentication(world: World) -> None:
    world.hyperfleet.set_gateway(None)
    refused = world.get(f"ServiceAccount {world.mint()}")
    assert refused.status_code == 401 and refused.json()["code"] == "HYPERFLEET-AUT-001"
    assert world.get("Bearer hf-opaque-token").status_code == 200


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer hf-opaque-token", "Token abc", "ServiceAccount ", "ServiceAccount not-a-token"],
)
def test_anything_but_a_reviewed_token_is_a_bare_401(world: World, authorization: str | None) -> None:
    assert_bare_401(world.get(authorization))


def test_a_token_for_another_audience_is_a_bare_401(world: World) -> None:
    assert_bare_401(world.get(f"ServiceAccount {world.mint(audience=PSS_AUDIENCE)}"))
    # the same token is fine when the gateway's audience is that one
    world.hyperfleet.set_gateway(gateway(world, audience=PSS_AUDIENCE))
    assert world.get(f"ServiceAccount {world.mint(audience=PSS_AUDIENCE)}").status_code == 200


def test_an_expired_token_is_a_bare_401(world: World) -> None:
    token = world.mint()
    world.kube.service_accounts.advance(600)
    assert_bare_401(world.get(f"ServiceAccount {token}"))


def test_an_account_off_the_allow_list_is_forbidden_without_a_body(world: World) -> None:
    for token in (world.mint(name=STRANGER),):
        answer = world.get(f"ServiceAccount {token}")
        assert answer.status_code == 403 and answer.content == b""
        assert answer.headers["x-ext-auth-reason"] == "Unauthorized"
    # Exact names only, in the gateway's namespace only.
    world.hyperfleet.set_gateway(gateway(world, allowed_service_accounts=("pullsecret",)))
    assert world.get(f"ServiceAccount {world.mint()}").status_code == 403
    world.hyperfleet.set_gateway(gateway(world, namespace="elsewhere"))
    assert world.get(f"ServiceAccount {world.mint()}").status_code == 403


def test_identity_headers_the_caller_sends_are_stripped(world: World) -> None:
    world.hyperfleet.set_tenancy(Tenancy())
    token = world.mint()
    # A machine caller is a system identity because the gateway says so, whatever it claims itself.
    forged = {"X-HyperFleet-System": "false", "X-HyperFleet-Org": "victim-org", "x-tenant-org": "victim-org"}
    assert world.get(f"ServiceAccount {token}", **forged).status_code == 200
    # A human's forged tenant header never reaches the API: the API's tenant middleware (dev configuration, which
    # reads X-HyperFleet-Org, not the gateway's x-tenant-org) finds none and refuses with its own 403.
    now = int(time.time())
    human = world.humans.mint(
        {
            "iss": HUMAN_ISSUER,
            "aud": "hyperfleet-api",
            "email": "a@example.com",
            "org_id": "o-1",
            "iat": now,
            "exp": now + 300,
        }
    )
    refused = world.get(f"Bearer {human}", **{"X-HyperFleet-Org": "victim-org"})
    assert refused.status_code == 403
    assert refused.json()["detail"] == 'required tenant header "X-HyperFleet-Org" is missing'
    world.hyperfleet.set_gateway(gateway(world, allowed_service_accounts=("nobody",)))
    # A forged system header does not get a refused caller anywhere either.
    answer = world.get(f"ServiceAccount {token}", **{"X-HyperFleet-System": "true"})
    assert answer.status_code == 403 and answer.content == b""


def test_a_human_bearer_needs_a_tenant_claim(world: World) -> None:
    now = int(time.time())
    claims = {"iss": HUMAN_ISSUER, "aud": "hyperfleet-api", "email": "alice@example.com", "iat": now, "exp": now + 300}
    without = world.humans.mint(claims)
    answer = world.get(f"Bearer {without}")
    assert answer.status_code == 403 and answer.content == b""
    assert world.get(f"Bearer {world.humans.mint({**claims, 'org_id': 'org-1'})}").status_code == 200


def test_in_edge_and_api_mode_the_api_sees_the_gateways_wristband(world: World) -> None:
    world.hyperfleet.set_gateway(gateway(world, mode="EDGE+API"))
    assert world.get(f"ServiceAccount {world.mint()}").status_code == 200
    assert world.hyperfleet.identities[-1] == f"system:serviceaccount:{NS}:{ADAPTER}"
    assert_bare_401(world.get("Bearer hf-opaque-token"))


def test_a_lost_database_is_a_503_svc_001_behind_the_gateway_after_its_retries(world: World) -> None:
    world.hyperfleet.lose_database()
    answer = world.get(f"ServiceAccount {world.mint()}")
    assert answer.status_code == 503
    problem = answer.json()
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert problem["code"] == "HYPERFLEET-SVC-001" and problem["detail"] == "Database connection unavailable"
    assert problem["type"] == "https://api.hyperfleet.io/errors/service-unavailable"
    assert [op for op, *_ in world.hyperfleet.served()][-4:] == ["getCluster"] * 4 or len(
        world.hyperfleet.served()
    ) >= 1


def test_the_pull_secret_service_reviews_tokens_for_its_own_audience(world: World) -> None:
    url = f"{world.pss.url}/v1/clusters/cls-abc123def456/pull-secrets"
    adapter = f"system:serviceaccount:{NS}:{ADAPTER}"
    world.pss.review_service_account_tokens(world.reviewer, audience=PSS_AUDIENCE, accounts=[adapter])
    try:

        def call(token: str) -> requests.Response:
            return requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)

        assert call(world.mint(audience=PSS_AUDIENCE)).status_code == 404  # authenticated: no such pull secret
        wrong = call(world.mint(audience="hyperfleet-api"))
        assert wrong.status_code == 401 and wrong.json()["code"] == "HYPERFLEET-AUT-002"
        stranger = call(world.mint(name=STRANGER, audience=PSS_AUDIENCE))
        assert stranger.status_code == 403 and stranger.json()["code"] == "HYPERFLEET-AUZ-001"
    finally:
        world.pss.review_service_account_tokens(None, audience="")


def test_the_admin_api_turns_the_gateway_on_and_off(world: World) -> None:
    admin = f"{world.hyperfleet.url}/_emulator/gateway"
    world.hyperfleet.set_gateway(None)
    endpoint = world.reviewer.endpoint
    kubernetes = {"url": endpoint.url, "ca_pem": endpoint.ca_pem.decode(), "token": endpoint.token}
    body = {"kubernetes": kubernetes, "namespace": NS, "allowed_service_accounts": [ADAPTER], "mode": "EDGE"}
    assert requests.put(admin, json={**body, "mode": "EDGE+NOPE"}, timeout=10).status_code == 400
    assert requests.put(admin, json=body, timeout=10).json()["allowed_service_accounts"] == [ADAPTER]
    assert world.get(f"ServiceAccount {world.mint()}").status_code == 200
    assert requests.get(admin, timeout=10).json()["admitted"] == [f"system:serviceaccount:{NS}:{ADAPTER}"]
    assert requests.delete(admin, timeout=10).json() == {"gateway": None}
    assert world.get(f"ServiceAccount {world.mint()}").json()["code"] == "HYPERFLEET-AUT-001"
