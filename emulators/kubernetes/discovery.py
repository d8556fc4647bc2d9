"""Discovery (/api, /apis, the groups' resource lists) and /version, as kube-apiserver answers them."""

from __future__ import annotations

from emulators.kubernetes.base import Json

ADMISSION_GROUP = "admissionregistration.k8s.io"
AUTHORIZATION_GROUP = "authorization.k8s.io"
AUTHENTICATION_GROUP = "authentication.k8s.io"
# The API groups served besides core/v1, with their discovery (APIResourceList.resources).
GROUPS: dict[str, list[Json]] = {
    ADMISSION_GROUP: [
        {
            "name": name,
            "singularName": kind.lower(),
            "namespaced": False,
            "kind": kind,
            "verbs": ["get", "list"],
        }
        for name, kind in (
            ("validatingadmissionpolicies", "ValidatingAdmissionPolicy"),
            ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding"),
        )
    ],
    AUTHENTICATION_GROUP: [
        {
            "name": name,
            "singularName": kind.lower(),
            "namespaced": False,
            "kind": kind,
            "verbs": ["create"],
        }
        for name, kind in (("selfsubjectreviews", "SelfSubjectReview"), ("tokenreviews", "TokenReview"))
    ],
    AUTHORIZATION_GROUP: [
        {
            "name": "selfsubjectaccessreviews",
            "singularName": "selfsubjectaccessreview",
            "namespaced": False,
            "kind": "SelfSubjectAccessReview",
            "verbs": ["create"],
        }
    ],
}
GROUPS_LIST = sorted(GROUPS)


def discovery(path: str, address: str) -> Json:
    """The discovery document (or /version) at `path`; `address` is the server's host:port."""
    parts = [p for p in path.split("/") if p]
    if parts == ["apis"]:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": group,
                    "versions": [{"groupVersion": f"{group}/v1", "version": "v1"}],
                    "preferredVersion": {"groupVersion": f"{group}/v1", "version": "v1"},
                }
                for group in GROUPS_LIST
            ],
        }
    if parts[:1] == ["apis"] and len(parts) == 2:
        version = {"groupVersion": f"{parts[1]}/v1", "version": "v1"}
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": parts[1],
            "versions": [version],
            "preferredVersion": version,
        }
    if parts[:1] == ["apis"] and len(parts) == 3:
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{parts[1]}/v1",
            "resources": GROUPS[parts[1]],
        }
    if path.rstrip("/") == "/version":
        return {
            "major": "1",
            "minor": "33",
            "gitVersion": "v1.33.5-gke.emulator",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.6",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    if path.rstrip("/") == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }

    def resource(name: str, kind: str, namespaced: bool, verbs: list[str], short: list[str]) -> Json:
        out: Json = {
            "name": name,
            "singularName": kind.lower(),
            "namespaced": namespaced,
            "kind": kind,
            "verbs": verbs,
        }
        if short:
            out["shortNames"] = short
        return out

    return {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            resource(
                "namespaces",
                "Namespace",
                False,
                ["create", "delete", "get", "list", "patch", "update", "watch"],
                ["ns"],
            ),
            resource(
                "serviceaccounts",
                "ServiceAccount",
                True,
                ["get"],  # served here: get, and the token subresource (the admin API seeds accounts)
                ["sa"],
            ),
            {
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": True,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            },
            resource(
                "secrets",
                "Secret",
                True,
                ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                [],
            ),
        ],
    }
