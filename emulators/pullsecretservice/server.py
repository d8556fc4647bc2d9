"""The HyperFleet Pull Secret Service emulator's HTTP protocol: the DDR's REST API, problem+json errors, admin.

Protocol (openshift-hyperfleet/architecture `hyperfleet/docs/pull-secret-service-ddr.md`, commit 53cd706, "Last
Updated 2026-03-25"; emulators/contracts/pull-secret-service.md is the contract as implemented):

    POST   /v1/clusters/{cluster_id}/pull-secrets                       §3.2.1  200 generate-or-retrieve
    GET    /v1/clusters/{cluster_id}/pull-secrets[?include_metadata=true] §3.2.2  200, 404 HYPERFLEET-NTF-001
    DELETE /v1/clusters/{cluster_id}/pull-secrets                       §3.2.6  204 (also when nothing exists)
    POST   /v1/clusters/{cluster_id}/pull-secrets/rotations             §3.2.3  201, 409 HYPERFLEET-CNF-002
    GET    /v1/clusters/{cluster_id}/pull-secrets/rotations             §3.2.5  200 paginated
    GET    /v1/clusters/{cluster_id}/pull-secrets/rotations/{id}        §3.2.4  200
    GET    /healthz, /readyz                                            §8.1    probes, unauthenticated

Every API call is rate-limited per authenticated ServiceAccount as §3.5 says (limits.py: 100/min, burst 20/s,
10/h on `/rotations` by default; 429 HYPERFLEET-LMT-001). Every error is RFC 9457 problem+json (§3.3: `type`,
`title`, `status`, `detail`, `code`, `timestamp`, `trace_id`,
`instance`, plus the extensions each example shows). Every API call needs a bearer credential (§3.4; access.py).

Faults come from the stack's FaultBook, service `pullsecretservice`, one method per operation: `post`, `get`,
`delete`, `rotations.post`, `rotations.list`, `rotations.get`; an HTTP status (`"503"`) answers that status as
problem+json (429 with `Retry-After`, §3.5), `"reset"`/`"timeout"`/`"drip"` act on the connection, and
`lost_response` applies the call before answering the code; `"echo-authorization"` and the redirects (`"307"`, ...)
are emulators/hostile.py's (a problem quoting the request's Authorization header; a move to another host).
`create.quay` / `create.rhit` fail that registry's API during a generate (§3.3.1: 500, all or nothing, the
credentials created before it kept for the retry).

Admin routes (relative to the stack admin's `/pullsecretservice`, or `/_emulator` on the emulator itself), the
table `admin_routes()` below: `GET /state`, `POST /reset`, `POST /clusters/{id}/rotation` (start one: a new set
minted, the old one still valid), `POST /clusters/{id}/rotation/complete` (the cluster confirmed: old set deleted).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any, ClassVar

from emulators import hostile
from emulators.faults import LOST_RESPONSE, FaultBook, ServiceControl
from emulators.httpbase import HTTPEmulator, Reply, Request
from emulators.idtoken import Jwks
from emulators.kubernetes.delegated import TokenReviewer
from emulators.pullsecretservice.access import Access, Refusal
from emulators.pullsecretservice.limits import DDR_LIMITS, Limiter, RateLimits, Verdict
from emulators.pullsecretservice.store import (
    PROVIDERS,
    REASONS,
    REGISTRY_IDS,
    ROTATION_STATUSES,
    CredentialStore,
    RegistryAccounts,
    ServiceError,
    invalid,
    now_rfc3339,
)
from emulators.routes import AdminCall, AdminRouter, Answer

# §3.6 OpenAPI: path parameter cluster_id `pattern: '^cls-[a-z0-9]{12,16}$'`.
DDR_CLUSTER_ID_PATTERN = r"^cls-[a-z0-9]{12,16}$"
ADMIN_PREFIX = "/_emulator"
_PULL_SECRETS = re.compile(r"^/v1/clusters/([^/]+)/pull-secrets$")
_ROTATIONS = re.compile(r"^/v1/clusters/([^/]+)/pull-secrets/rotations$")
_ROTATION = re.compile(r"^/v1/clusters/([^/]+)/pull-secrets/rotations/([^/]+)$")
# Statuses a fault may answer, as problem+json: (type slug, title, code). 500/503 per §3.3's table; the codes
# are the HyperFleet API's (assumed where the DDR is silent: its table names INTERNAL_ERROR/SERVICE_UNAVAILABLE).
_FAULT_PROBLEMS = {
    429: ("rate-limit-exceeded", "Rate Limit Exceeded", "HYPERFLEET-LMT-001"),  # §3.5
    500: ("internal-error", "Internal Server Error", "HYPERFLEET-INT-001"),
    502: ("bad-gateway", "Bad Gateway", "HYPERFLEET-INT-001"),
    503: ("service-unavailable", "Service Unavailable", "HYPERFLEET-SVC-001"),
    504: ("gateway-timeout", "Gateway Timeout", "HYPERFLEET-INT-001"),
}

Handler = Callable[[str, Request], Reply]


def problem(error: ServiceError, instance: str) -> Reply:
    """An RFC 9457 answer in the DDR's shape (§3.3); 401 also names the scheme (RFC 6750 §3, assumed)."""
    body: dict[str, Any] = {
        "type": f"https://api.hyperfleet.io/errors/{error.slug}",
        "title": error.title,
        "status": error.status,
        "detail": error.detail,
        "code": error.code,
        "timestamp": now_rfc3339(),
        "trace_id": secrets.token_hex(8),
        "instance": instance,
        **error.extensions,
    }
    reply = Reply.json(error.status, body, "application/problem+json")
    if error.status == 401:
        reply.headers["WWW-Authenticate"] = 'Bearer realm="pull-secret-service"'
    if error.status == 429:
        reply.headers["Retry-After"] = "60"
    return reply


