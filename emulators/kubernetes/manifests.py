"""The project's management-cluster manifests (terraform/kubernetes/*.yaml), rendered as Terraform renders them.

terraform/outputs.tf renders each file with templatefile(path, {runtime_sa_email, namespace_pattern, adapter_name}).
Terraform's template language (developer.hashicorp.com/terraform/language/expressions/strings):
`${name}` interpolates a variable, `$${` and `%%{` are literal `${` and `%{`; a `%{` directive or an
unknown variable is an error here (templatefile fails on an undefined variable too).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

MANIFEST_DIR = Path(__file__).resolve().parents[2] / "terraform" / "kubernetes"
TEMPLATES = ("rbac.yaml", "admission-policy.yaml")
# terraform/variables.tf, variable "management_namespace_pattern": its default (a test keeps them equal).
DEFAULT_NAMESPACE_PATTERN = "^clusters-[a-z0-9-]+$"
# terraform/variables.tf, variable "adapter_name": its default (ADAPTER_NAME's).
DEFAULT_ADAPTER_NAME = "pullsecret"

_TOKEN = re.compile(r"\$\$\{|%%\{|\$\{([^}]*)\}|%\{")


def render_template(text: str, variables: dict[str, str]) -> str:
    """templatefile() for the subset the manifests use: plain `${name}` interpolations and the escapes."""

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        if token == "%%{":
            return "%{"
        if token == "%{":
            raise ValueError("template directives (%{ ... }) are not supported by this renderer")
        name = match.group(1).strip()
        if name not in variables:
            raise ValueError(f"vars map does not contain key {name!r}")
        return variables[name]

    return _TOKEN.sub(replace, text)


def render(
    runtime_sa_email: str, namespace_pattern: str = DEFAULT_NAMESPACE_PATTERN, adapter_name: str = DEFAULT_ADAPTER_NAME
) -> list[dict[str, Any]]:
    """Every document of the manifests, rendered with these values and parsed."""
    values = {
        "runtime_sa_email": runtime_sa_email,
        "namespace_pattern": namespace_pattern,
        "adapter_name": adapter_name,
    }
    docs: list[dict[str, Any]] = []
    for name in TEMPLATES:
        text = render_template((MANIFEST_DIR / name).read_text(), values)
        docs += [doc for doc in yaml.safe_load_all(text) if doc]
    return docs
