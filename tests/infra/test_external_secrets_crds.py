"""The SecretStore and ExternalSecret Terraform renders (output external_secrets_manifests) and terraform/README.md
shows, judged by External Secrets Operator's own CRD schemas (emulators/contracts/, vendored from
external-secrets/external-secrets v2.9.0) as the API server applies them with Strict field validation, and by the
admission rules ESO's webhook adds (apis/externalsecrets/v1/externalsecret_validator.go, same commit).

Every Terraform setting that changes the rendered text has a case; each placeholder is filled as terraform/README.md
tells the component that owns the management cluster to fill it.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.iam_terraform import Module
from emulators.stack import TERRAFORM_VARIABLES
from tests.infra import crd_schema, reality
from tests.infra.terraform_fmt import terraform_binary
from tests.infra.terraform_offline import NUMBER, heredoc

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "emulators" / "contracts"
SCHEMAS = {
    "SecretStore": CONTRACTS / "external-secrets-2.9.0-secretstore-v1.schema.yaml",
    "ExternalSecret": CONTRACTS / "external-secrets-2.9.0-externalsecret-v1.schema.yaml",
}
CLUSTER_ID = "2lq1jv5g7a8kcm3e9r0u6t4b1np2wxyz"
NAMESPACE = f"clusters-{CLUSTER_ID}"
FILLED = {"{cluster_id}": CLUSTER_ID, "{namespace}": NAMESPACE, "{project}": "customer-project-1"}
# Each Terraform variable the heredoc interpolates, at a value other than its default.
SETTINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "pinned secret project": {"pinned_secret_project_id": "hf-secrets-prod"},
    "other service account": {"external_secrets_service_account": "eso-pull-reader"},
    "other secret id": {"secret_id_template": "pull_{cluster_id}_dockercfg"},
    "other kubernetes secret name": {"kubernetes_secret_template": "hf.{cluster_id}.pull"},
    "other management project": {"management_cluster": "projects/hf-mgmt-eu/locations/europe-west1/clusters/m1"},
    "other refresh interval": {"external_secrets_refresh_interval": "1h30m"},
}


def fill(text: str) -> str:
    """The placeholders replaced as terraform/README.md's `sed` line does."""
    for placeholder, value in FILLED.items():
        text = text.replace(placeholder, value)
    return text


def rendered(**settings: Any) -> list[dict[str, Any]]:
    variables = {**TERRAFORM_VARIABLES, "kubernetes_delivery": "external-secrets", "pinned_secret_project_id": ""}
    module = Module({**variables, **settings}, project_number=lambda _p: NUMBER)
    return list(yaml.safe_load_all(fill(heredoc(str(module.local("external_secrets_manifests"))))))


def webhook_problems(document: dict[str, Any]) -> list[str]:
    """What ESO's validating webhook refuses beyond the schema, for the fields these manifests use
    (apis/externalsecrets/v1/externalsecret_validator.go validatePolicies and validateExternalSecret; the gcpsm
    provider's ValidateStore through runtime/esutils ValidateReferentServiceAccountSelector)."""
    found = []
    spec = document.get("spec", {})
    if document["kind"] == "ExternalSecret":
        target = spec.get("target", {})
        creation, deletion = target.get("creationPolicy", "Owner"), target.get("deletionPolicy", "Retain")
        if deletion == "Delete" and creation in ("Merge", "None", "CreateOrMerge"):
            found.append("deletionPolicy=Delete must not be used when the controller doesn't own the secret")
        if deletion == "Merge" and creation == "None":
            found.append("deletionPolicy=Merge must not be used with creationPolicy=None")
        if not spec.get("data") and not spec.get("dataFrom"):
            found.append("either data or dataFrom should be specified")
    else:
        reference = spec.get("provider", {}).get("gcpsm", {}).get("auth", {}).get("workloadIdentity", {})
        namespace = reference.get("serviceAccountRef", {}).get("namespace")
        if namespace is not None and namespace != document["metadata"].get("namespace"):
            found.append(
                "namespace should either be empty or match the namespace of the SecretStore for a namespaced "
                "SecretStore"
            )
    return found


def admitted(document: dict[str, Any]) -> list[str]:
    """Every reason the management cluster would refuse `document` (empty: `kubectl apply` takes it)."""
    identity, schema = crd_schema.load_vendored(SCHEMAS[document["kind"]])
    assert document["apiVersion"] == f"{identity['group']}/{identity['version']}", document["apiVersion"]
    assert identity["served"] and identity["scope"] == "Namespaced"
    return crd_schema.problems(schema, document) + webhook_problems(document)