def _limited(verdict: Verdict, instance: str) -> Reply:
    """§3.5's 429: the problem body with `limit`, `window`, `retry_after_seconds`, and the X-RateLimit-* headers."""
    rule = verdict.rule
    error = ServiceError(
        429,
        "HYPERFLEET-LMT-001",
        f"Rate limit exceeded: {rule.quota:g} requests {rule.unit}",
        slug="rate-limit-exceeded",
        title="Rate Limit Exceeded",
        extensions={"limit": int(rule.quota), "window": rule.window, "retry_after_seconds": verdict.retry_after_s},
    )
    reply = problem(error, instance)
    reply.headers.update(verdict.headers())
    return reply


def _refused(refusal: Refusal) -> ServiceError:
    slug, title = (
        ("authentication-error", "Unauthorized") if refusal.status == 401 else ("permission-denied", "Forbidden")
    )
    return ServiceError(refusal.status, refusal.code, refusal.detail, slug=slug, title=title)


class PullSecretServiceEmulator(HTTPEmulator):
    """The service on one loopback HTTP port; credentials live in `store`, callers are checked by `access`."""

    service: ClassVar[str] = "pullsecretservice"

    def __init__(
        self,
        book: FaultBook,
        *,
        registry_hosts: Mapping[str, str] | Callable[[], Mapping[str, str]],
        registry: RegistryAccounts | None = None,
        bearer_tokens: Mapping[str, str] | None = None,
        grants: Mapping[str, Collection[str]] | None = None,
        cluster_id_pattern: str = DDR_CLUSTER_ID_PATTERN,
        delete_during_rotation: str = "cancel",
        alias_hosts: Mapping[str, str] | None = None,
        limits: RateLimits | None = DDR_LIMITS,  # §3.5's, per authenticated ServiceAccount (limits.py)
    ) -> None:
        super().__init__()
        self._limits = limits
        self.limiter = Limiter(limits)
        self.control = ServiceControl(book, self.service)
        self.store = CredentialStore(
            registry_hosts=registry_hosts,
            registry=registry,
            alias_hosts=alias_hosts,
            delete_during_rotation=delete_during_rotation,
        )
        self.access = Access(bearer_tokens=bearer_tokens, grants=grants)
        self.cluster_id_re = re.compile(cluster_id_pattern)
        self._admin = AdminRouter(self.admin_routes())

    def trust_id_tokens(self, keys: Callable[[], Jwks], *, audience: str, emails: Collection[str]) -> None:
        """Accept Google-signed ID tokens for `audience` whose email is in `emails` (access.py)."""
        self.access.trust_id_tokens(keys, audience=audience, emails=emails)

    def review_service_account_tokens(
        self, reviewer: TokenReviewer | None, *, audience: str, accounts: Collection[str] | None = None
    ) -> None:
        """Authenticate bearer ServiceAccount tokens by TokenReview for `audience` (opt-in; None turns it off);
        `accounts`: the users admitted (`system:serviceaccount:ns:name`), None for any the grants allow (access.py).
        A configuration: reset() keeps it."""
        self.access.review_service_account_tokens(reviewer, audience=audience, accounts=accounts)

    def reset(self) -> None:
        """No credentials, no rotations; the rate limits back to the constructor's, every bucket full."""
        self.store.reset()
        self.limiter.configure(self._limits)

    def state(self) -> dict[str, Any]:
        return self.store.state()

    # -- admin -----------------------------------------------------------------------------
    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """One of `admin_routes()`, or 404; service errors answer as {"error", "code"}."""
        try:
            answer = self._admin.dispatch(method, path, body)
        except ServiceError as exc:
            return exc.status, {"error": exc.detail, "code": exc.code}
        if answer is None:
            return 404, {"error": f"no admin route {method} {'/' + path.strip('/')}"}
        return answer

    def admin_routes(self) -> dict[tuple[str, str], Callable[[AdminCall], Answer]]:
        """The admin table: (method, path pattern) -> handler of the call (its captured segments and body)."""
        return {
            ("GET", "/state"): lambda _: (200, self.state()),
            ("POST", "/reset"): self._admin_reset,
            ("POST", "/clusters/{id}/rotation"): self._admin_start_rotation,
            ("POST", "/clusters/{id}/rotation/complete"): self._admin_complete_rotation,
            ("GET", "/limits"): lambda _: (200, self._limits_view()),
            ("POST", "/tokens"): self._admin_token,
            ("POST", "/limits"): self._admin_limits,
        }

    def _admin_token(self, call: AdminCall) -> Answer:
        """Accept one more opaque bearer token, naming its identity (`{"token", "identity"}`): a second
        ServiceAccount, with §3.5 budgets of its own (e.g. the operator's `rekey --own-identity`)."""
        body = call.body if isinstance(call.body, dict) else {}
        token, identity = body.get("token"), body.get("identity")
        if not isinstance(token, str) or len(token) < 16 or not isinstance(identity, str) or not identity:
            return 400, {"error": 'the body is {"token": at least 16 characters, "identity": a name}'}
        self.access.accept_token(token, identity)
        return 200, {"identity": identity}

    def _limits_view(self) -> dict[str, Any]:
        limits = self.limiter.limits
        return {"limits": None if limits is None else asdict(limits), "refused": dict(self.limiter.refused)}

    def _admin_limits(self, call: AdminCall) -> Answer:
        """Set §3.5's limits (`{"per_minute", "burst_per_second", "rotations_per_hour"}`, each optional: the DDR's
        value otherwise), or turn them off (`{"off": true}`); every bucket starts full."""
        body = call.body if isinstance(call.body, dict) else {}
        if body.get("off") is True:
            self.limiter.configure(None)
            return 200, self._limits_view()
        fields = {k: body[k] for k in ("per_minute", "burst_per_second", "rotations_per_hour") if k in body}
        if any(not isinstance(v, int | float) or isinstance(v, bool) or v <= 0 for v in fields.values()):
            return 400, {"error": "each limit is a positive number"}
        self.limiter.configure(RateLimits(**{k: float(v) for k, v in fields.items()}))
        return 200, self._limits_view()

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, self.state()

    def _admin_start_rotation(self, call: AdminCall) -> Answer:
        cluster_id = call.params["id"]
        options = call.body if isinstance(call.body, dict) else {}
        reason, force = self._rotation_request({"reason": options.get("reason", "manual"), **options})
        created = self.store.start_rotation(cluster_id, reason=reason, force_immediate=force)
        return 200, self.store.rotation(cluster_id, str(created["rotation_id"]))  # as the reconciler left it

    def _admin_complete_rotation(self, call: AdminCall) -> Answer:
        return 200, self.store.complete_rotation(call.params["id"])

    # -- the API ---------------------------------------------------------------------------
    def handle(self, request: Request) -> Reply:
        if request.path == ADMIN_PREFIX or request.path.startswith(ADMIN_PREFIX + "/"):
            try:
                body = request.json() if request.body else None
            except ValueError:
                return Reply.json(400, {"error": "admin body must be JSON"})
            status, payload = self.handle_admin(request.method, request.path[len(ADMIN_PREFIX) :], body)
            return Reply.json(status, payload)
        if request.method == "GET" and request.path in ("/healthz", "/readyz"):
            # §8.1.1/§8.1.2 response bodies
            ready = {"status": "ready", "checks": {"database": "ok", "quay_api": "ok", "rhit_api": "ok"}}
            return Reply.json(200, {"status": "ok"} if request.path == "/healthz" else ready)
        try:
            return self._api(request)
        except ServiceError as exc:
            return problem(exc, request.path)

    def _api(self, request: Request) -> Reply:
        route = self._route(request)
        verb, operation, handler, args = route
        code = self.control.enter(operation)
        lost = code is not None and code.startswith(LOST_RESPONSE)
        if code is not None and not lost:
            if code in ("reset", "timeout"):
                return Reply.drop(code)
            if hostile.handles(code):
                return hostile.reply(code, request, lambda status, detail: self._fault(status, request.path, detail))
            if code != "drip":
                return self._fault(int(code), request.path)
        identity, refusal = self.access.check(request.header("Authorization"), verb)
        if refusal is not None:
            raise _refused(refusal)
        assert identity is not None
        verdict = self.limiter.admit(identity, rotations=operation.startswith("rotations"))
        if verdict is not None and not verdict.admitted:
            return _limited(verdict, request.path)
        try:
            reply = handler(*args, request)
        except ServiceError as exc:
            reply = problem(exc, request.path)
        if verdict is not None:
            reply.headers.update(verdict.headers())  # §3.5 "Rate Limit Headers": on every answer it counted
        if lost and code is not None:
            return self._fault(int(code[len(LOST_RESPONSE) :]), request.path)
        if code == "drip":
            reply.fault = "drip"
        return reply

    def _route(self, request: Request) -> tuple[str, str, Callable[..., Reply], tuple[str, ...]]:
        path, method = request.path, request.method
        table: list[tuple[re.Pattern[str], dict[str, tuple[str, str, Callable[..., Reply]]]]] = [
            (
                _PULL_SECRETS,
                {
                    "POST": ("pull-secrets:create", "post", self._generate),
                    "GET": ("pull-secrets:get", "get", self._retrieve),
                    "DELETE": ("pull-secrets:delete", "delete", self._delete),
                },
            ),
            (
                _ROTATIONS,
                {
                    "POST": ("rotations:create", "rotations.post", self._create_rotation),
                    "GET": ("rotations:list", "rotations.list", self._list_rotations),
                },
            ),
            (_ROTATION, {"GET": ("rotations:get", "rotations.get", self._get_rotation)}),
        ]
        for pattern, methods in table:
            match = pattern.match(path)
            if match is None:
                continue
            if method not in methods:
                raise ServiceError(
                    405,
                    "HYPERFLEET-MTH-001",
                    f"Method {method} not allowed",
                    slug="method-not-allowed",
                    title="Method Not Allowed",
                )
            cluster_id = match.group(1)
            if not self.cluster_id_re.fullmatch(cluster_id):
                raise invalid("cluster_id", cluster_id, "pattern", f"Must match {self.cluster_id_re.pattern}")
            verb, operation, handler = methods[method]
            return verb, operation, handler, match.groups()
        raise ServiceError(
            404, "HYPERFLEET-NTF-000", f"No endpoint {method} {path}", slug="not-found", title="Endpoint Not Found"
        )

    def _fault(self, status: int, instance: str, detail: str = "injected fault") -> Reply:
        slug, title, code = _FAULT_PROBLEMS.get(status, ("error", "Error", "HYPERFLEET-INT-001"))
        return problem(ServiceError(status, code, detail, slug=slug, title=title), instance)

    def _generate(self, cluster_id: str, request: Request) -> Reply:
        body = _json_object(request)
        if body.get("cluster_id") != cluster_id:  # §3.6 `required: [cluster_id, region]`; equal to the path: assumed
            raise invalid(
                "cluster_id", body.get("cluster_id"), "equals_path", f"Must be the path's cluster id {cluster_id}"
            )
        provider = body.get("cloud_provider")
        if provider not in PROVIDERS:  # §3.2.1 400 example
            raise invalid("cloud_provider", provider, "enum", "Must be one of: " + ", ".join(PROVIDERS))
        region = body.get("region")
        if not isinstance(region, str) or not region.strip():
            raise invalid("region", region, "required", "Must be a non-empty string")
        registries = body.get("registries", list(REGISTRY_IDS))  # §3.6 default [quay, rhit]
        offered = [r for r in REGISTRY_IDS if r in self.store.registry_hosts]
        if (
            not isinstance(registries, list)
            or not registries
            or any(r not in offered for r in registries)
            or len(set(registries)) != len(registries)
        ):
            raise invalid("registries", registries, "enum", "Each must be one of: " + ", ".join(offered))

        # One registry API call per credential minted, each a call of its own in the FaultBook (its faults, its
        # latency), made one after the other inside the POST: the DDR's GeneratePullSecret (§1.4 Principle 1,
        # Example 3) loops `for _, registryConfig := range s.config.Registries { ... cred, err :=
        # client.CreateCredential(ctx, clusterID) ... }` and its partial-failure sequence creates Quay's robot
        # account, then RHIT's service account. A first generate therefore costs the POST's L plus one L per
        # registry; a retrieve (every credential held) calls no registry API.
        def registry_api(registry_id: str) -> bool:
            fault = self.control.enter(f"create.{registry_id}")
            return fault is None

        answer = self.store.generate(
            cluster_id, cloud_provider=provider, region=region, registries=registries, registry_api=registry_api
        )
        return Reply.json(200, answer)

    def _retrieve(self, cluster_id: str, request: Request) -> Reply:
        flag = request.arg("include_metadata") or "false"
        if flag not in ("true", "false"):
            raise invalid("include_metadata", flag, "boolean", "Must be true or false")
        return Reply.json(200, self.store.retrieve(cluster_id, include_metadata=flag == "true"))

    def _delete(self, cluster_id: str, _request: Request) -> Reply:
        self.store.delete(cluster_id)
        return Reply(204)

    def _create_rotation(self, cluster_id: str, request: Request) -> Reply:
        reason, force = self._rotation_request(_json_object(request))
        return Reply.json(201, self.store.start_rotation(cluster_id, reason=reason, force_immediate=force))

    def _get_rotation(self, cluster_id: str, rotation_id: str, _request: Request) -> Reply:
        return Reply.json(200, self.store.rotation(cluster_id, rotation_id))

    def _list_rotations(self, cluster_id: str, request: Request) -> Reply:
        # §3.2.5: status filter, limit (default 50, max 100), cursor, since (RFC 3339); 400 on any invalid one.
        status = request.arg("status")
        if status is not None and status not in ROTATION_STATUSES:
            raise invalid("status", status, "enum", "Must be one of: " + ", ".join(ROTATION_STATUSES))
        raw_limit = request.arg("limit") or "50"
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= 100:
            raise invalid("limit", raw_limit, "range", "Must be an integer from 1 to 100")
        since_raw = request.arg("since")
        since = None
        if since_raw is not None:
            try:
                since = datetime.fromisoformat(since_raw.replace("Z", "+00:00"))
            except ValueError:
                raise invalid("since", since_raw, "format", "Must be an RFC 3339 timestamp") from None
            if since.tzinfo is None:
                raise invalid("since", since_raw, "format", "Must be an RFC 3339 timestamp with a zone")
        page = self.store.rotations(
            cluster_id, status=status, limit=int(raw_limit), cursor=request.arg("cursor"), since=since
        )
        return Reply.json(200, page)

    @staticmethod
    def _rotation_request(body: dict[str, Any]) -> tuple[str, bool]:
        reason = body.get("reason")
        if reason not in REASONS:  # §3.2.3 "Reason Values"
            raise invalid("reason", reason, "enum", "Must be one of: " + ", ".join(REASONS))
        force = body.get("force_immediate", False)
        if not isinstance(force, bool):
            raise invalid("force_immediate", force, "type", "Must be a boolean")
        return reason, force


def _json_object(request: Request) -> dict[str, Any]:
    try:
        body = request.json()
    except (ValueError, UnicodeDecodeError):
        raise invalid("body", None, "json", "The request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise invalid("body", None, "json", "The request body must be a JSON object")
    return body
