"""Google ID tokens across the stack: the metadata emulator signs them, the HyperFleet emulator verifies them
(signature, issuer, audience, expiry, identity) as the API's JWT handler does (emulators/idtoken.py)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest
import requests

from emulators.faults import FaultBook
from emulators.hyperfleet import HyperFleetEmulator
from emulators.metadata import MetadataEmulator

SA = "pullsecret-runtime@hf-demo-project.iam.gserviceaccount.com"
IDENTITY = "/computeMetadata/v1/instance/service-accounts/default/identity"
CLUSTER = "/api/hyperfleet/v1/clusters/cls-abc123"
World = tuple[MetadataEmulator, HyperFleetEmulator]


@pytest.fixture
def world() -> Iterator[World]:
    book = FaultBook()
    mds, hf = MetadataEmulator(book, service_account=SA), HyperFleetEmulator(book, token="opaque-token")
    mds.start()
    hf.start()
    hf.trust_id_tokens(mds.id_tokens.jwks, audience="hyperfleet-api", identity_pattern=r"pullsecret-runtime@.*")
    hf.seed_cluster("cls-abc123", {"name": "cluster-abc", "generation": 1, "spec": {}})
    yield mds, hf
    hf.stop()
    mds.stop()


def mint(mds: MetadataEmulator, audience: str = "hyperfleet-api") -> str:
    answer = requests.get(
        f"{mds.url}{IDENTITY}",
        params={"audience": audience, "format": "full"},
        headers={"Metadata-Flavor": "Google"},
        timeout=5,
    )
    assert answer.status_code == 200
    return answer.text


def call(hf: HyperFleetEmulator, token: str) -> requests.Response:
    return requests.get(f"{hf.url}{CLUSTER}", headers={"Authorization": f"Bearer {token}"}, timeout=5)


def test_a_token_for_the_api_audience_is_admitted_and_names_the_service_account(world: World) -> None:
    mds, hf = world
    assert call(hf, mint(mds)).status_code == 200
    assert hf.identities == [SA]
    assert call(hf, "opaque-token").status_code == 200  # the opaque token keeps working beside it


def test_a_wrong_audience_is_refused(world: World) -> None:
    mds, hf = world
    refused = call(hf, mint(mds, audience="https://another-service.example"))
    assert refused.status_code == 401 and refused.json()["code"] == "HYPERFLEET-AUT-002"


def test_an_expired_token_is_refused_as_expired(world: World) -> None:
    mds, hf = world
    assert mds.handle_admin("PUT", "/identity_lifetime", {"seconds": -5})[0] == 200
    refused = call(hf, mint(mds))
    assert refused.status_code == 401 and refused.json()["code"] == "HYPERFLEET-AUT-003"


def test_a_token_signed_by_a_retired_key_or_tampered_with_is_refused(world: World) -> None:
    mds, hf = world
    token = mint(mds)
    header, claims, signature = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(claims + "=="))
    forged["email"] = "someone-else@hf-demo-project.iam.gserviceaccount.com"
    tampered = ".".join([header, base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("="), signature])
    assert call(hf, tampered).status_code == 401
    mds.handle_admin("POST", "/rotate_identity_key", None)
    assert call(hf, token).status_code == 401
    assert call(hf, mint(mds)).status_code == 200


def test_an_identity_outside_the_pattern_is_refused_and_a_forbidden_one_denied(world: World) -> None:
    mds, hf = world
    mds.service_account = "intruder@other-project.iam.gserviceaccount.com"
    assert call(hf, mint(mds)).status_code == 401
    mds.service_account = SA
    hf.forbidden_tokens.add(SA)
    denied = call(hf, mint(mds))
    assert denied.status_code == 403 and denied.json()["code"] == "HYPERFLEET-AUZ-001"