def readme_manifests() -> list[dict[str, Any]]:
    readme = (ROOT / "terraform" / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL)
    shown = [doc for block in blocks if "external-secrets.io/" in block for doc in yaml.safe_load_all(fill(block))]
    assert shown, "terraform/README.md shows no External Secrets manifest"
    return shown


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
def test_every_rendering_is_admitted_by_the_crds_and_the_webhook(settings: dict[str, Any]) -> None:
    documents = rendered(**settings)
    assert [d["kind"] for d in documents] == ["SecretStore", "ExternalSecret"]
    for document in documents:
        assert admitted(document) == [], document["kind"]


def test_each_setting_changes_the_rendering() -> None:
    """The cases above are not the same text under other names: each setting shows in what is validated."""
    default = rendered()
    for name, settings in SETTINGS.items():
        if settings:
            assert rendered(**settings) != default, name


def test_the_cases_are_what_terraform_itself_renders(tmp_path: Path) -> None:
    """The heredoc of terraform/external_secrets.tf evaluated by the real terraform binary (no provider needed:
    it reads variables only), one output per case, against the renderings validated above."""
    source = (ROOT / "terraform" / "external_secrets.tf").read_text()
    (body,) = re.findall(r"external_secrets_manifests = (<<-EOT\n.*?\n\s*EOT)\n", source, re.DOTALL)
    used = set(re.findall(r"var\.(\w+)", body))
    assert set(re.findall(r"local\.(\w+)", body)) <= {"management_cluster_project"}
    defaults = {"pinned_secret_project_id": ""}
    blocks = []
    for index, settings in enumerate(SETTINGS.values()):
        values = {name: {**TERRAFORM_VARIABLES, **defaults, **settings}.get(name) for name in used}
        missing = [name for name, value in values.items() if value is None]
        values.update(_variable_defaults(missing))
        # main.tf's local.management_cluster_project, from the same management_cluster.
        project = f'split("/", "{({**TERRAFORM_VARIABLES, **settings})["management_cluster"]}")[1]'
        merged = f"merge({json.dumps(values)}, {{ management_cluster_project = {project} }})"
        blocks.append(f"locals {{\n  case{index} = {merged}\n}}\n")
        text = body.replace("local.management_cluster_project", "var.management_cluster_project")
        blocks.append(f'output "case{index}" {{\n  value = {text.replace("var.", f"local.case{index}.")}\n}}\n')
    (tmp_path / "main.tf").write_text("".join(blocks))
    outputs = reality.terraform_outputs(terraform_binary(), tmp_path)
    for index, settings in enumerate(SETTINGS.values()):
        assert list(yaml.safe_load_all(fill(outputs[f"case{index}"]))) == rendered(**settings), settings


def _variable_defaults(names: list[str]) -> dict[str, str]:
    """terraform/variables.tf's default of each named variable."""
    text = (ROOT / "terraform" / "variables.tf").read_text()
    found = {}
    for name in names:
        block = text.split(f'variable "{name}" {{', 1)[1]
        (found[name],) = re.findall(r'^\s*default\s*=\s*"([^"]*)"', block.split("\nvariable ", 1)[0], re.MULTILINE)
    return found


def test_the_readme_manifests_are_admitted() -> None:
    for document in readme_manifests():
        assert admitted(document) == [], document["kind"]


def test_the_secret_is_named_by_kubernetes_secret_template() -> None:
    """The Secret ESO writes has the name the function would write in direct mode (KUBERNETES_SECRET_TEMPLATE)."""
    _store, external = rendered(kubernetes_secret_template="hf.{cluster_id}.pull")
    assert external["spec"]["target"]["name"] == f"hf.{CLUSTER_ID}.pull"


