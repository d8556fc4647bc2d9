"""Settings that would send a credential where anyone on the path reads it are refused at cold start, by name.

A bearer or ID token over plain HTTP reaches every hop between the function and its destination; the runtime
identity's access token goes with every emulator call. Only loopback may be spoken to in plain text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pullsecret.config import load
from pullsecret.errors import ConfigError
from tests.reliability import harness

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
