"""The doctor with HYPERFLEET_API_AUTH=service-account-token on the emulator stack: green with what Terraform renders
(the token cluster's Role, the account on the gateway's allow-list, audience hyperfleet-api), and red with the fix
that names what is wrong when the Role, the allow-list or the audience is."""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Iterator
from contextlib import redirect_stdout
from typing import Any

import pytest

from emulators.kubernetes.manifests import render_token_cluster
from emulators.world import (
    API_AUDIENCE,
    PROJECT_ID,
    PROJECT_NUMBER,
    RUNTIME_SA,
    TOKEN_ACCOUNT,
    TOKEN_CLUSTER,
    TOKEN_NAMESPACE,
)
from pullsecret import configured
from pullsecret.doctor import run as doctor_run
from pullsecret.handler import Adapter
from pullsecret.operator import cli
from pullsecret.source.service.settings import ServiceSettings
from tests.support import SENSITIVE, Admin, seed_ready_cluster


def role_for_another_account() -> dict[str, Any]:
    """The token cluster's Role as Terraform renders it for this instance (its name is the instance's: the runtime
    account's), rewritten to allow tokens for another account only."""
    [role] = [d for d in render_token_cluster(RUNTIME_SA, TOKEN_NAMESPACE, TOKEN_ACCOUNT) if d["kind"] == "Role"]
    role["rules"] = [{**rule, "resourceNames": ["x"]} for rule in role["rules"]]
    return role


CID = "cls-doctor-sa1"


@pytest.fixture(autouse=True)
def restored_log() -> Iterator[None]:
    from pullsecret.logs import log

    saved = (log._stream, log.level)
    yield
    log._stream, log.level = saved


@pytest.fixture
def sa_mode(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, world: Any, admin: Admin) -> Any:
    monkeypatch.delenv("HYPERFLEET_API_TOKEN_FILE")
    monkeypatch.setenv("HYPERFLEET_API_AUTH", "service-account-token")
    monkeypatch.setenv("HYPERFLEET_API_TOKEN_CLUSTER", TOKEN_CLUSTER)
    monkeypatch.setenv("HYPERFLEET_API_SERVICE_ACCOUNT", f"{TOKEN_NAMESPACE}/{TOKEN_ACCOUNT}")
    world.hyperfleet.token = "hf-opaque-token-nobody-presents"
    world.hyperfleet.set_gateway(world.gateway_config())
    seed_ready_cluster(admin, CID)
    return world


def doctor() -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["doctor"])
    text = out.getvalue()
    for secret in SENSITIVE:
        assert secret not in text
    assert "eyJ" not in text  # no part of the token
    return code, text


def failed(text: str, check: str) -> str:
    """The FAIL line of `check` and the fix lines after it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("FAIL") and line.split()[1] == check)
    return "\n".join(lines[start : start + 4])


def test_green_through_the_gateway(sa_mode: Any) -> None:
    code, text = doctor()
    assert code == 0, text
    oks = [line for line in text.splitlines() if line.startswith("ok")]
    assert sum(line.split()[1] == "service-account-token" for line in oks) == 2, text  # minted; its claims
    assert any(line.split()[1] == "hyperfleet-api" for line in oks), text
    assert sa_mode.hyperfleet.gateway.admitted  # the read went through the gateway as the account


def test_a_role_for_another_name_is_red_with_the_manifests_to_apply(sa_mode: Any) -> None:
    sa_mode.regional.put_rbac(role_for_another_account())
    code, text = doctor()
    assert code != 0
    assert "token_cluster_manifests" in failed(text, "service-account-token"), text


def test_an_account_off_the_allow_list_is_red_with_the_allow_list_fix(sa_mode: Any) -> None:
    sa_mode.hyperfleet.set_gateway(sa_mode.gateway_config(allowed_service_accounts=("another-adapter",)))
    code, text = doctor()
    assert code != 0
    fix = failed(text, "hyperfleet-api")
    assert "allowedServiceAccounts" in fix and TOKEN_ACCOUNT in fix, text


def test_a_wrong_audience_is_red_with_the_audience_fix(sa_mode: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYPERFLEET_API_AUDIENCE", "not-the-gateways")
    code, text = doctor()
    assert code != 0
    fix = failed(text, "hyperfleet-api")
    assert "HYPERFLEET_API_AUDIENCE" in fix and "auth.machineIdentity.audience" in fix, text


@pytest.fixture
def service_sa(sa_mode: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Service mode, its token minted on the gateway's token cluster for the gateway's account (Terraform's shape)."""
    monkeypatch.delenv("PULL_SECRET_SOURCE")
    monkeypatch.setenv("PULL_SECRET_SERVICE_URL", sa_mode.pullsecretservice.url)
    monkeypatch.setenv("PULL_SECRET_SERVICE_AUTH", "service-account-token")
    return sa_mode


def test_a_service_token_that_is_the_gateways_is_red_with_the_fix(
    service_sa: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50, item 4: the token cluster named by its project number for the service passes the cold start's
    comparison of names; the minted tokens are one identity all the same (issuer, account, the gateway's audience),
    and the doctor says so with the fix. With the service's own audience (its URL, the default) the line is green."""
    by_number = TOKEN_CLUSTER.replace(f"projects/{PROJECT_ID}/", f"projects/{PROJECT_NUMBER}/")
    monkeypatch.setenv("PULL_SECRET_SERVICE_TOKEN_CLUSTER", by_number)
    monkeypatch.setenv("PULL_SECRET_SERVICE_AUDIENCE", API_AUDIENCE)
    code, text = doctor()
    assert code != 0, text
    shown = failed(text, "service-token")
    assert "the minted tokens are one identity" in shown and repr([API_AUDIENCE]) in shown, text
    assert "PULL_SECRET_SERVICE_TOKEN_CLUSTER" in shown and "Give the service an audience of its own" in shown, text
    monkeypatch.delenv("PULL_SECRET_SERVICE_AUDIENCE")
    code, text = doctor()
    ok = [line for line in text.splitlines() if line.startswith("ok") and line.split()[1] == "service-token"]
    assert ok and "neither is admitted where the other is sent" in ok[0], text


def test_settings_that_share_the_gateways_audience_are_red_in_the_doctor_too(service_sa: Any) -> None:
    """The cold start refuses them (tests/reliability/test_hostile_settings.py); settings built past it (by hand)
    get the same words from the doctor, before any token is minted."""
    settings = configured.load({**os.environ, "PULL_SECRET_SERVICE_AUDIENCE": "the-services-own"})
    shared = settings.with_own(dataclasses.replace(settings.of(ServiceSettings), audience=API_AUDIENCE))
    lines = [line for line in doctor_run.run(Adapter(shared)) if line.check == "service-token"]
    assert [line.ok for line in lines] == [False], lines
    assert lines[0].text.startswith("PULL_SECRET_SERVICE_AUDIENCE makes the Pull Secret Service's token the HyperFleet")
    assert "Give the service an audience of its own" in lines[0].fix
