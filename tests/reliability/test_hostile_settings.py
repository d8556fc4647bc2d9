"""Settings that would send a credential where anyone on the path reads it are refused at cold start, by name.

A bearer or ID token over plain HTTP reaches every hop between the function and its destination; the runtime
identity's access token goes with every emulator call. Only loopback may be spoken to in plain text. A URL setting
is checked whole (its port included) at cold start, and the bug net answers even when the application cannot be
built.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pullsecret.configured import load
from pullsecret.errors import ConfigError
from pullsecret.handler import Adapter
from tests.reliability import campaign, harness

BASE = {"HYPERFLEET_API_URL": "https://hf.example.com", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}


@pytest.fixture
def token_file(tmp_path: Path) -> str:
    path = tmp_path / "token"
    path.write_text("opaque-token")
    return str(path)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (
            {"HYPERFLEET_API_URL": "http://hf.example.com", "HYPERFLEET_API_AUTH": "google-id-token"},
            "HYPERFLEET_API_URL",
        ),
        ({"HYPERFLEET_API_URL": "http://10.0.0.7:8000", "HYPERFLEET_API_TOKEN_FILE": "{token}"}, "HYPERFLEET_API_URL"),
        (
            {"HYPERFLEET_API_URL": "http://127.0.0.1.evil.example:80", "HYPERFLEET_API_AUTH": "google-id-token"},
            "HYPERFLEET_API_URL",
        ),
        ({"RESOURCE_MANAGER_EMULATOR_HOST": "collector.example.com:80"}, "RESOURCE_MANAGER_EMULATOR_HOST"),
        ({"RESOURCE_MANAGER_EMULATOR_HOST": "10.1.2.3:8080"}, "RESOURCE_MANAGER_EMULATOR_HOST"),
        ({"SECRET_MANAGER_EMULATOR_HOST": "sm.example.com:443"}, "SECRET_MANAGER_EMULATOR_HOST"),
        ({"GKE_EMULATOR_HOST": "[fd00::1]:443"}, "GKE_EMULATOR_HOST"),
        ({"PULL_SECRET_SOURCE": None, "PULL_SECRET_SERVICE_URL": "http://pss.example.com"}, "PULL_SECRET_SERVICE_URL"),
    ],
)
def test_a_token_over_plain_http_to_anything_but_loopback_is_refused_at_start(
    overrides: dict[str, str | None], named: str, token_file: str
) -> None:
    env = {**BASE, **{k: v.replace("{token}", token_file) for k, v in overrides.items() if v is not None}}
    for key in [k for k, v in overrides.items() if v is None]:
        env.pop(key)
    harness.count("cases tried")
    with pytest.raises(ConfigError) as refused:
        load(env)
    assert named in str(refused.value)


@pytest.mark.parametrize(
    "overrides",
    [
        {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "HYPERFLEET_API_AUTH": "google-id-token"},
        {"HYPERFLEET_API_URL": "http://localhost:8000", "HYPERFLEET_API_TOKEN_FILE": "{token}"},
        {"HYPERFLEET_API_URL": "http://[::1]:8000", "HYPERFLEET_API_AUTH": "google-id-token"},
        {"HYPERFLEET_API_URL": "http://hf.internal:8000"},  # token-file mode without a file: no token is sent
        {"RESOURCE_MANAGER_EMULATOR_HOST": "127.0.0.1:8085", "SECRET_MANAGER_EMULATOR_HOST": "localhost:9000"},
    ],
)
def test_loopback_and_https_are_accepted(overrides: dict[str, str], token_file: str) -> None:
    load({**BASE, **{k: v.replace("{token}", token_file) for k, v in overrides.items()}})


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"HYPERFLEET_API_URL": "https://hf.example.com:99999"}, "HYPERFLEET_API_URL"),
        ({"HYPERFLEET_API_URL": "https://hf.example.com:0"}, "HYPERFLEET_API_URL"),
        ({"HYPERFLEET_API_URL": "https://hf.example.com:44x3"}, "HYPERFLEET_API_URL"),
        ({"HYPERFLEET_API_URL": "https://hf.exa mple.com"}, "HYPERFLEET_API_URL"),
        ({"HYPERFLEET_API_URL": "https://[::1"}, "HYPERFLEET_API_URL"),
        (
            {"PULL_SECRET_SOURCE": None, "PULL_SECRET_SERVICE_URL": "https://pss.example.com:99999/api"},
            "PULL_SECRET_SERVICE_URL",
        ),
        (
            {"PULL_SECRET_SOURCE": None, "PULL_SECRET_SERVICE_URL": "https://pss.example.com:-1"},
            "PULL_SECRET_SERVICE_URL",
        ),
        ({"SECRET_MANAGER_EMULATOR_HOST": "localhost:99999"}, "SECRET_MANAGER_EMULATOR_HOST"),
        ({"RESOURCE_MANAGER_EMULATOR_HOST": "127.0.0.1:0"}, "RESOURCE_MANAGER_EMULATOR_HOST"),
    ],
)
def test_a_url_setting_its_client_would_refuse_is_refused_at_start(
    overrides: dict[str, str | None], named: str
) -> None:
    """A port out of range passed config.load and failed in the client's constructor on every event."""
    env = {**BASE, **{k: v for k, v in overrides.items() if v is not None}}
    for key in [k for k, v in overrides.items() if v is None]:
        env.pop(key)
    harness.count("cases tried")
    with pytest.raises(ConfigError) as refused:
        load(env)
    assert named in str(refused.value)


