"""HYPERFLEET_API_AUTH=service-account-token: the function mints a Kubernetes ServiceAccount token with TokenRequest on
the regional cluster (through GKE, as the runtime identity) and calls HyperFleet through hyperfleet-gateway, which
reviews it (TokenReview, audience hyperfleet-api) and admits the account on its allow-list; the same identity at the
Pull Secret Service (PULL_SECRET_SERVICE_AUTH=service-account-token). Emulators: the regional cluster
(emulators/kubernetes/tokens.py), the gateway (emulators/hyperfleet/gateway.py), the service's TokenReview
(emulators/pullsecretservice/access.py).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from emulators.kubernetes.manifests import render_token_cluster
from emulators.world import RUNTIME_SA, TOKEN_ACCOUNT, TOKEN_CLUSTER, TOKEN_NAMESPACE
from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event


def role_for_another_account() -> dict[str, Any]:
    """The token cluster's Role as Terraform renders it for this instance (its name is the instance's: the runtime
    account's), rewritten to allow tokens for another account only."""
    [role] = [d for d in render_token_cluster(RUNTIME_SA, TOKEN_NAMESPACE, TOKEN_ACCOUNT) if d["kind"] == "Role"]
    role["rules"] = [{**rule, "resourceNames": ["x"]} for rule in role["rules"]]
    return role


CID = "cls-satoken1"
ADAPTER_USER = f"system:serviceaccount:{TOKEN_NAMESPACE}:{TOKEN_ACCOUNT}"


@pytest.fixture
def sa_env(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, world: Any) -> dict[str, str]:
    monkeypatch.delenv("HYPERFLEET_API_TOKEN_FILE")
    monkeypatch.setenv("HYPERFLEET_API_AUTH", "service-account-token")
    monkeypatch.setenv("HYPERFLEET_API_TOKEN_CLUSTER", TOKEN_CLUSTER)
    monkeypatch.setenv("HYPERFLEET_API_SERVICE_ACCOUNT", f"{TOKEN_NAMESPACE}/{TOKEN_ACCOUNT}")
    world.hyperfleet.token = "hf-opaque-token-nobody-presents"  # the token file is out of the picture
    world.hyperfleet.set_gateway(world.gateway_config())  # reset() takes it away again
    return function_env


def deliver(adapter: Adapter, generation: int = 1) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))


def minted(world: Any) -> int:
    return int(world.regional.service_accounts.minted)


def error_lines(out: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    return [x for x in lines if x["severity"] == "ERROR"]


def test_a_cluster_reconciles_through_the_gateway_with_one_token_across_events(
    sa_env: dict[str, str], admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    assert deliver(adapter, 2).result in ("applied", "unchanged")
    assert minted(world) == 1  # one TokenRequest for both events' six calls
    gateway = world.hyperfleet.gateway
    assert set(gateway.admitted) == {ADAPTER_USER} and len(gateway.admitted) >= 6
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is not None
    out = capsys.readouterr().out
    assert "eyJ" not in out  # no part of the JWT reaches the logs


def test_a_token_refused_once_is_minted_again_and_the_call_repeated(
    sa_env: dict[str, str], admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    # The account is re-created (a new uid): the cached token no longer passes TokenReview (a bare 401).
    world.regional.service_accounts.delete_service_account(TOKEN_NAMESPACE, TOKEN_ACCOUNT)
    world.regional.service_accounts.add_service_account(TOKEN_NAMESPACE, TOKEN_ACCOUNT)
    assert deliver(adapter, 2).result in ("applied", "unchanged")
    assert minted(world) == 2
    assert any(d.startswith("401") for d in world.hyperfleet.gateway.denied)


def test_an_account_off_the_allow_list_is_minted_once_more_then_redelivered_with_one_error(
    sa_env: dict[str, str], admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    world.hyperfleet.set_gateway(world.gateway_config(allowed_service_accounts=("some-other-adapter",)))
    seed_ready_cluster(admin, CID)
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert "allow-list" in raised.value.message and "HYPERFLEET_API_SERVICE_ACCOUNT" in raised.value.message
    assert minted(world) == 2  # the first, and one more after the refusal; not one per call
    errors = error_lines(capsys.readouterr().out)
    # One line per refused call (the cluster and its statuses are read concurrently), none per retry.
    assert 1 <= len(errors) <= 2
    assert all("HYPERFLEET_API_TOKEN_CLUSTER" in e["message"] and "allow-list" in e["message"] for e in errors)
    assert "eyJ" not in json.dumps(errors)
    assert admin.reports() == []


def test_a_wrong_audience_is_a_bare_401_minted_once_more_then_redelivered(
    sa_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("HYPERFLEET_API_AUDIENCE", "some-other-api")
    seed_ready_cluster(admin, CID)
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "CredentialsRefused" and "401" in raised.value.message
    assert "audience 'some-other-api'" in raised.value.message
    assert minted(world) == 2
    assert 1 <= len(error_lines(capsys.readouterr().out)) <= 2


def test_a_role_for_another_account_leaves_no_token_and_names_the_manifests(
    sa_env: dict[str, str], admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    world.regional.put_rbac(role_for_another_account())
    seed_ready_cluster(admin, CID)
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "CredentialsUnavailable"
    assert "may not create tokens" in raised.value.message and "token_cluster_manifests" in raised.value.message
    assert minted(world) == 0 and world.hyperfleet.gateway.admitted == []
    assert len(error_lines(capsys.readouterr().out)) == 1


def test_a_lost_database_behind_the_gateway_is_transient(sa_env: dict[str, str], admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    world.hyperfleet.lose_database()
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert "503" in raised.value.message and "HYPERFLEET-SVC-001" in raised.value.message
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is None
    world.hyperfleet.lose_database(False)
    assert deliver(Adapter.from_environment()).result == "applied"  # the redelivery, once the database is back


def test_the_pull_secret_service_takes_the_same_account_for_its_own_audience(
    sa_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PULL_SECRET_SOURCE")
    monkeypatch.setenv("PULL_SECRET_SERVICE_URL", world.pullsecretservice.url)
    monkeypatch.setenv("PULL_SECRET_SERVICE_AUTH", "service-account-token")
    seed_ready_cluster(admin, CID)
    assert deliver(Adapter.from_environment()).result == "applied"
    assert minted(world) == 2  # one token per audience: hyperfleet-api, the service's URL
    assert world.pullsecretservice.state()["clusters"][CID]["credentials"]  # the service generated them


def test_the_token_is_reused_until_eighty_percent_of_its_600_seconds_then_minted_again(
    sa_env: dict[str, str], world: Any
) -> None:
    from pullsecret.identity.bearer import hyperfleet_credential
    from pullsecret.identity.satoken import ServiceAccountToken
    from pullsecret.settings import common

    now = [1000.0]
    credential = hyperfleet_credential(common.load())
    assert isinstance(credential, ServiceAccountToken)
    credential._clock = lambda: now[0]  # the renewal rule on a clock of the test's; the minting is the real one
    first = credential.current()
    now[0] += 479
    assert credential.current() == first and minted(world) == 1
    now[0] += 2
    assert credential.current() != first and minted(world) == 2
    assert first not in repr(credential) and credential.scheme == "ServiceAccount"
    # The regional cluster issued it for 600 s, the shortest the API server allows, for the gateway's audience.
    payload = first.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["exp"] - claims["iat"] == 600 and claims["aud"] == ["hyperfleet-api"]
    assert claims["sub"] == ADAPTER_USER
