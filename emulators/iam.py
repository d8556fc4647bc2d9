"""IAM for the gRPC emulators: role bindings, with conditions, checked per method on the resource it touches.

The model, after Google's IAM overview (https://cloud.google.com/iam/docs/overview) and conditions
overview (https://cloud.google.com/iam/docs/conditions-overview):

- A binding grants a role's permissions to one member on a resource (a project, or a secret) and on
  every resource under it (a secret's versions inherit the secret's policy, a project's secrets the
  project's).
- Each RPC needs one permission on one resource, Google's names (see the tables in secretmanager.py and
  gke.py); Secret Manager checks CreateSecret and ListSecrets on the *project*
  (https://cloud.google.com/secret-manager/docs/access-control).
- A binding's condition is a CEL expression over the checked resource's attributes (`resource.name`,
  `resource.type`, `resource.service`; https://cloud.google.com/iam/docs/conditions-resource-attributes).
  It is evaluated by cel-python, plus IAM's own `extract()` function
  (https://cloud.google.com/iam/docs/conditions-attribute-reference#extract). A condition that is false
  or that ends in an error grants nothing: IAM treats an evaluation error as "not granted"
  (https://cloud.google.com/iam/docs/conditions-overview#evaluation).
- Allow policies only (no deny policies). Resource names use the project NUMBER, as the services report
  them and as conditions see them.
- A policy with no binding at all lets every authenticated caller through (emulator tests that do not
  care about IAM); once a policy has a binding, a permission nobody granted is PERMISSION_DENIED.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

ALL = "*"

# Predefined roles the Terraform configuration grants, with their permission lists as Google publishes
# them in the IAM roles and permissions index (https://cloud.google.com/iam/docs/roles-permissions).
# A role not listed here is refused when a grant is loaded, so that adding one to terraform/ makes the
# tests ask for its permission list instead of guessing.
PREDEFINED_ROLES: dict[str, frozenset[str]] = {
    # https://cloud.google.com/iam/docs/roles-permissions/secretmanager#secretmanager.secretAccessor
    "roles/secretmanager.secretAccessor": frozenset({"secretmanager.versions.access"}),
    # https://cloud.google.com/iam/docs/roles-permissions/secretmanager#secretmanager.secretVersionAdder
    "roles/secretmanager.secretVersionAdder": frozenset({"secretmanager.versions.add"}),
    # https://cloud.google.com/iam/docs/roles-permissions/container#container.clusterViewer
    "roles/container.clusterViewer": frozenset(
        {
            "container.clusters.get",
            "container.clusters.list",
            "resourcemanager.projects.get",
            "resourcemanager.projects.list",
        }
    ),
    # Basic role; stands for "everything" in emulator tests that grant a whole project.
    "roles/owner": frozenset({ALL}),
}

# resource.type / resource.service values (https://cloud.google.com/iam/docs/conditions-resource-attributes).
PROJECT_TYPE = "cloudresourcemanager.googleapis.com/Project"
SECRET_TYPE = "secretmanager.googleapis.com/Secret"
SECRET_VERSION_TYPE = "secretmanager.googleapis.com/SecretVersion"
CLUSTER_TYPE = "container.googleapis.com/Cluster"


@dataclass(frozen=True)
class Resource:
    """What a permission is checked against: its full name (project number form), type and service."""

    name: str
    type: str
    service: str

    @classmethod
    def project(cls, number: str) -> Resource:
        return cls(f"projects/{number}", PROJECT_TYPE, "cloudresourcemanager.googleapis.com")

    @classmethod
    def secret(cls, number: str, secret_id: str) -> Resource:
        return cls(f"projects/{number}/secrets/{secret_id}", SECRET_TYPE, "secretmanager.googleapis.com")

    @classmethod
    def secret_version(cls, number: str, secret_id: str, version: str) -> Resource:
        name = f"projects/{number}/secrets/{secret_id}/versions/{version}"
        return cls(name, SECRET_VERSION_TYPE, "secretmanager.googleapis.com")

    @classmethod
    def cluster(cls, number: str, location: str, cluster: str) -> Resource:
        name = f"projects/{number}/locations/{location}/clusters/{cluster}"
        return cls(name, CLUSTER_TYPE, "container.googleapis.com")


def _extract(value: Any, template: Any) -> celtypes.StringType:
    """IAM's `extract`: the text the template's one {placeholder} covers, or "" when it does not match.

    The placeholder's value runs from the end of the text before it up to the first occurrence of the
    text after it (or to the end when nothing follows).
    """
    text, spec = str(value), str(template)
    start, end = spec.find("{"), spec.find("}")
    if start < 0 or end < start:
        raise ValueError(f"extract template needs one {{placeholder}}: {spec!r}")
    prefix, suffix = spec[:start], spec[end + 1 :]
    at = text.find(prefix)
    if at < 0:
        return celtypes.StringType("")
    rest = text[at + len(prefix) :]
    if not suffix:
        return celtypes.StringType(rest)
    stop = rest.find(suffix)
    return celtypes.StringType("" if stop < 0 else rest[:stop])


_CEL = celpy.Environment()
_FUNCTIONS: dict[str, Any] = {"extract": _extract}


@functools.lru_cache(maxsize=256)
def _compile(expression: str) -> Any:
    try:
        return _CEL.program(_CEL.compile(expression), functions=_FUNCTIONS)
    except CELParseError as err:
        raise ValueError(f"invalid IAM condition {expression!r}: {err}") from err


class Condition:
    """A compiled IAM condition; raises ValueError on an expression IAM would refuse to store."""

    def __init__(self, expression: str, title: str = "") -> None:
        self.expression = expression
        self.title = title
        self._program = _compile(expression)

    def holds(self, resource: Resource) -> bool:
        return _holds(self.expression, resource)


@functools.lru_cache(maxsize=16384)
def _holds(expression: str, resource: Resource) -> bool:
    """A condition's verdict on one resource. Its only inputs are the expression and the resource's name, type
    and service (no request time or other attribute), so it is computed once per pair: the interpreted CEL
    (cel-python) was a tenth of the emulators' CPU under load, evaluated on every Secret Manager call."""
    attributes = json_to_cel({"name": resource.name, "type": resource.type, "service": resource.service})
    try:
        result = _compile(expression).evaluate({"resource": attributes})
    except (CELEvalError, ValueError, TypeError):
        return False  # an error grants nothing
    return isinstance(result, celtypes.BoolType) and bool(result)


