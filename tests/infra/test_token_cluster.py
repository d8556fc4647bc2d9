"""terraform/ with service-account-token (issue 39): what the runtime account may do on the token cluster, and the
manifests rendered for it. Grants evaluated from the HCL by emulators/iam_terraform.py (as the emulators enforce
them); the manifests rendered by the function's templatefile() twin (emulators/kubernetes/manifests.py)."""

from __future__ import annotations

from typing import Any

from emulators.iam_terraform import Grant, service_account_grants
from emulators.kubernetes.manifests import render_token_cluster
from emulators.stack import TERRAFORM_VARIABLES

NUMBER = "123456789012"
TOKEN_CLUSTER = "projects/hyperfleet-regional-prod/locations/us-central1/clusters/regional-1"
SA_MODE = {
    "hyperfleet_api_auth": "service-account-token",
    "hyperfleet_api_token_secret": "",
    "hyperfleet_token_cluster": TOKEN_CLUSTER,
}


def grants(**variables: Any) -> list[Grant]:
    _email, found = service_account_grants({**TERRAFORM_VARIABLES, **variables}, project_number=lambda _p: NUMBER)
    return found


def in_project(found: list[Grant], project: str) -> list[Grant]:
    return [g for g in found if g.resource == f"projects/{project}"]


def test_the_runtime_account_may_only_get_the_token_clusters_endpoint() -> None:
    found = in_project(grants(**SA_MODE), "hyperfleet-regional-prod")
    assert [sorted(g.permissions or ()) for g in found] == [["container.clusters.get"]], found
    assert in_project(grants(), "hyperfleet-regional-prod") == []  # the other modes: nothing there


def test_the_dns_endpoint_adds_connect_and_nothing_else() -> None:
    found = in_project(grants(**SA_MODE, management_endpoint="dns"), "hyperfleet-regional-prod")
    assert [sorted(g.permissions or ()) for g in found] == [["container.clusters.connect", "container.clusters.get"]]


def test_the_role_allows_exactly_create_on_the_one_accounts_token() -> None:
    docs = render_token_cluster("run@p.iam.gserviceaccount.com", "hyperfleet", "pullsecret-adapter")
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"ServiceAccount", "Role", "RoleBinding"}
    assert kinds["Role"]["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["serviceaccounts/token"],
            "resourceNames": ["pullsecret-adapter"],
            "verbs": ["create"],
        }
    ]
    assert kinds["RoleBinding"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "run@p.iam.gserviceaccount.com"}
    ]
    assert {d["metadata"]["namespace"] for d in docs} == {"hyperfleet"}
    assert kinds["ServiceAccount"]["automountServiceAccountToken"] is False
