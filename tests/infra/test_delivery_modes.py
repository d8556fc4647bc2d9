"""terraform/ per delivery and authentication mode: what the runtime account is granted (evaluated from the HCL by
emulators/iam_terraform.py, as the emulators enforce it), and the External Secrets manifests it renders.

Sources: GCP HCP's secret-management decision (2026-07-31: namespaced SecretStores, no ClusterSecretStore, the
Kubernetes service account's own principal, no static keys) and no-direct-connectivity decision (2026-02-09).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.iam_terraform import Grant, Module, service_account_grants
from emulators.stack import TERRAFORM_VARIABLES
from pullsecret.configured import load
from pullsecret.delivery.direct.kubesecret import DOCKERCONFIGJSON, KEY
from pullsecret.delivery.external_secrets.settings import ExternalSecretsSettings
from tests.infra.terraform_offline import NUMBER, heredoc

TERRAFORM_LOCALS = Module(TERRAFORM_VARIABLES, project_number=lambda _p: NUMBER)._locals
POLICY_PERMISSIONS = {"secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy"}


def grants(**variables: Any) -> list[Grant]:
    _email, found = service_account_grants({**TERRAFORM_VARIABLES, **variables}, project_number=lambda _p: NUMBER)
    return found


def managed(found: list[Grant]) -> Grant:
    (grant,) = [g for g in found if "runtime_secret_manager_managed" in g.address]
    return grant


def test_external_secrets_adds_the_policy_permissions_under_the_name_condition_and_drops_gke() -> None:
    direct, eso = grants(), grants(kubernetes_delivery="external-secrets")
    assert not POLICY_PERMISSIONS & managed(direct).permissions
    assert managed(eso).permissions >= POLICY_PERMISSIONS
    assert managed(eso).condition == managed(direct).condition and managed(eso).condition
    assert [g for g in direct if g.role == "roles/container.clusterViewer"]
    assert not [g for g in eso if g.resource.startswith("projects/") and g.role.startswith("roles/container.")]
    unconditioned = [g for g in eso if g.condition is None and POLICY_PERMISSIONS & g.permissions]
    assert unconditioned == []


def test_google_id_token_needs_no_token_secret() -> None:
    token_grants = [g for g in grants() if "runtime_hyperfleet_token" in g.address]
    assert len(token_grants) == 1
    found = grants(hyperfleet_api_auth="google-id-token", hyperfleet_api_token_secret="")
    assert not [g for g in found if "runtime_hyperfleet_token" in g.address]


@pytest.fixture
def manifests() -> list[dict[str, Any]]:
    variables = {**TERRAFORM_VARIABLES, "kubernetes_delivery": "external-secrets", "pinned_secret_project_id": ""}
    text = heredoc(str(Module(variables, project_number=lambda _p: NUMBER).local("external_secrets_manifests")))
    filled = text.replace("{cluster_id}", "cls-1").replace("{namespace}", "clusters-cls-1").replace("{project}", "p1")
    return list(yaml.safe_load_all(filled))


def test_the_rendered_manifests_produce_the_direct_modes_secret(manifests: list[dict[str, Any]]) -> None:
    store, external = manifests
    defaults = load(
        {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    )
    assert store["kind"] == "SecretStore" and external["kind"] == "ExternalSecret"  # namespaced, never Cluster*
    assert store["metadata"]["namespace"] == external["metadata"]["namespace"] == "clusters-cls-1"
    auth = store["spec"]["provider"]["gcpsm"]["auth"]
    reader = {"name": "hyperfleet-pull-secret-reader"}
    assert auth == {"workloadIdentity": {"clusterProjectID": "hf-demo-project", "serviceAccountRef": reader}}
    assert store["spec"]["provider"]["gcpsm"]["projectID"] == "p1"
    assert external["spec"]["secretStoreRef"] == {"kind": "SecretStore", "name": store["metadata"]["name"]}
    target = external["spec"]["target"]
    assert target["name"] == defaults.kubernetes_secret_template.format(cluster_id="cls-1")
    assert target["template"]["type"] == DOCKERCONFIGJSON and set(target["template"]["data"]) == {KEY}
    (item,) = external["spec"]["data"]
    assert item["remoteRef"]["key"] == defaults.secret_id_template.format(cluster_id="cls-1")
    assert target["template"]["data"][KEY] == "{{ ." + item["secretKey"] + " }}"


def test_the_principal_template_terraform_sets_is_one_the_function_accepts() -> None:
    """The form https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity gives (principals)."""
    raw = str(TERRAFORM_LOCALS["external_secrets_principal_template"])
    (inner,) = re.findall(r'join\("", \[(.*)\]\)', raw)
    pieces = re.findall(r'"([^"]*)"', inner)
    assert inner.endswith("var.external_secrets_service_account")
    template = (
        "".join(pieces)
        .replace("${data.google_project.management[0].number}", NUMBER)
        .replace("${local.management_cluster_project}", "hf-mgmt-project")
        + "hyperfleet-pull-secret-reader"
    )
    assert re.fullmatch(
        r"principal://iam\.googleapis\.com/projects/[0-9]+/locations/global/workloadIdentityPools/"
        r"[a-z][a-z0-9-]+\.svc\.id\.goog/subject/ns/\{namespace\}/sa/[a-z0-9-]+",
        template,
    ), template
    settings = load(
        {
            "HYPERFLEET_API_URL": "http://127.0.0.1:8000",
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
            "KUBERNETES_DELIVERY": "external-secrets",
            "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": template,
        }
    )
    assert settings.of(ExternalSecretsSettings).principal_template == template


def test_the_readme_shows_what_terraform_renders(manifests: list[dict[str, Any]]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "terraform" / "README.md").read_text()
    section = readme.split("## Delivery through External Secrets Operator", 1)[1]
    shown = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    filled = shown.replace("{cluster_id}", "cls-1").replace("{namespace}", "clusters-cls-1").replace("{project}", "p1")
    filled = filled.replace("hf-mgmt-project", "hf-demo-project")  # the README's management project, the stack's
    assert list(yaml.safe_load_all(filled)) == manifests