def test_the_bug_net_answers_even_when_the_application_cannot_be_built(
    adapter_factory: Any, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """Were a setting that breaks a client's constructor to pass config.load, the bug net (which builds the
    application to report) must still acknowledge the event with a terminal outcome, not raise: a raise is a 500
    and a redelivery, forever."""
    settings = adapter_factory().settings
    broken = Adapter(dataclasses.replace(settings, hyperfleet_api_url="https://hf.example.com:99999"))
    campaign.seed_generation(world, "cls-hostile-bugnet", 1)
    harness.count("cases tried")
    outcome = broken.handle(*campaign.envelope("cls-hostile-bugnet", 1))
    assert (outcome.result, outcome.reason) == ("terminal", "UnexpectedError")
    lines = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["message"] for line in lines if "could not report" in line.get("message", "")], lines
    assert [line for line in lines if line.get("operation") == "reconcile" and line.get("result") == "terminal"]


TOKEN_CLUSTER = "projects/hf-regional/locations/us-central1/clusters/regional-1"
GATEWAY = {
    "HYPERFLEET_API_AUTH": "service-account-token",
    "HYPERFLEET_API_TOKEN_CLUSTER": TOKEN_CLUSTER,
    "HYPERFLEET_API_SERVICE_ACCOUNT": "hyperfleet/pullsecret-adapter",
}
SERVICE = {"PULL_SECRET_SOURCE": None, "PULL_SECRET_SERVICE_URL": "https://pss.example.com/"}


@pytest.mark.parametrize(
    "overrides",
    [
        # Terraform's shape: the service takes the gateway's cluster and account; the audience is the gateway's.
        {**GATEWAY, **SERVICE, "PULL_SECRET_SERVICE_AUTH": "service-account-token",
         "PULL_SECRET_SERVICE_AUDIENCE": "hyperfleet-api"},
        # The same cluster and account named again, and the gateway's audience moved to the service's URL.
        {**GATEWAY, **SERVICE, "PULL_SECRET_SERVICE_AUTH": "service-account-token",
         "PULL_SECRET_SERVICE_TOKEN_CLUSTER": TOKEN_CLUSTER,
         "PULL_SECRET_SERVICE_SERVICE_ACCOUNT": "hyperfleet/pullsecret-adapter",
         "HYPERFLEET_API_AUDIENCE": "https://pss.example.com"},
        # Google ID tokens of the runtime account, one audience for both.
        {"HYPERFLEET_API_AUTH": "google-id-token", "HYPERFLEET_API_AUDIENCE": "shared-audience", **SERVICE,
         "PULL_SECRET_SERVICE_AUDIENCE": "shared-audience"},
        # One token file for both.
        {"HYPERFLEET_API_TOKEN_FILE": "{token}", **SERVICE, "PULL_SECRET_SERVICE_AUTH": "token-file",
         "PULL_SECRET_SERVICE_TOKEN_FILE": "{token}"},
    ],
)  # fmt: skip
def test_a_service_token_the_hyperfleet_api_would_admit_is_refused_at_start(
    overrides: dict[str, str | None], token_file: str
) -> None:
    """Issue 50, item 4: with the gateway's cluster, account and audience, the Pull Secret Service received tokens
    the gateway admits, and a hostile service could replay them at the API. Refused at cold start, naming both
    credentials' settings and the fix."""
    env = {**BASE, **{k: v.replace("{token}", token_file) for k, v in overrides.items() if v is not None}}
    for key in [k for k, v in overrides.items() if v is None]:
        env.pop(key)
    harness.count("cases tried")
    with pytest.raises(ConfigError) as refused:
        load(env)
    message = str(refused.value)
    assert not harness.scan("configuration error", [message], extra_forms=["opaque-token"])
    assert refused.value.variable in ("PULL_SECRET_SERVICE_AUDIENCE", "PULL_SECRET_SERVICE_TOKEN_FILE"), message
    assert "the service could replay what it receives at the API" in message, message
    assert "PULL_SECRET_SERVICE_" in message and "HYPERFLEET_API_" in message, message
    assert "Give the service an audience of its own" in message, message


@pytest.mark.parametrize(
    "overrides",
    [
        {**GATEWAY, **SERVICE, "PULL_SECRET_SERVICE_AUTH": "service-account-token"},  # the service's URL: its own
        {**GATEWAY, **SERVICE, "PULL_SECRET_SERVICE_AUTH": "service-account-token",
         "PULL_SECRET_SERVICE_SERVICE_ACCOUNT": "hyperfleet/pullsecret-reader",
         "PULL_SECRET_SERVICE_AUDIENCE": "hyperfleet-api"},  # another account: its own token, though one audience
        {**GATEWAY, **SERVICE, "PULL_SECRET_SERVICE_AUDIENCE": "hyperfleet-api"},  # a Google ID token is no SA token
        {"HYPERFLEET_API_AUTH": "google-id-token", **SERVICE},
    ],
)  # fmt: skip
def test_a_service_token_of_its_own_is_accepted(overrides: dict[str, str | None]) -> None:
    env = {**BASE, **{k: v for k, v in overrides.items() if v is not None}}
    env.pop("PULL_SECRET_SOURCE")
    load(env)
