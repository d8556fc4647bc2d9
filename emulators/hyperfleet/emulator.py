"""The HyperFleet emulator: lifecycle, serving with contract validation and fault injection, the admin API."""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from emulators import hostile
from emulators.faults import FaultBook, ServiceControl
from emulators.httpbase import HTTPEmulator, Reply, Request
from emulators.hyperfleet.answers import database_unavailable, problem, rfc3339
from emulators.hyperfleet.api import ClusterApi
from emulators.hyperfleet.auth import ApiAuth
from emulators.hyperfleet.gateway import WRISTBAND_ISSUER, Gateway, GatewayConfig, config_from_admin, gateway_state
from emulators.hyperfleet.spec import (
    SPEC_FILES,
    STATUSES_RE,
    Violations,
    load_spec,
    operation_of,
    request_errors,
    response_errors,
    violation,
)
from emulators.hyperfleet.store import ClusterStore
from emulators.hyperfleet.tenancy import Tenancy
from emulators.idtoken import GOOGLE_ISSUER, Jwks
from emulators.routes import AdminCall, AdminRouter, Answer, Handler

ADMIN_PREFIX = "/_emulator"


class HyperFleetEmulator(HTTPEmulator):
    """The HyperFleet API as an adapter sees it: read clusters, read and write adapter statuses."""

    service: ClassVar[str] = "hyperfleet"

    def __init__(
        self,
        book: FaultBook,
        *,
        status_method: str = "PUT",
        token: str | None = None,
        token_file: str | os.PathLike[str] | None = None,
        required_adapters: list[str] | None = None,
        validate: bool = True,
        tenancy: Tenancy | None = None,
        gateway: GatewayConfig | None = None,
    ) -> None:
        super().__init__()
        if status_method not in SPEC_FILES:
            raise ValueError("status_method must be PUT or POST")
        self.control = ServiceControl(book, self.service)
        self.auth = ApiAuth(token=token, token_file=Path(token_file) if token_file is not None else None)
        self.store = ClusterStore(
            status_method=status_method, required_adapters=list(required_adapters) if required_adapters else None
        )
        self.validate = validate
        self.violations = Violations()
        self.expected_violations = Violations()
        # Reports the API accepts but that break a convention: masked data keys, reasons outside the vocabulary.
        self.conventions = Violations()
        self.api = ClusterApi(store=self.store, auth=self.auth, conventions=self.conventions)
        self._tenancy = tenancy
        self.api.tenancy = tenancy
        self._lock = self.store.lock
        self.validation_seconds = 0.0
        self.validations = 0
        # API calls under way and those served (operation, monotonic start, monotonic end): a test can
        # show that no call of an invocation outlives it (Cloud Run gives no CPU after the response).
        self._in_flight = 0
        self._served: collections.deque[tuple[str, float, float]] = collections.deque(maxlen=10_000)
        # The gateway in front (emulators/hyperfleet/gateway.py): off unless configured; reset() restores this one.
        self._gateway_config = gateway
        self.gateway: Gateway | None = None
        self.set_gateway(gateway)
        self._admin = AdminRouter(self._admin_table())
        load_spec(status_method)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve; with ``token_file`` write the bearer token there first (random unless ``token``)."""
        self.auth.start()
        super().start(host, port)

    def set_token(self, token: str, *, forbidden: bool = False) -> None:
        """From now on accept ``token`` only (a rotation at the issuer); ``forbidden`` makes it a 403.

        The token file is left alone: a test rotates it itself, the way a secret volume would.
        """
        self.auth.set_token(token, forbidden=forbidden)

    def trust_id_tokens(
        self,
        keys: Callable[[], Jwks],
        *,
        issuer: str = GOOGLE_ISSUER,
        audience: str | None = "hyperfleet-api",
        identity_claim: str = "email",
        identity_pattern: str | None = None,
    ) -> None:
        """Accept RS256 ID tokens of `issuer` beside the opaque token: one `server.jwt.configs` entry of the API."""
        self.auth.trust_id_tokens(
            keys, issuer=issuer, audience=audience, identity_claim=identity_claim, identity_pattern=identity_pattern
        )

    @property
    def token(self) -> str | None:
        return self.auth.token

    @token.setter
    def token(self, value: str | None) -> None:
        self.auth.token = value

    @property
    def token_file(self) -> Path | None:
        return self.auth.token_file

    @property
    def forbidden_tokens(self) -> set[str]:
        return self.auth.forbidden_tokens

    @property
    def identities(self) -> list[str]:
        return self.auth.identities

    @property
    def status_method(self) -> str:
        return self.store.status_method

    @property
    def required_adapters(self) -> list[str] | None:
        return self.store.required_adapters

    @property
    def api_url(self) -> str:
        """The base URL to give the adapter as HYPERFLEET_API_URL."""
        return self.url

    @property
    def spec(self) -> Any:
        return load_spec(self.status_method)

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "status_method": self.status_method,
                "spec": SPEC_FILES[self.status_method],
                "auth": self.auth.enabled,
                "gateway": None if self.gateway is None else self.gateway.config.mode,
                "database_lost": self.api.database_lost,
                **self.store.state(),
                "violations": len(self.violations),
                "expected_violations": len(self.expected_violations),
                "conventions": len(self.conventions),
                "validations": self.validations,
                "validation_ms_mean": (
                    round(self.validation_seconds / self.validations * 1000, 3) if self.validations else None
                ),
            }

    def set_tenancy(self, tenancy: Tenancy | None) -> None:
        """Turn the API's tenant middleware on (`Tenancy()`: the dev configuration) or off, until reset()."""
        self.api.tenancy = tenancy

    def deny_at_gateway(self, deny: bool = True) -> None:
        """The gateway in front denies every call (a 403 with no HyperFleet code), until reset()."""
        self.auth.gateway_denies = deny

    def set_gateway(self, config: GatewayConfig | None) -> None:
        """Put the gateway (EDGE or EDGE+API) in front of the API, or take it away (None), until reset()."""
        self.auth.distrust(WRISTBAND_ISSUER)
        self.auth.behind_edge = False
        self.gateway = Gateway(config) if config is not None else None
        if config is None or self.gateway is None:
            return
        if config.mode == "EDGE+API":
            # The API verifies the gateway's wristband as one more server.jwt.configs entry (identity claim sub).
            self.auth.trust_id_tokens(
                self.gateway.wristbands.jwks, issuer=WRISTBAND_ISSUER, audience=config.audience, identity_claim="sub"
            )
        else:
            self.auth.behind_edge = True

    def lose_database(self, lost: bool = True) -> None:
        """The API's database connection is lost (every call past authentication: 503 SVC-001), until reset()."""
        self.api.database_lost = lost

    def reset(self) -> None:
        with self._lock:
            self.set_gateway(self._gateway_config)
            self.api.database_lost = False
            self.auth.reset()
            self.api.tenancy = self._tenancy
            self.store.clear()
            self.violations.clear()
            self.expected_violations.clear()
            self.conventions.clear()
            self.validation_seconds = 0.0
            self.validations = 0
            self._served.clear()

    def in_flight(self) -> int:
        """API calls being served right now."""
        with self._lock:
            return self._in_flight

    def served(self) -> list[tuple[str, float, float]]:
        """(operation, start, end) of the API calls served, in time.monotonic() of this process."""
        with self._lock:
            return list(self._served)

    # -- seeding (also the admin API) ------------------------------------------------------
    def seed_cluster(self, cluster_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a cluster, filling what the API would; returns {cluster, schema_errors}."""
        return self.store.seed_cluster(cluster_id, body)

    def seed_status(self, cluster_id: str, adapter: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store another adapter's status as if it had reported; raises KeyError for unknown clusters."""
        return self.store.seed_status(cluster_id, adapter, body)

    # -- the admin API ----------------------------------------------------------------------
    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Admin routes relative to /hyperfleet (also served under /_emulator on the API port)."""
        answer = self._admin.dispatch(method, path, body)
        if answer is None:
            return 404, {"error": f"no admin route {method} {'/' + path.strip('/')}"}
        return answer

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        store = self.store
        return {
            ("GET", "/state"): lambda _: (200, self.state()),
            ("POST", "/reset"): self._admin_reset,
            ("GET", "/reports"): lambda _: (200, store.report_list()),
            ("DELETE", "/reports"): self._admin_clear_reports,
            ("GET", "/violations"): self._admin_violations,
            ("DELETE", "/violations"): self._admin_clear_violations,
            ("PUT", "/token"): self._admin_token,
            ("GET", "/gateway"): self._admin_gateway_state,
            ("PUT", "/gateway"): self._admin_gateway,
            ("DELETE", "/gateway"): self._admin_no_gateway,
            ("PUT", "/database"): self._admin_database,
            ("PUT", "/status_method"): self._admin_status_method,
            ("PUT", "/clusters/{id}"): self._admin_put_cluster,
            ("DELETE", "/clusters/{id}"): self._admin_delete_cluster,
            ("PATCH", "/clusters/{id}"): self._admin_patch_cluster,
            ("GET", "/clusters/{id}"): self._admin_get_cluster,
            ("*", "/clusters/{id}"): lambda call: (405, {"error": f"{call.method} not supported on clusters"}),
            ("PUT", "/clusters/{id}/statuses/{adapter}"): self._admin_seed_status,
        }

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, {"reset": True}

    def _admin_clear_reports(self, _: AdminCall) -> Answer:
        self.store.clear_reports()
        return 200, {"cleared": True}

    def _admin_violations(self, _: AdminCall) -> Answer:
        return 200, {
            "violations": self.violations.list(),
            "expected_violations": self.expected_violations.list(),
            "conventions": self.conventions.list(),
        }

    def _admin_clear_violations(self, _: AdminCall) -> Answer:
        self.violations.clear()
        self.expected_violations.clear()
        self.conventions.clear()
        return 200, {"cleared": True}

    def _admin_token(self, call: AdminCall) -> Answer:
        token = (call.body or {}).get("token")
        if not isinstance(token, str) or not token:
            return 400, {"error": 'body must be {"token": "...", "forbidden": false}'}
        self.set_token(token, forbidden=bool((call.body or {}).get("forbidden")))
        return 200, {"token_set": True}

    def _admin_gateway_state(self, _: AdminCall) -> Answer:
        return 200, gateway_state(self.gateway)

    def _admin_gateway(self, call: AdminCall) -> Answer:
        try:
            self.set_gateway(config_from_admin(call.body))
        except ValueError as exc:
            return 400, {"error": str(exc)}
        return 200, gateway_state(self.gateway)

    def _admin_no_gateway(self, _: AdminCall) -> Answer:
        self.set_gateway(None)
        return 200, {"gateway": None}

    def _admin_database(self, call: AdminCall) -> Answer:
        lost = (call.body or {}).get("lost") if isinstance(call.body, dict) else None
        if not isinstance(lost, bool):
            return 400, {"error": 'body must be {"lost": true|false}'}
        self.lose_database(lost)
        return 200, {"database_lost": lost}

    def _admin_status_method(self, call: AdminCall) -> Answer:
        wanted = str((call.body or {}).get("method", "")).upper()
        if wanted not in SPEC_FILES:
            return 400, {"error": 'body must be {"method": "PUT"|"POST"}'}
        self.store.set_status_method(wanted)
        return 200, {"status_method": wanted}

    def _admin_put_cluster(self, call: AdminCall) -> Answer:
        if not isinstance(call.body, dict):
            return 400, {"error": "body must be a cluster object"}
        return 200, self.seed_cluster(call.params["id"], call.body)

    def _admin_delete_cluster(self, call: AdminCall) -> Answer:
        cluster_id = call.params["id"]
        found = self.store.delete_cluster(cluster_id)
        return (200, {"deleted": cluster_id}) if found else (404, {"error": f"no cluster {cluster_id}"})

    def _admin_patch_cluster(self, call: AdminCall) -> Answer:
        if not isinstance(call.body, dict):
            return 400, {"error": "body must be an object"}
        cluster = self.store.patch_cluster(call.params["id"], call.body)
        return (200, cluster) if cluster is not None else (404, {"error": f"no cluster {call.params['id']}"})

    def _admin_get_cluster(self, call: AdminCall) -> Answer:
        cluster = self.store.cluster(call.params["id"])
        return (200, cluster) if cluster else (404, {"error": "no such cluster"})

    def _admin_seed_status(self, call: AdminCall) -> Answer:
        if not isinstance(call.body, dict):
            return 400, {"error": "body must be an object"}
        try:
            return 200, self.seed_status(call.params["id"], call.params["adapter"], call.body)
        except KeyError:
            return 404, {"error": f"no cluster {call.params['id']}"}

    # -- the HTTP API -----------------------------------------------------------------------
    def handle(self, request: Request) -> Reply:
        """Serve one request: admin routes, or the API with validation and fault injection."""
        if request.path == ADMIN_PREFIX or request.path.startswith(ADMIN_PREFIX + "/"):
            try:
                body = request.json() if request.body else None
            except ValueError:
                return Reply.json(400, {"error": "admin body must be JSON"})
            status, payload = self.handle_admin(request.method, request.path[len(ADMIN_PREFIX) :], body)
            return Reply.json(status, payload)
        start = time.monotonic()
        with self._lock:
            self._in_flight += 1
        try:
            gateway = self.gateway
            if gateway is not None:
                return gateway.forward(request, self._handle_api, also_strip=self._tenant_headers())
            return self._handle_api(request)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._served.append((operation_of(request) or "other", start, time.monotonic()))

    def _tenant_headers(self) -> tuple[str, ...]:
        tenancy = self.api.tenancy
        if tenancy is None:
            return ()
        return (tenancy.system_header.lower(), *(header.lower() for header, _ in tenancy.dimensions))

    def _handle_api(self, request: Request) -> Reply:
        operation = operation_of(request)
        spec = SPEC_FILES[self.status_method]
        started = time.perf_counter()
        request_violations = request_errors(self.status_method, request) if self.validate else []
        elapsed = time.perf_counter() - started
        for text in request_violations:
            self.violations.add(violation(kind="request", request=request, operation=operation, text=text, spec=spec))
        code = self.control.enter(operation or "other")
        expected = False
        if code in ("reset", "timeout"):
            reply = Reply.drop(code)
        elif code == "503-database":  # the database connection lost for this one call
            reply, expected = database_unavailable(request.path), True
        elif hostile.handles(code):  # emulators/hostile.py: an echo of the Authorization header, a redirect
            reply, expected = (
                hostile.reply(code, request, lambda status, detail: problem(status, detail, request.path)),
                True,
            )
        elif code is not None:
            reply = problem(int(code), "injected fault", request.path)
            expected = True
        else:
            reply, expected = self.api.serve(request)
        if STATUSES_RE.match(request.path) and request.method in ("PUT", "POST"):
            self._record_report(request, reply)
        if self.validate and reply.fault is None:
            started = time.perf_counter()
            response_violations = response_errors(self.status_method, request, reply)
            elapsed += time.perf_counter() - started
            target = self.expected_violations if expected else self.violations
            for text in response_violations:
                target.add(
                    violation(
                        kind="response", request=request, operation=operation, text=text, spec=spec, status=reply.status
                    )
                )
        with self._lock:
            self.validation_seconds += elapsed
            self.validations += 1
        return reply

    def _record_report(self, request: Request, reply: Reply) -> None:
        try:
            body: Any = request.json()
        except (ValueError, UnicodeDecodeError):
            body = request.body.decode("utf-8", "replace")
        match = STATUSES_RE.match(request.path)
        self.store.add_report(
            {
                "method": request.method,
                "path": request.target,
                "cluster_id": match.group("id") if match else None,
                "body": body,
                "code": reply.fault or reply.status,
                "time": rfc3339(),
                # W3C trace context the caller propagated (hyperfleet-adapter forwards the event's).
                "traceparent": request.header("traceparent"),
            }
        )
