"""PULLSECRET_OPERATOR_KUBECONFIG, direct mode's setting: checked at load, read by direct mode's build, given by the
CLI to its views only (pullsecret/delivery/direct/settings.py, operator_kubeconfig.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials

from pullsecret import configured
from pullsecret.delivery import modes
from pullsecret.delivery.base import Wiring
from pullsecret.delivery.direct.settings import DirectSettings
from pullsecret.errors import ConfigError
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.operator import cli
from pullsecret.retrying import Deadline

BASE = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: gke_p_europe-west1_mgmt-1
  cluster: {server: "https://operator.example:6443", insecure-skip-tls-verify: true}
users:
- name: operator
  user: {token: operator-token}
contexts:
- name: operator@mgmt-1
  context: {cluster: gke_p_europe-west1_mgmt-1, user: operator}
current-context: operator@mgmt-1
"""
MGMT_1 = "projects/p/locations/europe-west1/clusters/mgmt-1"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


@pytest.mark.parametrize(
    ("content", "error"),
    [(None, "ConfigException"), ("not: [a kubeconfig", "ParserError"), ("{}", "ConfigException")],
)
def test_a_kubeconfig_that_cannot_be_used_is_a_configuration_error_naming_the_setting(
    tmp_path: Path, content: str | None, error: str
) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as raised:
        configured.load({**BASE, "PULLSECRET_OPERATOR_KUBECONFIG": str(path)})
    assert str(raised.value) == f"PULLSECRET_OPERATOR_KUBECONFIG names no usable kubeconfig ({path}): {error}"
    assert raised.value.variable == "PULLSECRET_OPERATOR_KUBECONFIG"


def test_unset_empty_or_under_another_mode_the_setting_is_ignored(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    for env in ({}, {"PULLSECRET_OPERATOR_KUBECONFIG": " "}):
        assert configured.load({**BASE, **env}).of(DirectSettings).operator_kubeconfig is None
    external = {
        "KUBERNETES_DELIVERY": "external-secrets",
        "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": "principal://iam.googleapis.com/projects/1/x/{namespace}",
        "PULLSECRET_OPERATOR_KUBECONFIG": gone,  # the playground's env file exports it in every mode
    }
    assert configured.load({**BASE, **external}).of(DirectSettings).operator_kubeconfig is None


def test_direct_mode_reads_the_kubeconfigs_cluster_with_its_identity_and_any_other_through_gke(
    kubeconfig: str,
) -> None:
    settings = configured.load({**BASE, "PULLSECRET_OPERATOR_KUBECONFIG": f" {kubeconfig} "})
    assert settings.of(DirectSettings).operator_kubeconfig == kubeconfig
    identity = RuntimeIdentity(AnonymousCredentials(), project_id="p")  # type: ignore[no-untyped-call]
    delivery = modes.build(Wiring(settings=settings, identity=identity, secret_manager=None))
    clusters = delivery.clusters  # type: ignore[attr-defined]
    api = clusters.api_for(MGMT_1, Deadline(5))
    assert api.configuration.host == "https://operator.example:6443"
    assert api.configuration.api_key == {"BearerToken": "Bearer operator-token"}
    gke = configured.load(BASE)
    plain = modes.build(Wiring(settings=gke, identity=identity, secret_manager=None))
    assert type(plain.clusters).__name__ == "ManagementClusters"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("argv", "given"),
    [
        (["inspect", "cls-1"], True),
        (["fleet"], True),
        (["fleet", "--fix"], False),
        (["reconcile", "cls-1"], False),
        (["doctor"], False),
        (["rekey", "cls-1"], False),
    ],
)
def test_the_cli_gives_the_operators_kubeconfig_to_its_views_only(argv: list[str], given: bool) -> None:
    env = {**BASE, "PULLSECRET_OPERATOR_KUBECONFIG": "/k"}
    read = cli._settings_env(cli._parser().parse_args(argv), env)
    assert ("PULLSECRET_OPERATOR_KUBECONFIG" in read) is given
    assert read["HYPERFLEET_API_URL"] == BASE["HYPERFLEET_API_URL"]
