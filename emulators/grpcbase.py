"""Shared machinery of the gRPC emulators (Secret Manager, GKE).

A `GrpcEmulator` owns a grpc server listening with local credentials (LOCAL_TCP): clients may use
``grpc.local_channel_credentials`` composed with per-call credentials (how google-auth attaches a
bearer token), or a plain ``grpc.insecure_channel`` — local credentials do no handshake, so both
work against the same port.  Every RPC goes through `GrpcEmulator.unary`, which counts the call and
injects faults (`ServiceControl`), then authenticates the caller; each handler then checks the one
permission its method needs on the resource it touches (`authorize`, the model in `emulators.iam`).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any, NoReturn

import grpc
from grpc_status import rpc_status  # type: ignore[import-untyped]

from emulators.faults import LOST_RESPONSE, FaultBook, ServiceControl
from emulators.iam import Binding, Condition, Policy, Resource, role_permissions

Authenticator = Callable[[str], str | None]

_PROJECT_ID = re.compile(r"^[a-z][a-z0-9.:-]{0,62}$")  # lenient: tests use short ids like "p1"
_PROJECT_NUMBER = re.compile(r"^[0-9]{1,19}$")
_TIMEOUT_FAULT_S = 30.0


class RpcError(Exception):
    """Raised inside a handler to end the RPC with a gRPC status."""

    def __init__(self, code: grpc.StatusCode, message: str, *, details: Any = None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.details = details  # a google.rpc.status_pb2.Status carrying rich error details, or None


def fail(code: grpc.StatusCode, message: str) -> NoReturn:
    raise RpcError(code, message)


def project_number_for(project_id: str) -> str:
    """A deterministic 12-digit project number for a project id nobody registered."""
    digest = int.from_bytes(hashlib.sha256(project_id.encode()).digest()[:8], "big")
    return str(100_000_000_000 + digest % 900_000_000_000)


class Projects:
    """Project id ↔ number registry; ids nobody registered get a derived number on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, str] = {}
        self._by_number: dict[str, str] = {}

    def add(self, project_id: str, number: str | int) -> None:
        number = str(number)
        if not _PROJECT_NUMBER.match(number):
            raise ValueError(f"project number must be digits: {number!r}")
        with self._lock:
            old = self._by_id.pop(project_id, None)
            if old is not None:
                self._by_number.pop(old, None)
            self._by_id[project_id] = number
            self._by_number[number] = project_id

    def number(self, project: str) -> str:
        """The project number for a project id or number; raises ValueError on a malformed one."""
        if _PROJECT_NUMBER.match(project):
            return project
        if not _PROJECT_ID.match(project):
            raise ValueError(f"invalid project id {project!r}")
        with self._lock:
            number = self._by_id.get(project)
            if number is None:
                number = project_number_for(project)
                self._by_id[project] = number
                self._by_number[number] = project
            return number

    def project_id(self, number: str) -> str:
        """The project id for a number (the number itself when no id is known)."""
        with self._lock:
            return self._by_number.get(number, number)

    def to_json(self) -> dict[str, str]:
        with self._lock:
            return dict(self._by_id)


