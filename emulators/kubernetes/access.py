"""Authentication and authorization: bearer tokens to users, RBAC rules to decisions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from emulators.kubernetes.base import Json


@dataclass(frozen=True)
class Rule:
    identity: str
    namespace: str
    verbs: frozenset[str]
    resources: frozenset[str]

    def allows(self, identity: str, verb: str, resource: str, namespace: str) -> bool:
        return (
            self.identity == identity
            and (self.namespace == "*" or (namespace != "" and self.namespace == namespace))
            and ("*" in self.verbs or verb in self.verbs)
            and ("*" in self.resources or resource in self.resources)
        )

    def to_json(self) -> Json:
        return {
            "identity": self.identity,
            "namespace": self.namespace,
            "verbs": sorted(self.verbs),
            "resources": sorted(self.resources),
        }


class Access:
    """Who is calling (bearer tokens) and what they may do (RBAC rules)."""

    _lock: threading.RLock
    _rules: list[Rule]
    _tokens: dict[str, str]
    _authenticate: Callable[[str], str | None] | None

    def grant(
        self,
        identity: str,
        namespace: str = "*",
        verbs: Iterable[str] = ("*",),
        resources: Iterable[str] = ("*",),
    ) -> None:
        """Allow `identity` the verbs on the resources in a namespace ("*" = cluster-wide)."""
        with self._lock:
            self._rules.append(Rule(identity, namespace, frozenset(verbs), frozenset(resources)))

    def revoke(self, identity: str) -> None:
        with self._lock:
            self._rules = [r for r in self._rules if r.identity != identity]

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

    def authorize(self, user: str, verb: str, resource: str, namespace: str) -> bool:
        with self._lock:
            return any(rule.allows(user, verb, resource, namespace) for rule in self._rules)
