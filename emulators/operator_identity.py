"""An operator's own read-only account on the management cluster emulator, as a kubeconfig file.

The function's runtime identity may not read Secrets (terraform/kubernetes/rbac.yaml), so the operator CLI, run
with it, cannot show what direct delivery wrote. On GKE an operator reads with their own identity
(`gcloud container clusters get-credentials`); on the playground this is that identity: a static bearer token of
the Kubernetes emulator for the user OPERATOR, bound by a ClusterRole that reads (get, list, watch) what the
adapter's delivery touches and writes nothing. The kubeconfig (server, CA, token; mode 0600) lies in the stack's
temporary folder, so it goes when the playground stops; the env file names it in PULLSECRET_OPERATOR_KUBECONFIG
(`kubectl --kubeconfig "$PULLSECRET_OPERATOR_KUBECONFIG" get secrets -n clusters-cls-demo01`).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path
from typing import Any

OPERATOR = "operator@example.com"
ROLE = "hyperfleet-pullsecret-operator-read"
_READ = ["get", "list", "watch"]
_RBAC = "rbac.authorization.k8s.io/v1"
RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets", "namespaces", "serviceaccounts"], "verbs": _READ},
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
        "verbs": _READ,
    },
    {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["*"], "verbs": _READ},
    {"apiGroups": ["external-secrets.io"], "resources": ["*"], "verbs": _READ},
]


def manifests() -> list[dict[str, Any]]:
    """The ClusterRole and its binding to OPERATOR."""
    return [
        {"apiVersion": _RBAC, "kind": "ClusterRole", "metadata": {"name": ROLE}, "rules": RULES},
        {
            "apiVersion": _RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR}],
        },
    ]


def kubeconfig(server: str, ca_pem: bytes, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "mgmt-1",
                "cluster": {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
            }
        ],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "operator@mgmt-1", "context": {"cluster": "mgmt-1", "user": "operator"}}],
        "current-context": "operator@mgmt-1",
    }


def grant(kubernetes: Any, folder: str) -> Path:
    """Give OPERATOR a token and read rights on `kubernetes` (a KubernetesEmulator); write its kubeconfig into
    `folder`; return the file's path."""
    token = "operator-" + secrets.token_urlsafe(24)
    kubernetes.add_token(token, OPERATOR)
    kubernetes.apply_manifests(manifests())
    path = Path(folder) / "operator-kubeconfig"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(kubeconfig(f"https://{kubernetes.address}", kubernetes.ca_pem, token), handle)
    return path
