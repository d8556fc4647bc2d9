"""The doctor with HYPERFLEET_API_AUTH=service-account-token on the emulator stack: green with what Terraform renders
(the token cluster's Role, the account on the gateway's allow-list, audience hyperfleet-api), and red with the fix
that names what is wrong when the Role, the allow-list or the audience is."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stdout
from typing import Any

import pytest

from emulators.kubernetes.manifests import render_token_cluster
from emulators.world import RUNTIME_SA, TOKEN_ACCOUNT, TOKEN_CLUSTER, TOKEN_NAMESPACE
from pullsecret.operator import cli
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