class GrpcEmulator:
    """Server lifecycle, fault injection, authentication and IAM shared by the gRPC emulators."""

    service = ""
    grpc_service = ""  # fully qualified gRPC service name
    permission_prefix = ""  # for PERMISSION_DENIED messages, e.g. "secretmanager.secrets"

    def __init__(self, book: FaultBook, *, authenticate: Authenticator | None = None) -> None:
        self.control = ServiceControl(book, self.service)
        self.authenticate = authenticate
        self.projects = Projects()
        self.iam = Policy()
        self._server: grpc.Server | None = None
        self._port = 0
        self._host = "127.0.0.1"

    # -- lifecycle ----------------------------------------------------------------------
    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        raise NotImplementedError

    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on host:port (0 = a free port) with local credentials."""
        if self._server is not None:
            raise RuntimeError(f"{self.service} emulator already started")
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix=self.service))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(self.grpc_service, self.handlers()),))
        creds = grpc.local_server_credentials(grpc.LocalConnectionType.LOCAL_TCP)
        bound = server.add_secure_port(f"{host}:{port}", creds)
        if not bound:
            raise OSError(f"cannot bind {host}:{port}")
        server.start()
        self._server, self._host, self._port = server, host, bound

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5)
            self._server = None

    @property
    def address(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self.service} emulator not started")
        return f"{self._host}:{self._port}"

    # -- projects and IAM -----------------------------------------------------------------
    def add_project(self, project_id: str, number: str | int) -> None:
        self.projects.add(project_id, number)

    def grant(self, project: str, identity: str) -> None:
        """Allow `identity` everything on `project` (id or number); ungranted identities are then denied."""
        self.bind(identity, "roles/owner", f"projects/{project}")

    def bind(
        self,
        identity: str,
        role: str,
        resource: str,
        *,
        permissions: frozenset[str] | None = None,
        condition: str | None = None,
        title: str = "",
    ) -> None:
        """Grant `role` (its `permissions`, or a predefined role's) to `identity` on `resource` and below.

        `resource` is projects/P[/...] with P an id or number (stored as the number); `condition` is an
        IAM condition expression; ValueError on a malformed project or condition.
        """
        head, _, rest = resource.removeprefix("projects/").partition("/")
        if not resource.startswith("projects/") or not head:
            raise ValueError(f"IAM resource must be projects/P[/...], got {resource!r}")
        name = f"projects/{self.projects.number(head)}" + (f"/{rest}" if rest else "")
        self.iam.bind(
            Binding(
                member=identity,
                role=role,
                permissions=role_permissions(role) if permissions is None else permissions,
                resource=name,
                condition=None if condition is None else Condition(condition, title),
            )
        )

    def admin_bind(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The admin route POST /iam: {"project", "identity"} makes identity owner of the project;
        {"identity", "resource", "role", "permissions"?, "condition"?, "title"?} adds any binding."""
        if "resource" not in spec:
            self.grant(str(spec["project"]), str(spec["identity"]))
        else:
            permissions = spec.get("permissions")
            self.bind(
                str(spec["identity"]),
                str(spec.get("role", "roles/custom")),
                str(spec["resource"]),
                permissions=None if permissions is None else frozenset(str(p) for p in permissions),
                condition=None if spec.get("condition") is None else str(spec["condition"]),
                title=str(spec.get("title", "")),
            )
        return {"iam": self.iam.to_json()}

    def project_number(self, project: str) -> str:
        """Resolve a project id or number from a request; INVALID_ARGUMENT when malformed."""
        try:
            return self.projects.number(project)
        except ValueError as exc:
            fail(grpc.StatusCode.INVALID_ARGUMENT, str(exc))

    def authorize(self, identity: str | None, permission: str, resource: Resource, message: str | None = None) -> None:
        """PERMISSION_DENIED unless the policy grants `permission` on `resource` (no check without auth)."""
        if identity is None or self.authenticate is None:
            return
        if not self.iam.allows(identity, permission, resource):
            fail(
                grpc.StatusCode.PERMISSION_DENIED,
                message or f"Permission '{permission}' denied for resource '{resource.name}' (or it may not exist).",
            )

    # -- the RPC wrapper ----------------------------------------------------------------
    def unary(
        self,
        rpc: str,
        fn: Callable[[Any, str | None], Any],
        request_type: Any,
        response_type: Any,
    ) -> grpc.RpcMethodHandler:
        """A unary handler that injects faults, authenticates, then calls fn(request, identity)."""

        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            code = self.control.enter(rpc)
            if code is not None and not code.startswith(LOST_RESPONSE):
                self._inject(code, context)
            try:
                identity = self._identity(context)
                response = fn(request, identity)
                if code is not None:  # the call took effect; its answer is lost
                    self._inject(code.removeprefix(LOST_RESPONSE), context)
                return response
            except RpcError as err:
                if err.details is not None:
                    context.abort_with_status(rpc_status.to_status(err.details))
                context.abort(err.code, err.message)

        return grpc.unary_unary_rpc_method_handler(
            handle,
            request_deserializer=request_type.deserialize,
            response_serializer=response_type.serialize,
        )

    def _identity(self, context: grpc.ServicerContext) -> str | None:
        if self.authenticate is None:
            return None
        header = ""
        for key, value in context.invocation_metadata():
            if key == "authorization":
                header = value if isinstance(value, str) else value.decode()
        scheme, _, token = header.partition(" ")
        missing = "Request is missing required authentication credential. Expected OAuth 2 access token."
        if scheme.lower() != "bearer" or not token.strip():
            fail(grpc.StatusCode.UNAUTHENTICATED, missing)
        identity = self.authenticate(token.strip())
        if identity is None:
            fail(
                grpc.StatusCode.UNAUTHENTICATED,
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            )
        return identity

    def _inject(self, code: str, context: grpc.ServicerContext) -> NoReturn:
        if code == "timeout":
            deadline = time.monotonic() + _TIMEOUT_FAULT_S
            while context.is_active() and time.monotonic() < deadline:
                time.sleep(0.02)
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded (injected timeout)")
        if code == "reset":
            context.abort(grpc.StatusCode.UNAVAILABLE, "Connection reset by peer (injected)")
        status = getattr(grpc.StatusCode, code.upper(), None)
        if not isinstance(status, grpc.StatusCode) or status is grpc.StatusCode.OK:
            status = grpc.StatusCode.INTERNAL
            context.abort(status, f"unknown injected fault code {code!r}")
        context.abort(status, f"injected fault: {status.name}")
        raise AssertionError("context.abort returned")  # it raises; this keeps NoReturn honest
