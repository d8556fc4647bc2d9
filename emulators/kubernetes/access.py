"""Authentication and authorization: bearer tokens to users, RBAC objects to decisions.

Authorization is Kubernetes RBAC as kube-apiserver evaluates it (plugin/pkg/auth/authorizer/rbac/rbac.go
and pkg/apis/rbac/v1/evaluation_helpers.go): a request is allowed when some binding whose subjects
include the user (kind User by name, or kind Group among the user's groups) points at a role with a
rule matching the verb, API group, resource and, when the rule lists any, resource name. A
ClusterRoleBinding applies its role everywhere; a RoleBinding only in its own namespace. A rule with
resourceNames never matches a request without a name (create, list): RBAC docs, "Referring to resources".
There is no deny: what no rule allows is forbidden.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from emulators.kubernetes.base import Json

# Every authenticated user carries this group (k8s.io/apiserver/pkg/authentication/user).
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class PolicyRule:
    """One rule of a Role or ClusterRole (rbac.authorization.k8s.io/v1 PolicyRule)."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    @staticmethod
    def from_json(rule: Json) -> PolicyRule:
        return PolicyRule(
            verbs=tuple(rule.get("verbs") or ()),
            api_groups=tuple(rule.get("apiGroups") or ()),
            resources=tuple(rule.get("resources") or ()),
            resource_names=tuple(rule.get("resourceNames") or ()),
        )

    def _resource_matches(self, resource: str) -> bool:
        # evaluation_helpers.go ResourceMatches: "*", the exact "resource/subresource", or "*/subresource";
        # "serviceaccounts" alone does not cover "serviceaccounts/token".
        _, slash, subresource = resource.partition("/")
        return any(rule in ("*", resource) or (slash != "" and rule == f"*/{subresource}") for rule in self.resources)

    def allows(self, verb: str, group: str, resource: str, name: str) -> bool:
        # evaluation_helpers.go: VerbMatches, APIGroupMatches, ResourceMatches, ResourceNameMatches
        return (
            ("*" in self.verbs or verb in self.verbs)
            and ("*" in self.api_groups or group in self.api_groups)
            and self._resource_matches(resource)
            and (not self.resource_names or (name != "" and name in self.resource_names))
        )


@dataclass(frozen=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding (namespace "") resolved to its subjects."""

    name: str
    namespace: str
    role_kind: str  # Role | ClusterRole
    role_name: str
    users: frozenset[str]
    groups: frozenset[str]

    def covers(self, user: str, groups: Iterable[str]) -> bool:
        return user in self.users or bool(self.groups & set(groups))


def _binding(doc: Json) -> Binding:
    meta = doc.get("metadata") or {}
    ref = doc.get("roleRef") or {}
    subjects = doc.get("subjects") or []
    users = {s["name"] for s in subjects if s.get("kind") == "User"}
    # A ServiceAccount subject is the user system:serviceaccount:<ns>:<name>.
    users |= {
        f"system:serviceaccount:{s.get('namespace', '')}:{s['name']}"
        for s in subjects
        if s.get("kind") == "ServiceAccount"
    }
    groups = {s["name"] for s in subjects if s.get("kind") == "Group"}
    return Binding(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")) if doc.get("kind") == "RoleBinding" else "",
        role_kind=str(ref.get("kind", "")),
        role_name=str(ref.get("name", "")),
        users=frozenset(users),
        groups=frozenset(groups),
    )


class Access:
    """Who is calling (bearer tokens) and what they may do (Roles, ClusterRoles and their bindings)."""

    _lock: threading.RLock
    _tokens: dict[str, str]
    _authenticate: Callable[[str], str | None] | None
    # (kind, namespace, name) -> the stored object, for Role, ClusterRole, RoleBinding, ClusterRoleBinding
    _rbac: dict[tuple[str, str, str], Json]
    _granted: int

    RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")

    def put_rbac(self, doc: Json) -> None:
        """Store one RBAC object (as `kubectl apply` would); replaces one of the same kind and name."""
        kind = doc.get("kind")
        if kind not in self.RBAC_KINDS:
            raise ValueError(f"not an RBAC object: {kind!r}")
        meta = doc.get("metadata") or {}
        namespace = str(meta.get("namespace", "")) if kind in ("Role", "RoleBinding") else ""
        if kind in ("Role", "RoleBinding") and not namespace:
            raise ValueError(f"a {kind} needs metadata.namespace")
        with self._lock:
            self._rbac[(str(kind), namespace, str(meta.get("name", "")))] = copy.deepcopy(doc)

    def grant(
        self,
        identity: str,
        namespace: str = "*",
        verbs: Iterable[str] = ("*",),
        resources: Iterable[str] = ("*",),
        api_groups: Iterable[str] = ("*",),
    ) -> None:
        """Shorthand: a (Cluster)Role with one rule, bound to the user `identity` ("*" = cluster-wide)."""
        with self._lock:
            self._granted += 1
            name = f"emulator-grant-{self._granted}"
        rule = {"apiGroups": list(api_groups), "resources": list(resources), "verbs": list(verbs)}
        subject = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": identity}]
        if namespace == "*":
            self.put_rbac({"kind": "ClusterRole", "metadata": {"name": name}, "rules": [rule]})
            self.put_rbac(
                {
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                    "subjects": subject,
                }
            )
            return
        self.put_rbac({"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": [rule]})
        self.put_rbac(
            {
                "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": subject,
            }
        )

    def revoke(self, identity: str) -> None:
        """Drop every binding that names the user `identity` (its roles stay, unbound)."""
        with self._lock:
            for key in [k for k, doc in self._rbac.items() if k[0].endswith("Binding")]:
                if identity in _binding(self._rbac[key]).users:
                    del self._rbac[key]

    def rbac_state(self) -> list[Json]:
        with self._lock:
            return [copy.deepcopy(self._rbac[k]) for k in sorted(self._rbac)]

    def add_token(self, token: str, identity: str) -> None:
        with self._lock:
            self._tokens[token] = identity

    def identify(self, headers: dict[str, str]) -> str | None:
        """The user behind the request's bearer token, or None."""
        auth = headers.get("authorization", "")
        scheme, _, token = auth.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        with self._lock:
            if token in self._tokens:
                return self._tokens[token]
        if self._authenticate is not None:
            return self._authenticate(token)
        return None

    def _rules_of(self, kind: str, namespace: str, name: str) -> list[PolicyRule]:
        role = self._rbac.get((kind, namespace if kind == "Role" else "", name))
        return [PolicyRule.from_json(r) for r in (role or {}).get("rules") or []]

    def authorize(
        self, user: str, verb: str, resource: str, namespace: str, *, name: str = "", group: str = ""
    ) -> bool:
        """RBAC's decision for one request of `user` (groups: system:authenticated)."""
        groups = (AUTHENTICATED,)
        with self._lock:
            for (kind, bound_ns, _), doc in self._rbac.items():
                if kind == "ClusterRoleBinding":
                    scope_ok = True
                elif kind == "RoleBinding":
                    scope_ok = namespace != "" and bound_ns == namespace
                else:
                    continue
                if not scope_ok:
                    continue
                binding = _binding(doc)
                if not binding.covers(user, groups):
                    continue
                if kind == "RoleBinding" and binding.role_kind == "Role":
                    rules = self._rules_of("Role", bound_ns, binding.role_name)
                elif binding.role_kind == "ClusterRole":
                    rules = self._rules_of("ClusterRole", "", binding.role_name)
                else:
                    continue  # a ClusterRoleBinding can only reference a ClusterRole
                if any(rule.allows(verb, group, resource, name) for rule in rules):
                    return True
        return False
