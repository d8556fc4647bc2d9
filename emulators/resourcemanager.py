"""Cloud Resource Manager's `projects.testIamPermissions` (REST, v3), answered from the grants the other emulators
enforce.

    POST /v3/projects/{project id or number}:testIamPermissions   {"permissions": [...]}  ->  {"permissions": [...]}

https://cloud.google.com/resource-manager/reference/rest/v3/projects/testIamPermissions: "Returns permissions that a
caller has on the specified project"; the call needs no permission. Each asked permission is judged on the project
resource (projects/NUMBER) by the policy of the emulator that checks that service's permissions (Secret Manager's
for secretmanager.*, GKE's for container.*), conditions included: a condition on a secret's name is false for the
project, as IAM evaluates it. The answer lists the granted ones in the asked order and omits the field when none
is (proto3 JSON). Wildcards are refused (400), as IAM refuses them. Bearer tokens are those the metadata server
issued; no token: 401.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from emulators.faults import FaultBook, ServiceControl
from emulators.grpcbase import GrpcEmulator
from emulators.httpbase import HTTPEmulator, Reply, Request
from emulators.iam import Resource

_ROUTE = re.compile(r"^/v3/projects/([^/:]+):testIamPermissions$")


def _error(status: int, code: str, message: str) -> Reply:
    return Reply.json(status, {"error": {"code": status, "message": message, "status": code}})


class ResourceManagerEmulator(HTTPEmulator):
    """projects.testIamPermissions over the grants of `services` (permission prefix -> the emulator checking it)."""

    service: ClassVar[str] = "resourcemanager"

    def __init__(
        self,
        book: FaultBook,
        services: dict[str, GrpcEmulator],
        *,
        authenticate: Callable[[str], str | None],
    ) -> None:
        super().__init__()
        self.control = ServiceControl(book, self.service)
        self.services = services
        self.authenticate = authenticate

    def handle(self, request: Request) -> Reply:
        match = _ROUTE.match(request.path)
        if request.method != "POST" or match is None:
            return _error(404, "NOT_FOUND", f"no route {request.method} {request.path}")
        code = self.control.enter("TestIamPermissions")
        if code is not None:
            return Reply.drop(code) if code in ("reset", "timeout") else _error(int(code), "UNAVAILABLE", "injected")
        scheme, _, token = (request.header("authorization") or "").partition(" ")
        identity = self.authenticate(token.strip()) if scheme.lower() == "bearer" else None
        if identity is None:
            return _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        try:
            asked = request.json().get("permissions") or []
        except (ValueError, AttributeError):
            return _error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        if not isinstance(asked, list) or any(not isinstance(p, str) or "*" in p for p in asked):
            message = "Permissions with wildcards (such as '*' or 'storage.*') are not allowed."
            return _error(400, "INVALID_ARGUMENT", message)
        granted = [p for p in asked if self._allows(identity, p, match.group(1))]
        return Reply.json(200, {"permissions": granted} if granted else {})

    def _allows(self, identity: str, permission: str, project: str) -> bool:
        emulator = self.services.get(permission.split(".", 1)[0])
        if emulator is None:
            return False  # a service no emulator checks: nothing is known to grant it
        number = emulator.projects.number(project)
        return emulator.iam.allows(identity, permission, Resource.project(number))