def test_the_store_exchanges_its_token_in_the_pool_whose_principal_the_function_is_granted() -> None:
    """ESO's workload identity exchanges the service account's token in `<clusterProjectID>.svc.id.goog`, the
    metadata server's project when unset (external-secrets providers/v1/gcp/secretmanager/workload_identity.go,
    gcpWorkloadIdentity): named, it is the management cluster's project, whose pool the principal template
    Terraform gives the function names, wherever ESO runs."""
    module = Module(
        {**TERRAFORM_VARIABLES, "kubernetes_delivery": "external-secrets"}, project_number=lambda _p: NUMBER
    )
    raw_principal = str(module._locals["external_secrets_principal_template"])
    assert "workloadIdentityPools/${local.management_cluster_project}.svc.id.goog/" in raw_principal
    store, _external = rendered()
    identity = store["spec"]["provider"]["gcpsm"]["auth"]["workloadIdentity"]
    assert identity["clusterProjectID"] == module.local("management_cluster_project") == "hf-demo-project"


def test_no_cel_rule_governs_a_field_the_manifests_set() -> None:
    """Upstream's x-kubernetes-validations rules (14 in the SecretStore CRD) sit on other providers' fields; were
    one to reach ours after a re-vendoring, `problems` evaluates it, and this says so."""
    for document in rendered() + rendered(pinned_secret_project_id="hf-secrets-prod"):
        _identity, schema = crd_schema.load_vendored(SCHEMAS[document["kind"]])
        assert crd_schema.cel_rules_reached(schema, document) == []


def _broken(kind: str, change: Any) -> dict[str, Any]:
    document = copy.deepcopy({d["kind"]: d for d in rendered()}[kind])
    change(document["spec"])
    return document


def _rename(mapping: dict[str, Any], old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


WRONG: dict[str, tuple[str, Any, str]] = {
    "misspelled secretStoreRef": (
        "ExternalSecret",
        lambda s: _rename(s, "secretStoreRef", "secretStoreRefs"),
        "Additional properties are not allowed ('secretStoreRefs' was unexpected)",
    ),
    "remoteRef a string": (
        "ExternalSecret",
        lambda s: s["data"][0].update(remoteRef="hyperfleet-x-pull-secret"),
        "'hyperfleet-x-pull-secret' is not of type 'object'",
    ),
    "remoteRef without key": (
        "ExternalSecret",
        lambda s: _rename(s["data"][0]["remoteRef"], "key", "name"),
        "'key' is a required property",
    ),
    "unknown creationPolicy": (
        "ExternalSecret",
        lambda s: s["target"].update(creationPolicy="Owned"),
        "'Owned' is not one of ['Owner', 'Orphan', 'Merge', 'None', 'CreateOrMerge']",
    ),
    "secret key not a key name": (
        "ExternalSecret",
        lambda s: s["data"][0].update(secretKey="docker config"),
        "'docker config' does not match",
    ),
    "Delete without owning": (
        "ExternalSecret",
        lambda s: s["target"].update(creationPolicy="Merge"),
        "deletionPolicy=Delete must not be used when the controller doesn't own the secret",
    ),
    "workloadIdentity without serviceAccountRef": (
        "SecretStore",
        lambda s: _rename(s["provider"]["gcpsm"]["auth"]["workloadIdentity"], "serviceAccountRef", "serviceAccount"),
        "'serviceAccountRef' is a required property",
    ),
    "store service account in another namespace": (
        "SecretStore",
        lambda s: s["provider"]["gcpsm"]["auth"]["workloadIdentity"]["serviceAccountRef"].update(namespace="eso"),
        "namespace should either be empty or match the namespace of the SecretStore",
    ),
    "projectId spelled as in Terraform": (
        "SecretStore",
        lambda s: _rename(s["provider"]["gcpsm"], "projectID", "projectId"),
        "('projectId' was unexpected)",
    ),
}


@pytest.mark.parametrize(("kind", "change", "expected"), WRONG.values(), ids=WRONG.keys())
def test_a_wrong_manifest_is_refused(kind: str, change: Any, expected: str) -> None:
    found = admitted(_broken(kind, change))
    assert any(expected in problem for problem in found), found


def test_cel_rules_are_evaluated() -> None:
    """The CEL path on a schema shaped like upstream's `crd` provider (one of auth or authRef is required)."""
    rule = {"message": "one of auth or authRef is required", "rule": "has(self.auth) || has(self.authRef)"}
    crd = {"type": "object", "properties": {"auth": {"type": "string"}}, "x-kubernetes-validations": [rule]}
    schema = {"type": "object", "properties": {"crd": crd}}
    assert crd_schema.problems(schema, {"crd": {"auth": "a"}}) == []
    assert crd_schema.problems(schema, {"crd": {}}) == [".crd: Invalid value: one of auth or authRef is required"]
