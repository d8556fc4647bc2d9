"""The project's management-cluster manifests (terraform/kubernetes/*.yaml), rendered as Terraform renders them.

terraform/outputs.tf renders each file with templatefile(path, {runtime_sa_email, namespace_pattern, adapter_name,
secret_name_prefix, secret_name_suffix, policy_name}); the renderer is the function's own
(pullsecret.delivery.direct.admission_policy, which renders the policy to compare it with the installed one), held byte
for byte to Terraform's by tests/infra/test_kubernetes_manifests.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pullsecret.delivery.direct.admission_policy import render_template, template_variables

MANIFEST_DIR = Path(__file__).resolve().parents[2] / "terraform" / "kubernetes"
TEMPLATES = ("rbac.yaml", "admission-policy.yaml")
# terraform/variables.tf, variable "management_namespace_pattern": its default (a test keeps them equal).
DEFAULT_NAMESPACE_PATTERN = "^clusters-[a-z0-9-]+$"
# terraform/variables.tf, variable "adapter_name": its default (ADAPTER_NAME's).
DEFAULT_ADAPTER_NAME = "pullsecret"
# terraform/variables.tf, variable "kubernetes_secret_template": its default (KUBERNETES_SECRET_TEMPLATE's).
DEFAULT_SECRET_TEMPLATE = "{cluster_id}-pull-secret"
# terraform/main.tf, local admission_policy_name without name_suffix: ADMISSION_POLICY_NAME's default (a test keeps them
# equal; not imported from pullsecret.delivery.direct.settings, which would bring pullsecret.errors into `python -m
# emulators trigger`, a command that must run while the function's package does not import).
DEFAULT_POLICY_NAME = "hyperfleet-pullsecret-adapter-scope"
TOKEN_CLUSTER_TEMPLATE = "token-cluster.yaml"  # terraform/outputs.tf, output "token_cluster_manifests"
__all__ = ["render", "render_template", "render_token_cluster"]


def render(
    runtime_sa_email: str,
    namespace_pattern: str = DEFAULT_NAMESPACE_PATTERN,
    adapter_name: str = DEFAULT_ADAPTER_NAME,
    secret_template: str = DEFAULT_SECRET_TEMPLATE,
    policy_name: str = DEFAULT_POLICY_NAME,
) -> list[dict[str, Any]]:
    """Every document of the manifests, rendered with these values and parsed (`policy_name`: ADMISSION_POLICY_NAME,
    by default an instance's without name_suffix)."""
    values = template_variables(
        runtime_sa_email=runtime_sa_email,
        namespace_pattern=namespace_pattern,
        adapter_name=adapter_name,
        secret_template=secret_template,
        policy_name=policy_name,
    )
    docs: list[dict[str, Any]] = []
    for name in TEMPLATES:
        text = render_template((MANIFEST_DIR / name).read_text(), values)
        docs += [doc for doc in yaml.safe_load_all(text) if doc]
    return docs


def render_token_cluster(runtime_sa_email: str, namespace: str, service_account: str) -> list[dict[str, Any]]:
    """The token cluster's ServiceAccount, Role and RoleBinding, as terraform output token_cluster_manifests."""
    values = {"runtime_sa_email": runtime_sa_email, "namespace": namespace, "service_account": service_account}
    text = render_template((MANIFEST_DIR / TOKEN_CLUSTER_TEMPLATE).read_text(), values)
    return [doc for doc in yaml.safe_load_all(text) if doc]
