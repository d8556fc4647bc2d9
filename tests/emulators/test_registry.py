"""The registry emulator speaks the Docker Registry v2 auth handshake over HTTPS with the stack's CA."""

from __future__ import annotations

import base64
import socket
import time
from typing import Any

import pytest
import requests

from emulators.registry import DEFAULT_PASSWORD, DEFAULT_REFRESH_TOKEN, DEFAULT_USER, SERVICE
from pullsecret.registry.verification import parse_challenges

GOOD = "Basic " + base64.b64encode(f"{DEFAULT_USER}:{DEFAULT_PASSWORD}".encode()).decode()
WRONG = "Basic " + base64.b64encode(f"{DEFAULT_USER}:nope".encode()).decode()


@pytest.fixture
def http(world: Any) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # else REQUESTS_CA_BUNDLE from the environment replaces `verify`
    session.verify = world.registry_ca_file
    return session


def test_the_stack_exposes_the_ca_and_every_host(world: Any) -> None:
    env = world.env()
    assert env["REGISTRY_CA_BUNDLE"] == world.registry_ca_file
    assert set(world.endpoints()["registry"]) == {
        "token",
        "sso",
        "basic",
        "anonymous",
        "redirect",
        "foreign",
        "pivot",
        "dead",
        "internal",
    }
    allowed = env["REGISTRY_ALLOWED_HOSTS"].split(",")
    assert sorted(allowed) == sorted(h for role, h in world.registry.hosts().items() if role != "internal")


def test_the_internal_host_counts_every_connection(world: Any, http: requests.Session) -> None:
    """The host no pull secret may reach: a TCP accept is counted even when no request follows."""
    host = world.registry.hosts()["internal"]
    assert http.get(f"https://{host}/v2/", timeout=5).status_code == 200
    address, port = host.rsplit(":", 1)
    with socket.create_connection((address, int(port)), timeout=5):
        pass
    deadline = time.monotonic() + 5
    while world.registry.state()["connections"]["internal"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.registry.state()["connections"]["internal"] == 2


def test_drip_sends_the_body_one_byte_at_a_time(world: Any, admin: Any, http: requests.Session) -> None:
    admin.fault(service="registry", method="anonymous.ping", code="drip", count=1)
    started = time.monotonic()
    answer = http.get(f"https://{world.registry.hosts()['anonymous']}/v2/", timeout=5, stream=True)
    assert answer.status_code == 200  # status and headers at once
    assert answer.raw.read(2) == b"{}"  # then one byte each half second
    assert time.monotonic() - started >= 0.5


def test_plain_verification_without_the_ca_fails(world: Any) -> None:
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"https://{world.registry.hosts()['anonymous']}/v2/", timeout=5)


def test_token_registry_with_its_realm_on_another_host(world: Any, http: requests.Session) -> None:
    hosts = world.registry.hosts()
    ping = http.get(f"https://{hosts['token']}/v2/", timeout=5)
    assert ping.status_code == 401 and ping.headers["Docker-Distribution-API-Version"] == "registry/2.0"
    (challenge,) = parse_challenges([ping.headers["WWW-Authenticate"]])
    assert challenge.scheme == "bearer"
    assert challenge.params == {"realm": f"https://{hosts['sso']}/auth", "service": SERVICE}

    refused = http.get(challenge.params["realm"], params={"service": SERVICE}, headers={"Authorization": WRONG})
    assert refused.status_code == 401
    issued = http.get(challenge.params["realm"], params={"service": SERVICE}, headers={"Authorization": GOOD})
    assert issued.status_code == 200
    token = issued.json()["token"]
    assert issued.json()["access_token"] == token and token in world.registry.issued_tokens()
    assert http.get(f"https://{hosts['token']}/v2/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    bad = http.get(f"https://{hosts['token']}/v2/", headers={"Authorization": "Bearer forged"})
    assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["WWW-Authenticate"]


def test_oauth2_refresh_token_grant(world: Any, http: requests.Session) -> None:
    realm = f"https://{world.registry.hosts()['sso']}/auth"
    form = {"grant_type": "refresh_token", "service": SERVICE, "client_id": "t", "refresh_token": DEFAULT_REFRESH_TOKEN}
    answer = http.post(realm, data=form, timeout=5)
    assert answer.status_code == 200 and answer.json()["access_token"] in world.registry.issued_tokens()
    assert http.post(realm, data={**form, "refresh_token": "unknown"}, timeout=5).status_code == 401


def test_basic_and_anonymous_registries(world: Any, http: requests.Session) -> None:
    hosts = world.registry.hosts()
    ping = http.get(f"https://{hosts['basic']}/v2/", timeout=5)
    assert ping.status_code == 401 and ping.headers["WWW-Authenticate"] == 'Basic realm="Registry Realm"'
    assert http.get(f"https://{hosts['basic']}/v2/", headers={"Authorization": GOOD}).status_code == 200
    assert http.get(f"https://{hosts['basic']}/v2/", headers={"Authorization": WRONG}).status_code == 401
    assert http.get(f"https://{hosts['anonymous']}/v2/", timeout=5).status_code == 200


def test_accounts_are_managed_through_the_admin_api(world: Any, admin: Any, http: requests.Session) -> None:
    admin.call("PUT", "/registry/accounts/other", {"password": "other-pw"})
    other = "Basic " + base64.b64encode(b"other:other-pw").decode()
    assert http.get(f"https://{world.registry.hosts()['basic']}/v2/", headers={"Authorization": other}).ok
    assert admin.get("/registry/state")["accounts"] == ["other", DEFAULT_USER]


def test_dead_host_refuses_and_faults_apply(world: Any, admin: Any, http: requests.Session) -> None:
    hosts = world.registry.hosts()
    with pytest.raises(requests.exceptions.ConnectionError):
        http.get(f"https://{hosts['dead']}/v2/", timeout=5)
    admin.fault(service="registry", method="sso.token", code="503", count=1)
    assert http.get(f"https://{hosts['sso']}/auth", headers={"Authorization": GOOD}, timeout=5).status_code == 503
    assert http.get(f"https://{hosts['sso']}/auth", headers={"Authorization": GOOD}, timeout=5).status_code == 200
    admin.fault(service="registry", method="basic.ping", code="timeout", count=1)
    with pytest.raises(requests.exceptions.Timeout):
        http.get(f"https://{hosts['basic']}/v2/", timeout=0.5)
    calls = admin.calls()["registry"]
    assert calls["sso.token"] == 2 and calls["basic.ping"] == 1


def test_requests_strips_authorization_on_a_redirect_to_another_host(world: Any, http: requests.Session) -> None:
    """Why a followed redirect would not leak either; the adapter still never follows one."""
    hosts = world.registry.hosts()
    followed = http.get(f"https://{hosts['redirect']}/v2/", headers={"Authorization": GOOD}, timeout=5)
    assert followed.status_code == 200 and followed.history[0].status_code == 307
    assert followed.url == f"https://{hosts['anonymous']}/v2/"
    assert world.registry.state()["credentialed"]["anonymous"] == 0
    assert world.registry.state()["credentialed"]["redirect"] == 1
