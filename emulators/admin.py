"""The stack's one HTTP admin API (documented in emulators/README.md).

GET    /                      endpoints and env
GET    /state                 every emulator's state
POST   /reset                 drop all state, faults and counters (defaults re-seeded)
GET    /calls                 calls served, {service: {method: n}}; DELETE /calls zeroes them
GET    /faults                fault rules and what they injected; POST /faults adds one (or a list);
                              DELETE /faults removes all
PUT    /ready_clusters/{id}   a cluster whose preconditions are all met, in one call (emulators.seed)
*      /{service}/...         that emulator's own admin routes (secretmanager, gke, kubernetes,
                              metadata, hyperfleet, pubsub)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from emulators import seed
from emulators.httpbase import HTTPEmulator, Reply, Request

if TYPE_CHECKING:
    from emulators.faults import FaultBook


class Stack(seed.Stack, Protocol):
    """What the admin API needs of the stack (emulators.stack.Stack, which owns this server)."""

    @property
    def book(self) -> FaultBook: ...
    @property
    def emulators(self) -> dict[str, Any]: ...
    def endpoints(self) -> dict[str, Any]: ...
    def reset(self) -> None: ...


class AdminServer(HTTPEmulator):
    service: ClassVar[str] = "admin"

    def __init__(self, stack: Stack) -> None:
        super().__init__()
        self.stack = stack

    def handle(self, request: Request) -> Reply:
        try:
            body = request.json() if request.body else None
        except ValueError:
            return Reply.json(400, {"error": "the body is not JSON"})
        status, payload = self.route(request.method, request.path, body)
        return Reply.json(status, payload)

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        stack = self.stack
        book = stack.book
        parts = [p for p in path.split("/") if p]
        if not parts:
            return 200, stack.endpoints()
        head = parts[0]
        if head == "state" and method == "GET":
            return 200, {name: emulator.state() for name, emulator in stack.emulators.items()}
        if head == "reset" and method == "POST":
            stack.reset()
            return 200, {"reset": True}
        if head == "calls":
            if method == "GET":
                return 200, {"calls": book.calls(), "faults_injected": book.faults_injected()}
            if method == "DELETE":
                book.reset_counters()
                return 200, {"reset": True}
        if head == "faults":
            if method == "GET":
                return 200, {"rules": book.rules(), "faults_injected": book.faults_injected()}
            if method == "POST":
                specs = body if isinstance(body, list) else [body]
                try:
                    added = [book.add(spec).to_json() for spec in specs if isinstance(spec, dict)]
                except (ValueError, TypeError) as exc:
                    return 400, {"error": str(exc)}
                if len(added) != len(specs):
                    return 400, {"error": "each fault must be a JSON object"}
                return 201, {"added": added}
            if method == "DELETE":
                book.clear()
                return 200, {"cleared": True}
        if head == "ready_clusters" and len(parts) == 2 and method == "PUT":
            return self._ready_cluster(parts[1], body)
        emulator = stack.emulators.get(head)
        if emulator is not None:
            rest = "/" + "/".join(parts[1:])
            status, payload = emulator.handle_admin(method, rest, body)
            return status, payload
        return 404, {"error": f"no admin route {method} {path}"}

    _READY_OPTIONS: ClassVar[frozenset[str]] = frozenset(
        {"generation", "project", "namespace", "placement_data", "cluster", "platform_secret"}
    )

    def _ready_cluster(self, cluster_id: str, body: Any) -> tuple[int, Any]:
        options = body if isinstance(body, dict) else {}
        unknown = set(options) - self._READY_OPTIONS
        if body is not None and not isinstance(body, dict):
            return 400, {"error": "the body must be a JSON object (or empty)"}
        if unknown:
            return 400, {"error": f"unknown options {sorted(unknown)}; known: {sorted(self._READY_OPTIONS)}"}
        generation = options.get("generation", 1)
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 1:
            return 400, {"error": "generation must be an integer >= 1"}
        try:
            return 200, seed.ready_cluster(self.stack, cluster_id, **options)
        except (TypeError, ValueError) as exc:
            return 400, {"error": str(exc)}