@dataclass(frozen=True)
class Binding:
    member: str  # the caller identity (service account e-mail) as the emulators authenticate it
    role: str
    permissions: frozenset[str]
    resource: str  # where the binding is attached: projects/NUMBER or projects/NUMBER/secrets/ID
    condition: Condition | None = None

    def grants(self, identity: str, permission: str, resource: Resource) -> bool:
        if identity != self.member:
            return False
        if ALL not in self.permissions and permission not in self.permissions:
            return False
        if resource.name != self.resource and not resource.name.startswith(self.resource + "/"):
            return False
        return self.condition is None or self.condition.holds(resource)

    def to_json(self) -> dict[str, Any]:
        return {
            "member": self.member,
            "role": self.role,
            "resource": self.resource,
            "permissions": sorted(self.permissions),
            "condition": None if self.condition is None else self.condition.expression,
        }


class Policy:
    """The allow bindings of one emulator; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bindings: list[Binding] = []

    def bind(self, binding: Binding) -> None:
        with self._lock:
            self._bindings.append(binding)

    def extend(self, bindings: Iterable[Binding]) -> None:
        with self._lock:
            self._bindings.extend(bindings)

    def revoke(self, member: str) -> None:
        """Drop every binding of `member`."""
        with self._lock:
            self._bindings = [b for b in self._bindings if b.member != member]

    def allows(self, identity: str, permission: str, resource: Resource) -> bool:
        with self._lock:
            bindings = list(self._bindings)
        if not bindings:
            return True
        return any(b.grants(identity, permission, resource) for b in bindings)

    def clear(self) -> None:
        with self._lock:
            self._bindings.clear()

    def to_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [b.to_json() for b in self._bindings]


_CHECKED_SERVICES = ("secretmanager", "container")  # the services whose permissions these emulators check


def role_permissions(role: str) -> frozenset[str]:
    """The permissions of a predefined role that matter here; KeyError names a role that is not modelled.

    A predefined role of another service (roles/pubsub.publisher, roles/logging.logWriter, ...) holds only
    that service's permissions, none of which these emulators check, so it counts as empty. A basic role
    (roles/editor) or a Secret Manager / GKE role missing from PREDEFINED_ROLES is an error.
    """
    if role in PREDEFINED_ROLES:
        return PREDEFINED_ROLES[role]
    service, dot, _name = role.removeprefix("roles/").partition(".")
    if role.startswith("roles/") and dot and service not in _CHECKED_SERVICES:
        return frozenset()
    raise KeyError(f"predefined role {role!r} is not modelled: add its permissions to emulators/iam.py")
