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
from emulators.routes import AdminCall, AdminRouter, Answer, Handler

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
        self._admin = AdminRouter(self._admin_table())

    def handle(self, request: Request) -> Reply:
        try:
            body = request.json() if request.body else None
        except ValueError:
            return Reply.json(400, {"error": "the body is not JSON"})
        status, payload = self.route(request.method, request.path, body)
        return Reply.json(status, payload)

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        answer = self._admin.dispatch(method, path, body)
        if answer is not None:
            return answer
        parts = [p for p in path.split("/") if p]
        emulator = self.stack.emulators.get(parts[0])
        if emulator is not None:
            rest = "/" + "/".join(parts[1:])
            status, payload = emulator.handle_admin(method, rest, body)
            return status, payload
        return 404, {"error": f"no admin route {method} {path}"}

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        stack = self.stack
        return {
            ("*", "/"): lambda _: (200, stack.endpoints()),
            ("GET", "/state"): lambda _: (200, {name: emulator.state() for name, emulator in stack.emulators.items()}),
            ("POST", "/reset"): self._reset,
            ("GET", "/calls"): self._calls,
            ("DELETE", "/calls"): self._reset_counters,
            ("GET", "/faults"): self._faults,
            ("POST", "/faults"): self._add_faults,
            ("DELETE", "/faults"): self._clear_faults,
            ("PUT", "/ready_clusters/{id}"): lambda call: self._ready_cluster(call.params["id"], call.body),
        }

    def _reset(self, _: AdminCall) -> Answer:
        self.stack.reset()
        return 200, {"reset": True}

    def _calls(self, _: AdminCall) -> Answer:
        return 200, {"calls": self.stack.book.calls(), "faults_injected": self.stack.book.faults_injected()}

    def _faults(self, _: AdminCall) -> Answer:
        return 200, {"rules": self.stack.book.rules(), "faults_injected": self.stack.book.faults_injected()}

    def _reset_counters(self, _: AdminCall) -> Answer:
        self.stack.book.reset_counters()
        return 200, {"reset": True}

    def _add_faults(self, call: AdminCall) -> Answer:
        specs = call.body if isinstance(call.body, list) else [call.body]
        try:
            added = [self.stack.book.add(spec).to_json() for spec in specs if isinstance(spec, dict)]
        except (ValueError, TypeError) as exc:
            return 400, {"error": str(exc)}
        if len(added) != len(specs):
            return 400, {"error": "each fault must be a JSON object"}
        return 201, {"added": added}

    def _clear_faults(self, _: AdminCall) -> Answer:
        self.stack.book.clear()
        return 200, {"cleared": True}

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
