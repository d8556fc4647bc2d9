"""satoken_settings: the service-account-token mode's settings, read by common.load (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from pullsecret.errors import ConfigError
from pullsecret.settings import common

CLUSTER = "projects/hf-prod/locations/us-central1/clusters/regional-1"
BASE = {"HYPERFLEET_API_URL": "https://hf.example.com", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
SA = {
    "HYPERFLEET_API_AUTH": "service-account-token",
    "HYPERFLEET_API_TOKEN_CLUSTER": CLUSTER,
    "HYPERFLEET_API_SERVICE_ACCOUNT": "hyperfleet/pullsecret-adapter",
}


def load(**env: Any) -> common.Settings:
    return common.load({**BASE, **env})


def test_the_mode_reads_its_cluster_and_account_and_sends_the_service_account_scheme() -> None:
    caller = load(**SA).caller
    source = caller.hyperfleet_token
    assert source is not None and (source.cluster, source.account) == (CLUSTER, "hyperfleet/pullsecret-adapter")
    assert caller.hyperfleet_scheme == "ServiceAccount"
    assert load(**SA, HYPERFLEET_API_AUTH_SCHEME="Bearer").caller.hyperfleet_scheme == "Bearer"
    assert load().caller.hyperfleet_scheme == "Bearer" and load().caller.hyperfleet_token is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({**SA, "HYPERFLEET_API_TOKEN_FILE": __file__}, "HYPERFLEET_API_TOKEN_FILE must be unset"),
        ({**SA, "HYPERFLEET_API_TOKEN_CLUSTER": ""}, "HYPERFLEET_API_TOKEN_CLUSTER is required"),
        ({**SA, "HYPERFLEET_API_SERVICE_ACCOUNT": "pullsecret-adapter"}, "HYPERFLEET_API_SERVICE_ACCOUNT must be"),
        ({**SA, "HYPERFLEET_API_TOKEN_CLUSTER": "regional-1"}, "HYPERFLEET_API_TOKEN_CLUSTER must be"),
        ({**SA, "HYPERFLEET_API_AUTH_SCHEME": "Basic"}, "HYPERFLEET_API_AUTH_SCHEME must be"),
        ({"HYPERFLEET_API_TOKEN_CLUSTER": CLUSTER}, "HYPERFLEET_API_TOKEN_CLUSTER must be unset"),
        ({"HYPERFLEET_API_AUTH": "google-id-token", "HYPERFLEET_API_AUTH_SCHEME": "ServiceAccount"}, "must be Bearer"),
        ({**SA, "HYPERFLEET_API_URL": "http://hf.example.com"}, "use https"),
    ],
)
def test_a_mistake_is_a_configuration_error_naming_the_setting(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(**env)
    assert named in str(raised.value)


def test_the_service_takes_the_same_account_unless_told_otherwise() -> None:
    service = {
        "PULL_SECRET_SOURCE": "",
        "PULL_SECRET_SERVICE_URL": "https://pss.example.com",
        "PULL_SECRET_SERVICE_AUTH": "service-account-token",
    }
    same = load(**SA, **service).caller.service_token
    assert same is not None and (same.cluster, same.account) == (CLUSTER, "hyperfleet/pullsecret-adapter")
    own = load(**SA, **service, PULL_SECRET_SERVICE_SERVICE_ACCOUNT="psa/reader").caller.service_token
    assert own is not None and own.account == "psa/reader" and own.cluster == CLUSTER
    with pytest.raises(ConfigError, match="PULL_SECRET_SERVICE_TOKEN_CLUSTER is required"):
        load(**service)  # HyperFleet in another mode: nothing to default to
    with pytest.raises(ConfigError, match="PULL_SECRET_SERVICE_TOKEN_FILE must be unset"):
        load(**SA, **service, PULL_SECRET_SERVICE_TOKEN_FILE=__file__)


def test_a_private_ca_is_a_readable_file() -> None:
    assert load(HYPERFLEET_API_CA_BUNDLE=__file__).caller.hyperfleet_ca_bundle == __file__
    with pytest.raises(ConfigError, match="HYPERFLEET_API_CA_BUNDLE"):
        load(HYPERFLEET_API_CA_BUNDLE="/nonexistent/ca.pem")
