"""Emulator of the HyperFleet API (clusters and adapter statuses), validated against the real OpenAPI specs.

Two modes, switchable at runtime: ``status_method="PUT"`` serves API core 1.0.25 (``PUT .../statuses``,
aggregated conditions ``Reconciled`` / ``LastKnownReconciled``), ``"POST"`` serves API 0.1.0
(``POST .../statuses``, aggregated ``Ready`` / ``Available``).  Every request received and every response
sent is checked with openapi-core against the mode's spec; violations are recorded, never enforced beyond
what the real server enforces (a client bug must show up in ``violations``, not as a friendlier answer).

Responses the emulator sends *on purpose* outside the spec (seeded broken clusters, raw overrides, injected
faults, the undocumented 204 of a discarded status write, 401 where 0.1.0 documents none) are recorded as
``expected_violations`` so that ``violations`` stays the list of real contract drift.

Not modelled: cluster/nodepool creation and deletion through the public API (seed through ``/_emulator``),
nodepools, resources, TSL search beyond ``field='value'`` terms joined by ``and``, ``order``, the security
requirement of the spec (auth is enforced by the emulator itself when a token is configured, so a missing
header is a 401, not a violation). Authentication: the shared opaque bearer token, and, after
``trust_id_tokens``, RS256 ID tokens verified as the API's JWT handler does (emulators/idtoken.py).
"""

from __future__ import annotations

import collections
import copy
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from openapi_core import Config, OpenAPI
from openapi_core.deserializing.media_types.util import json_loads
from openapi_core.testing import MockRequest, MockResponse

from emulators.faults import FaultBook, ServiceControl
from emulators.httpbase import HTTPEmulator, Reply, Request
from emulators.idtoken import GOOGLE_ISSUER, InvalidIdToken, Jwks, TrustedIssuer, looks_like_jwt, verify

BASE = "/api/hyperfleet/v1"
ADMIN_PREFIX = "/_emulator"
# The vendored HyperFleet specifications (emulators/contracts/README.md names their source and licence).
CONTRACTS = Path(os.environ.get("HYPERFLEET_CONTRACTS_DIR", Path(__file__).resolve().parent.parent / "contracts"))
SPEC_FILES = {
    "PUT": "hyperfleet-api-core-1.0.25.openapi.yaml",
    "POST": "hyperfleet-api-0.1.0.openapi.yaml",
}
REQUIRED_CONDITIONS = ("Applied", "Available", "Health")
CONDITION_STATUSES = ("True", "False", "Unknown")
# The adapter framework's vocabulary (hyperfleet-adapter docs/adapter-authoring-guide.md, "The Health condition
# boilerplate": status True exactly when the reason is Healthy, False with ResourcesSkipped or ExecutionFailed:*;
# Finalized reasons from the same framework). The API stores any reason; reports outside the vocabulary are
# recorded in `conventions`, not refused.
HEALTH_REASONS = ("Healthy", "ResourcesSkipped")
HEALTH_REASON_PREFIX = "ExecutionFailed:"
FINALIZED_REASONS = ("NotDeleting", "CleanupInProgress", "CleanupConfirmed", "AdapterUnhealthy")
# The condition-mapping engine masks `data` keys containing any of these (case-insensitive) before its CEL
# rules see them: hyperfleet-api pkg/util/mask_sensitive.go (sensitivePatterns, MaskSensitiveFields, depth
# limit 20), applied to each adapter status's data in pkg/services/condition_mapper.go.
MASKED_KEY_PATTERNS = (
    "password", "secret", "token", "apikey", "privatekey", "secretkey", "accesskey", "sshkey", "encryptionkey",
    "accountkey", "servicekey", "registrykey", "signingkey", "credential", "api_key", "passphrase", "private",
    "auth", "connection", "cert", "kubeconfig", "bearer",
)  # fmt: skip
_MASKING_DEPTH = 20
_ERROR_TEXT_MAX = 600
_SPEC_HOST = "https://hyperfleet.redhat.com"  # the specs' server URL; openapi-core matches paths under it

_CLUSTER_RE = re.compile(rf"^{BASE}/clusters/(?P<id>[^/]+)$")
_STATUSES_RE = re.compile(rf"^{BASE}/clusters/(?P<id>[^/]+)/statuses$")
_SEARCH_TERM = re.compile(r"^\s*(?P<field>[A-Za-z0-9_.\-]+)\s*(?P<op>=|>)\s*'(?P<value>[^']*)'\s*$")
# hyperfleet-api pkg/db/sql_helpers.go (ArgsToOrder): "field" or "field asc|desc"; pkg/handlers/list_params.go:
# without `order` the server sorts by "created_time desc".
_ORDER = re.compile(r"^(?P<field>[a-z_][a-z0-9_]*)(\s+(?P<direction>asc|desc))?$")

_spec_lock = threading.Lock()
_spec_cache: dict[str, Any] = {}


def load_spec(status_method: str) -> Any:
    """The parsed OpenAPI object of one mode, cached per process (parsing costs ~0.1 s)."""
    name = SPEC_FILES[status_method]
    with _spec_lock:
        if name not in _spec_cache:
            # problem+json is JSON; openapi-core only knows application/json out of the box.
            config = Config(extra_media_type_deserializers={"application/problem+json": json_loads})
            _spec_cache[name] = OpenAPI.from_file_path(str(CONTRACTS / name), config=config)
        return _spec_cache[name]


def rfc3339(moment: datetime | None = None) -> str:
    """RFC 3339 UTC timestamp with microseconds, as the Go API server prints them."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _truncate(text: str) -> str:
    return text if len(text) <= _ERROR_TEXT_MAX else text[: _ERROR_TEXT_MAX - 3] + "..."


def _error_text(exc: BaseException) -> str:
    """An openapi-core error with its schema errors (which carry the useful part)."""
    parts = [str(exc).split(": Value ", 1)[0]]
    cause: BaseException | None = exc.__cause__ or exc
    schema_errors = getattr(cause, "schema_errors", None) or getattr(exc, "schema_errors", None)
    for err in schema_errors or ():
        where = "/".join(str(p) for p in getattr(err, "absolute_path", ()))
        parts.append(f"{getattr(err, 'message', err)} at '{where}'")
    return _truncate("; ".join(parts))


def condition_type_for(adapter: str) -> str:
    """The aggregated condition an adapter produces: pullsecret -> PullsecretSuccessful."""
    words = [w for w in re.split(r"[-_\s]+", adapter) if w]
    return "".join(w[:1].upper() + w[1:] for w in words) + "Successful"


def masked_keys(data: Any, path: str = "data", depth: int = 0) -> list[tuple[str, str]]:
    """(key path, pattern) of every `data` key the condition-mapping engine would mask, as it walks them."""
    found: list[tuple[str, str]] = []
    if depth >= _MASKING_DEPTH:
        return found
    if isinstance(data, dict):
        for key, value in data.items():
            lowered = str(key).lower()
            pattern = next((p for p in MASKED_KEY_PATTERNS if p in lowered), None)
            if pattern is not None:
                found.append((f"{path}.{key}", pattern))  # masked whole: nothing below it is seen
            else:
                found.extend(masked_keys(value, f"{path}.{key}", depth + 1))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found.extend(masked_keys(item, f"{path}[{i}]", depth + 1))
    return found


# hyperfleet-api pkg/errors/errors.go (errorDefinitions: type slug, title, code per status). A 404 is
# NTF-001 for a missing resource (errors.NotFound in pkg/services/util.go) and NTF-000 "Endpoint Not Found"
# when no route matched (pkg/api/error.go SendNotFound, installed by server/router.go WithNotFoundHandler).
_PROBLEMS = {
    400: ("validation-error", "Validation Failed", "HYPERFLEET-VAL-001"),
    401: ("authentication-error", "Authentication Required", "HYPERFLEET-AUT-001"),
    403: ("permission-denied", "Permission Denied", "HYPERFLEET-AUZ-001"),  # the spec's ForbiddenDetails
    404: ("not-found", "Resource Not Found", "HYPERFLEET-NTF-001"),
    405: ("method-not-allowed", "Method Not Allowed", "HYPERFLEET-MTH-001"),
    409: ("conflict", "Resource Conflict", "HYPERFLEET-CNF-001"),
    429: ("rate-limit", "Too Many Requests", "HYPERFLEET-LMT-001"),
    500: ("internal-error", "Internal Server Error", "HYPERFLEET-INT-001"),
    503: ("service-unavailable", "Service Unavailable", "HYPERFLEET-SVC-001"),
}
NO_ROUTE = ("not-found", "Endpoint Not Found", "HYPERFLEET-NTF-000")


def problem(
    status: int,
    detail: str,
    instance: str,
    errors: list[dict[str, Any]] | None = None,
    *,
    kind: tuple[str, str, str] | None = None,
) -> Reply:
    """An RFC 9457 problem+json answer in HyperFleet's shape (`kind`: slug, title, code, else by status)."""
    slug, title, code = kind or _PROBLEMS.get(status, ("error", "Error", "HYPERFLEET-INT-001"))
    body: dict[str, Any] = {
        "type": f"https://api.hyperfleet.io/errors/{slug}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
        "code": code,
        "timestamp": rfc3339(),
        "trace_id": secrets.token_hex(8),
    }
    if errors:
        body["errors"] = errors
    return Reply.json(status, body, "application/problem+json")


class _Violations:
    """A thread-safe list of recorded violations."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[dict[str, Any]] = []

    def add(self, item: dict[str, Any]) -> None:
        with self._lock:
            self._items.append(item)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


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
    ) -> None:
        super().__init__()
        if status_method not in SPEC_FILES:
            raise ValueError("status_method must be PUT or POST")
        self.control = ServiceControl(book, self.service)
        self.status_method = status_method
        self.token = token
        self.token_file = Path(token_file) if token_file is not None else None
        self._initial_token = token
        # Tokens (or ID-token identities) the API authenticates but that hold no rights on the API: 403.
        self.forbidden_tokens: set[str] = set()
        # ID-token issuers trusted beside the opaque token (`trust_id_tokens`), and who they authenticated.
        self._issuers: list[TrustedIssuer] = []
        self.identities: list[str] = []
        self.required_adapters = list(required_adapters) if required_adapters else None
        self.validate = validate
        self._lock = threading.RLock()
        self._clusters: dict[str, dict[str, Any]] = {}
        self._invalid: set[str] = set()  # seeded clusters that violate the Cluster schema
        self._raw: dict[str, dict[str, Any]] = {}
        self._statuses: dict[str, dict[str, dict[str, Any]]] = {}
        self._reports: list[dict[str, Any]] = []
        self.violations = _Violations()
        self.expected_violations = _Violations()
        # Reports the API accepts but that break a convention: masked data keys, reasons outside the vocabulary.
        self.conventions = _Violations()
        self.validation_seconds = 0.0
        self.validations = 0
        # API calls under way and those served (operation, monotonic start, monotonic end): a test can
        # show that no call of an invocation outlives it (Cloud Run gives no CPU after the response).
        self._in_flight = 0
        self._served: collections.deque[tuple[str, float, float]] = collections.deque(maxlen=10_000)
        load_spec(status_method)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve; with ``token_file`` write the bearer token there first (random unless ``token``)."""
        if self.token_file is not None:
            if self.token is None:
                self.token = "hf-emu-" + secrets.token_urlsafe(32)
            self.token_file.parent.mkdir(parents=True, exist_ok=True)
            self.token_file.write_text(self.token + "\n", encoding="utf-8")
        self._initial_token = self.token
        super().start(host, port)

    def set_token(self, token: str, *, forbidden: bool = False) -> None:
        """From now on accept ``token`` only (a rotation at the issuer); ``forbidden`` makes it a 403.

        The token file is left alone: a test rotates it itself, the way a secret volume would.
        """
        with self._lock:
            self.token = token
            if forbidden:
                self.forbidden_tokens.add(token)
            else:
                self.forbidden_tokens.discard(token)

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
                "auth": self.token is not None or bool(self._issuers),
                "clusters": copy.deepcopy(self._clusters),
                "raw_overrides": sorted(self._raw),
                "statuses": copy.deepcopy(self._statuses),
                "reports": len(self._reports),
                "violations": len(self.violations),
                "expected_violations": len(self.expected_violations),
                "conventions": len(self.conventions),
                "validations": self.validations,
                "validation_ms_mean": (
                    round(self.validation_seconds / self.validations * 1000, 3) if self.validations else None
                ),
            }

    def reset(self) -> None:
        with self._lock:
            # Back to the token of start(), in the file too: a test's rotation does not leak into the next.
            self.token = self._initial_token
            self.forbidden_tokens.clear()
            self.identities.clear()
            if self.token_file is not None and self.token is not None:
                try:
                    current = self.token_file.read_text(encoding="utf-8").strip()
                except OSError:
                    current = None
                if current != self.token:
                    self.token_file.write_text(self.token + "\n", encoding="utf-8")
            self._clusters.clear()
            self._invalid.clear()
            self._raw.clear()
            self._statuses.clear()
            self._reports.clear()
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
        if "_raw" in body:
            raw = dict(body["_raw"])
            with self._lock:
                self._raw[cluster_id] = {
                    "status": int(raw.get("status", 200)),
                    "content_type": str(raw.get("content_type", "application/json")),
                    "body": raw.get("body", ""),
                }
            return {"raw": self._raw[cluster_id], "schema_errors": []}
        now = rfc3339()
        cluster: dict[str, Any] = {
            "id": cluster_id,
            "kind": "Cluster",
            "href": f"{BASE}/clusters/{cluster_id}",
            "name": cluster_id,
            "labels": {},
            "spec": {},
            "generation": 1,
            "created_time": now,
            "updated_time": now,
            "created_by": "emulator@hyperfleet.local",
            "updated_by": "emulator@hyperfleet.local",
        }
        cluster.update(copy.deepcopy(body))
        if "deleted_time" in cluster and "deleted_by" not in cluster:
            cluster["deleted_by"] = cluster["updated_by"]
        with self._lock:
            self._raw.pop(cluster_id, None)
            self._clusters[cluster_id] = cluster
            self._statuses.setdefault(cluster_id, {})
            if "status" not in body:
                self._aggregate(cluster_id)
            errors = self._schema_errors_for_cluster(cluster)
            if errors:
                self._invalid.add(cluster_id)
            else:
                self._invalid.discard(cluster_id)
            return {"cluster": copy.deepcopy(cluster), "schema_errors": errors}

    def _schema_errors_for_cluster(self, cluster: dict[str, Any]) -> list[str]:
        path = f"{BASE}/clusters/{cluster.get('id', 'x')}"
        request = MockRequest(_SPEC_HOST, "GET", path)
        response = MockResponse(json.dumps(cluster).encode(), status_code=200)
        return [_error_text(e) for e in self.spec.iter_response_errors(request, response)]

    def seed_status(self, cluster_id: str, adapter: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store another adapter's status as if it had reported; raises KeyError for unknown clusters."""
        with self._lock:
            cluster = self._clusters[cluster_id]
            now = rfc3339()
            generation = int(body.get("observed_generation", cluster["generation"]))
            conditions = body.get("conditions") or [
                {"type": t, "status": "True", "reason": "Seeded", "message": "seeded by the emulator"}
                for t in ("Applied", "Available", "Health")
            ]
            status: dict[str, Any] = {
                "adapter": adapter,
                "observed_generation": generation,
                "conditions": [{"last_transition_time": now, **c} for c in conditions],
                "data": copy.deepcopy(body.get("data", {})),
                "created_time": body.get("created_time", now),
                "last_report_time": body.get("last_report_time", now),
            }
            if "metadata" in body:
                status["metadata"] = copy.deepcopy(body["metadata"])
            self._statuses.setdefault(cluster_id, {})[adapter] = status
            self._aggregate(cluster_id)
            return copy.deepcopy(status)

    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Admin routes relative to /hyperfleet (also served under /_emulator on the API port)."""
        route = "/" + path.strip("/")
        parts = [p for p in route.split("/") if p]
        if method == "GET" and route == "/state":
            return 200, self.state()
        if method == "POST" and route == "/reset":
            self.reset()
            return 200, {"reset": True}
        if route == "/reports":
            if method == "GET":
                with self._lock:
                    return 200, copy.deepcopy(self._reports)
            if method == "DELETE":
                with self._lock:
                    self._reports.clear()
                return 200, {"cleared": True}
        if route == "/violations":
            if method == "GET":
                return 200, {
                    "violations": self.violations.list(),
                    "expected_violations": self.expected_violations.list(),
                    "conventions": self.conventions.list(),
                }
            if method == "DELETE":
                self.violations.clear()
                self.expected_violations.clear()
                self.conventions.clear()
                return 200, {"cleared": True}
        if method == "PUT" and route == "/token":
            token = (body or {}).get("token")
            if not isinstance(token, str) or not token:
                return 400, {"error": 'body must be {"token": "...", "forbidden": false}'}
            self.set_token(token, forbidden=bool((body or {}).get("forbidden")))
            return 200, {"token_set": True}
        if method == "PUT" and route == "/status_method":
            wanted = str((body or {}).get("method", "")).upper()
            if wanted not in SPEC_FILES:
                return 400, {"error": 'body must be {"method": "PUT"|"POST"}'}
            load_spec(wanted)
            with self._lock:
                self.status_method = wanted
                for cluster_id in self._clusters:  # the aggregated condition names differ per version
                    self._aggregate(cluster_id)
            return 200, {"status_method": wanted}
        if len(parts) == 2 and parts[0] == "clusters":
            return self._admin_cluster(method, parts[1], body)
        if len(parts) == 4 and parts[0] == "clusters" and parts[2] == "statuses" and method == "PUT":
            if not isinstance(body, dict):
                return 400, {"error": "body must be an object"}
            try:
                return 200, self.seed_status(parts[1], parts[3], body)
            except KeyError:
                return 404, {"error": f"no cluster {parts[1]}"}
        return 404, {"error": f"no admin route {method} {route}"}

    def _admin_cluster(self, method: str, cluster_id: str, body: Any) -> tuple[int, Any]:
        if method == "PUT":
            if not isinstance(body, dict):
                return 400, {"error": "body must be a cluster object"}
            return 200, self.seed_cluster(cluster_id, body)
        if method == "DELETE":
            with self._lock:
                found = self._clusters.pop(cluster_id, None) is not None
                found = self._raw.pop(cluster_id, None) is not None or found
                self._statuses.pop(cluster_id, None)
                self._invalid.discard(cluster_id)
            return (200, {"deleted": cluster_id}) if found else (404, {"error": f"no cluster {cluster_id}"})
        if method == "PATCH":
            if not isinstance(body, dict):
                return 400, {"error": "body must be an object"}
            with self._lock:
                cluster = self._clusters.get(cluster_id)
                if cluster is None:
                    return 404, {"error": f"no cluster {cluster_id}"}
                if "spec" in body:
                    cluster["spec"] = copy.deepcopy(body["spec"])
                if "labels" in body:
                    cluster["labels"] = copy.deepcopy(body["labels"])
                cluster["generation"] = int(body.get("generation", cluster["generation"] + 1))
                for key in ("deleted_time", "deleted_by", "name"):
                    if key in body:
                        cluster[key] = body[key]
                cluster["updated_time"] = rfc3339()
                self._aggregate(cluster_id)
                return 200, copy.deepcopy(cluster)
        if method == "GET":
            with self._lock:
                cluster = self._clusters.get(cluster_id)
                return (200, copy.deepcopy(cluster)) if cluster else (404, {"error": "no such cluster"})
        return 405, {"error": f"{method} not supported on clusters"}

    # -- aggregation ------------------------------------------------------------------------
    def _aggregate(self, cluster_id: str) -> None:
        """Recompute the cluster's status.conditions from its adapter statuses (lock held)."""
        cluster = self._clusters[cluster_id]
        statuses = self._statuses.get(cluster_id, {})
        generation = int(cluster.get("generation", 1))
        deleting = "deleted_time" in cluster
        old = {c.get("type"): c for c in (cluster.get("status") or {}).get("conditions", [])}
        now = rfc3339()

        def condition(kind: str, ok: bool, reason: str, message: str, observed: int, *, updated: str) -> dict[str, Any]:
            status = "True" if ok else "False"
            previous = old.get(kind)
            changed = previous is None or previous.get("status") != status
            return {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "observed_generation": observed,
                "created_time": previous.get("created_time", now) if previous else now,
                "last_updated_time": updated,
                "last_transition_time": now if changed else previous.get("last_transition_time", now),  # type: ignore[union-attr]
            }

        def done(status: dict[str, Any], at_generation: int | None) -> bool:
            wanted = "Finalized" if deleting else "Available"
            if at_generation is not None and status["observed_generation"] != at_generation:
                return False
            return any(c["type"] == wanted and c["status"] == "True" for c in status["conditions"])

        required = self.required_adapters or sorted(statuses)
        reported = [statuses[a] for a in required if a in statuses]
        current = bool(required) and len(reported) == len(required) and all(done(s, generation) for s in reported)
        gens = {s["observed_generation"] for s in reported}
        common = next(iter(gens)) if len(gens) == 1 else None
        known = bool(required) and len(reported) == len(required) and common is not None
        known = known and all(done(s, common) for s in reported)
        last_report = max((s["last_report_time"] for s in reported), default=now)
        if self.status_method == "PUT":
            aggregated = [
                condition(
                    "Reconciled",
                    current,
                    "ReconciledAll" if current else "MissingRequiredAdapters",
                    "All required adapters reported at the current generation"
                    if current
                    else "Not all required adapters reported success at the current generation",
                    generation,
                    updated=last_report,
                ),
                condition(
                    "LastKnownReconciled",
                    known,
                    "AllAdaptersReconciled" if known else "AdaptersNotReconciled",
                    "All required adapters report success for a common generation"
                    if known
                    else "No common generation at which all required adapters succeeded",
                    common or generation,
                    updated=last_report,
                ),
            ]
        else:
            aggregated = [
                condition(
                    "Ready",
                    current,
                    "AllAdaptersReady" if current else "AdaptersNotReady",
                    "All adapters report success at the current generation"
                    if current
                    else "Not all adapters report success at the current generation",
                    generation,
                    updated=last_report,
                ),
                condition(
                    "Available",
                    known,
                    "AllAdaptersAvailable" if known else "AdaptersNotAvailable",
                    "All adapters available at a common generation"
                    if known
                    else "Adapters not available at a common generation",
                    common or generation,
                    updated=last_report,
                ),
            ]
        for adapter in sorted(statuses):
            status = statuses[adapter]
            available = next((c for c in status["conditions"] if c["type"] == "Available"), None)
            aggregated.append(
                condition(
                    condition_type_for(adapter),
                    available is not None and available["status"] == "True",
                    (available or {}).get("reason") or "NoAvailableCondition",
                    (available or {}).get("message") or f"{adapter} reported no Available condition",
                    status["observed_generation"],
                    updated=status["last_report_time"],
                )
            )
        cluster["status"] = {"conditions": aggregated}

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
            return self._handle_api(request)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._served.append((self._operation(request) or "other", start, time.monotonic()))

    def _handle_api(self, request: Request) -> Reply:
        operation = self._operation(request)
        started = time.perf_counter()
        request_errors = self._validate_request(request) if self.validate else []
        elapsed = time.perf_counter() - started
        for text in request_errors:
            self.violations.add(self._violation("request", request, operation, text))
        code = self.control.enter(operation or "other")
        expected = False
        if code in ("reset", "timeout"):
            reply = Reply.drop(code)
        elif code is not None:
            reply = problem(int(code), "injected fault", request.path)
            expected = True
        else:
            reply, expected = self._serve(request, operation)
        if _STATUSES_RE.match(request.path) and request.method in ("PUT", "POST"):
            self._record_report(request, reply)
        if self.validate and reply.fault is None:
            started = time.perf_counter()
            response_errors = self._validate_response(request, reply)
            elapsed += time.perf_counter() - started
            target = self.expected_violations if expected else self.violations
            for text in response_errors:
                target.add(self._violation("response", request, operation, text, reply.status))
        with self._lock:
            self.validation_seconds += elapsed
            self.validations += 1
        return reply

    def _operation(self, request: Request) -> str | None:
        path, method = request.path, request.method
        if path == f"{BASE}/clusters":
            return "getClusters" if method == "GET" else None
        if _CLUSTER_RE.match(path):
            return "getClusterById" if method == "GET" else None
        if _STATUSES_RE.match(path):
            return {"GET": "getClusterStatuses", "PUT": "putClusterStatuses", "POST": "postClusterStatuses"}.get(method)
        return None

    def _violation(
        self, kind: str, request: Request, operation: str | None, text: str, status: int | None = None
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            "kind": kind,
            "method": request.method,
            "path": request.target,
            "operation": operation,
            "spec": SPEC_FILES[self.status_method],
            "error": text,
        }
        if status is not None:
            item["status"] = status
        return item

    def _mock_request(self, request: Request) -> MockRequest:
        args = {k: v[0] for k, v in request.query.items()}
        content_type = (request.header("Content-Type") or "application/json").split(";")[0].strip()
        headers = dict(request.headers)
        # openapi-core stops at a failed security check and would skip the body; auth is the
        # emulator's own job (401), so the validator always sees some bearer credential.
        if not headers.get("authorization", "").lower().startswith("bearer "):
            headers["authorization"] = "Bearer emulator-validation"
        return MockRequest(
            _SPEC_HOST,
            request.method,
            request.path,
            args=args,
            headers=headers,
            data=request.body or None,
            content_type=content_type,
        )

    def _validate_request(self, request: Request) -> list[str]:
        return [_error_text(exc) for exc in self.spec.iter_request_errors(self._mock_request(request))]

    def _validate_response(self, request: Request, reply: Reply) -> list[str]:
        if self._operation(request) is None:
            return []  # no operation: the request violation already says so
        content_type = reply.headers.get("Content-Type", "").split(";")[0].strip()
        response = MockResponse(
            reply.body or b"",
            status_code=reply.status,
            headers={k: v for k, v in reply.headers.items() if k.lower() != "content-type"},
            content_type=content_type or None,  # type: ignore[arg-type]
        )
        return [_error_text(e) for e in self.spec.iter_response_errors(self._mock_request(request), response)]

    def _record_report(self, request: Request, reply: Reply) -> None:
        try:
            body: Any = request.json()
        except (ValueError, UnicodeDecodeError):
            body = request.body.decode("utf-8", "replace")
        match = _STATUSES_RE.match(request.path)
        with self._lock:
            self._reports.append(
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
        pattern = re.compile(identity_pattern) if identity_pattern else None
        with self._lock:
            self._issuers = [i for i in self._issuers if i.issuer != issuer]
            self._issuers.append(TrustedIssuer(issuer, audience, keys, identity_claim, pattern))

    def _auth_failure(self, request: Request) -> tuple[int, str] | None:
        """(401, AUT code) for a missing, unknown, expired or unverifiable credential, (403, AUZ-001) for a known
        one without rights, else None; `identities` records who each ID token authenticated."""
        with self._lock:
            token, forbidden, issuers = self.token, set(self.forbidden_tokens), list(self._issuers)
        if token is None and not issuers:
            return None
        header = request.header("Authorization") or ""
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            return 401, "HYPERFLEET-AUT-001"
        if issuers and looks_like_jwt(credential):
            try:
                identity = verify(credential, issuers)
            except InvalidIdToken as exc:
                return 401, "HYPERFLEET-AUT-003" if exc.expired else "HYPERFLEET-AUT-002"
            with self._lock:
                self.identities.append(identity)
            return (403, "HYPERFLEET-AUZ-001") if identity in forbidden else None
        if token is None or not secrets.compare_digest(credential.encode(), token.encode()):
            return 401, "HYPERFLEET-AUT-002"
        return (403, "HYPERFLEET-AUZ-001") if credential in forbidden else None

    def _serve(self, request: Request, operation: str | None) -> tuple[Reply, bool]:
        """The server's answer and whether it is knowingly off-spec."""
        path = request.path
        if not path.startswith(BASE + "/"):
            return problem(404, f"The requested endpoint '{path}' does not exist", path, kind=NO_ROUTE), False
        refused = self._auth_failure(request)
        if refused is not None and refused[0] == 401:
            detail = "Account authentication could not be verified"
            kind = (
                _PROBLEMS[401][0],
                "Invalid Token" if refused[1] == "HYPERFLEET-AUT-003" else _PROBLEMS[401][1],
                refused[1],
            )
            return problem(401, detail, path, kind=kind), self.status_method == "POST"
        if refused is not None:
            # Core 1.0.25 documents 403 only through its `default` problem answer; 0.1.0 documents none.
            return problem(403, "You do not have permission to perform this action", path), self.status_method == "POST"
        if path == f"{BASE}/clusters":
            if request.method != "GET":
                return self._method_not_allowed(path, "GET"), True
            return self._list_clusters(request)
        match = _CLUSTER_RE.match(path)
        if match:
            if request.method != "GET":
                return self._method_not_allowed(path, "GET"), True
            return self._get_cluster(match.group("id"), path)
        match = _STATUSES_RE.match(path)
        if match:
            if request.method == "GET":
                return self._list_statuses(request, match.group("id"))
            if request.method != self.status_method:
                return self._method_not_allowed(path, f"GET, {self.status_method}"), True
            return self._write_status(request, match.group("id"))
        return problem(404, f"The requested endpoint '{path}' does not exist", path, kind=NO_ROUTE), False

    @staticmethod
    def _method_not_allowed(path: str, allow: str) -> Reply:
        reply = problem(405, "method not allowed", path)
        reply.headers["Allow"] = allow
        return reply

    def _paging(self, request: Request) -> tuple[int, int] | str:
        try:
            page = int(request.arg("page") or 1)
            size = int(request.arg("size") or request.arg("pageSize") or 20)
        except ValueError:
            return "page and size must be integers"
        if page < 1 or size < 1:
            return "page and size must be >= 1"
        return page, size

    def _list_clusters(self, request: Request) -> tuple[Reply, bool]:
        paging = self._paging(request)
        if isinstance(paging, str):
            return problem(400, paging, request.path), False
        page, size = paging
        terms: list[tuple[str, str]] = []
        search = request.arg("search")
        if search:
            for raw in re.split(r"\s+and\s+", search.strip(), flags=re.IGNORECASE):
                term = _SEARCH_TERM.match(raw)
                if term is None:
                    return problem(400, f"unsupported search expression: {raw!r}", request.path), False
                if term.group("op") == ">" and term.group("field") != "id":
                    return problem(400, f"unsupported search expression: {raw!r}", request.path), False
                terms.append((term.group("field") + (">" if term.group("op") == ">" else ""), term.group("value")))
        order = _ORDER.match((request.arg("order") or "").strip())
        if request.arg("order") and (order is None or order.group("field") != "id"):
            return problem(400, f"unsupported order: {request.arg('order')!r}", request.path), False
        with self._lock:
            clusters = sorted(self._clusters.values(), key=lambda c: (str(c.get("created_time")), c["id"]))
            if order is not None:  # keyset paging: `order=id asc` with `search=id > 'last'` (TSL comparison)
                clusters = sorted(clusters, key=lambda c: str(c["id"]), reverse=order.group("direction") == "desc")
            selected = [c for c in clusters if all(self._field_matches(c, f, v) for f, v in terms)]
            items = copy.deepcopy(selected[(page - 1) * size : page * size])
            expected = any(c["id"] in self._invalid for c in items)
        body = {"kind": "ClusterList", "page": page, "size": len(items), "total": len(selected), "items": items}
        return Reply.json(200, body), expected

    @staticmethod
    def _field_matches(cluster: dict[str, Any], field: str, value: str) -> bool:
        if field == "id>":
            return str(cluster["id"]) > value
        if field.startswith("labels."):
            return (cluster.get("labels") or {}).get(field[len("labels.") :]) == value
        if field.startswith("status.conditions."):
            kind = field[len("status.conditions.") :]
            conditions = (cluster.get("status") or {}).get("conditions", [])
            return any(c.get("type") == kind and c.get("status") == value for c in conditions)
        return str(cluster.get(field)) == value

    def _get_cluster(self, cluster_id: str, path: str) -> tuple[Reply, bool]:
        with self._lock:
            raw = self._raw.get(cluster_id)
            if raw is not None:
                payload = raw["body"]
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                return Reply(raw["status"], data, {"Content-Type": raw["content_type"]}), True
            cluster = self._clusters.get(cluster_id)
            if cluster is None:
                return problem(404, f"Cluster with id='{cluster_id}' not found", path), False
            return Reply.json(200, cluster), cluster_id in self._invalid

    def _list_statuses(self, request: Request, cluster_id: str) -> tuple[Reply, bool]:
        paging = self._paging(request)
        if isinstance(paging, str):
            return problem(400, paging, request.path), False
        page, size = paging
        with self._lock:
            if cluster_id not in self._clusters:
                return problem(404, f"Cluster with id='{cluster_id}' not found", request.path), False
            statuses = sorted(self._statuses.get(cluster_id, {}).values(), key=lambda s: s["created_time"])
            items = copy.deepcopy(statuses[(page - 1) * size : page * size])
        body = {"kind": "AdapterStatusList", "page": page, "size": len(items), "total": len(statuses), "items": items}
        return Reply.json(200, body), False

    def _write_status(self, request: Request, cluster_id: str) -> tuple[Reply, bool]:
        path = request.path
        try:
            body = request.json()
        except (ValueError, UnicodeDecodeError):
            return problem(400, "request body is not valid JSON", path), False
        invalid = self._status_rule_errors(body)
        if invalid:
            detail = "; ".join(e["message"] for e in invalid)
            return problem(400, detail, path, invalid), False
        observed_time = _parse_time(body["observed_time"])
        assert observed_time is not None  # checked by the rules above
        self._record_conventions(cluster_id, body)
        with self._lock:
            cluster = self._clusters.get(cluster_id)
            if cluster is None:
                return problem(404, f"Cluster with id='{cluster_id}' not found", path), False
            generation = body["observed_generation"]
            stored = self._statuses.setdefault(cluster_id, {}).get(body["adapter"])
            # Discard rules, in the server's order: hyperfleet-api pkg/services/adapter_status_validation.go
            # (validateAndClassifyAdapterStatus). A discarded report is answered 204, which the spec omits.
            if generation > int(cluster["generation"]):
                return Reply(204), True  # a generation the cluster has not reached
            if stored is not None:
                if generation < stored["observed_generation"]:
                    return Reply(204), True  # older than the stored report's generation
                stored_time = _parse_time(stored["last_report_time"])
                if generation == stored["observed_generation"] and stored_time and observed_time < stored_time:
                    return Reply(204), True  # same generation, observed before the stored report
                available: dict[str, Any] = next((c for c in body["conditions"] if c.get("type") == "Available"), {})
                if available.get("status") == "Unknown":
                    return Reply(204), True  # Available=Unknown is accepted on an adapter's first report only
            now = rfc3339()
            previous = {c["type"]: c for c in (stored or {}).get("conditions", [])}
            conditions = []
            for cond in body["conditions"]:
                before = previous.get(cond["type"])
                unchanged = before is not None and before["status"] == cond["status"]
                out = {k: cond[k] for k in ("type", "status", "reason", "message") if k in cond}
                out["last_transition_time"] = before["last_transition_time"] if unchanged else now  # type: ignore[index]
                conditions.append(out)
            status: dict[str, Any] = {
                "adapter": body["adapter"],
                "observed_generation": generation,
                "conditions": conditions,
                "data": copy.deepcopy(body.get("data") or {}),
                "created_time": stored["created_time"] if stored else now,
                "last_report_time": rfc3339(observed_time),
            }
            if "metadata" in body:
                status["metadata"] = copy.deepcopy(body["metadata"])
            self._statuses[cluster_id][body["adapter"]] = status
            self._aggregate(cluster_id)
            return Reply.json(201, status), False

    def _record_conventions(self, cluster_id: str, body: dict[str, Any]) -> None:
        """Record what the API accepts but the adapter contract advises against (see the constants above)."""
        where = {"cluster_id": cluster_id, "adapter": body.get("adapter")}
        for key, pattern in masked_keys(body.get("data") or {}):
            self.conventions.add({"kind": "masked-data-key", **where, "key": key, "pattern": pattern})
        for cond in body["conditions"]:
            reason = cond.get("reason")
            if cond.get("type") == "Health":
                ok = reason in HEALTH_REASONS or (
                    isinstance(reason, str)
                    and reason.startswith(HEALTH_REASON_PREFIX)
                    and len(reason) > len(HEALTH_REASON_PREFIX)
                )
                # The boilerplate's status expression: True exactly when the reason is Healthy.
                ok = ok and (cond.get("status") == "True") == (reason == "Healthy")
            elif cond.get("type") == "Finalized":
                ok = reason in FINALIZED_REASONS
            else:
                continue
            if not ok:
                self.conventions.add({"kind": f"{cond['type'].lower()}-reason", **where, "reason": reason})

    @staticmethod
    def _status_rule_errors(body: Any) -> list[dict[str, Any]]:
        """The API server's own checks on a status write, as ValidationError objects."""
        if not isinstance(body, dict):
            return [{"field": "", "constraint": "required", "message": "body must be a JSON object"}]
        errors: list[dict[str, Any]] = []
        if not isinstance(body.get("adapter"), str) or not body["adapter"]:
            errors.append({"field": "adapter", "constraint": "required", "message": "adapter is required"})
        generation = body.get("observed_generation")
        if not isinstance(generation, int) or isinstance(generation, bool) or generation < 1:
            errors.append(
                {"field": "observed_generation", "constraint": "min", "message": "observed_generation must be >= 1"}
            )
        observed = _parse_time(body.get("observed_time"))
        if observed is None:
            errors.append(
                {"field": "observed_time", "constraint": "format", "message": "observed_time must be RFC 3339"}
            )
        else:
            # hyperfleet-api pkg/handlers/validation.go (validateObservedTimeRange, run by the status handler's
            # Create before anything else): at most 5 minutes ahead of the server's clock, 30 minutes behind.
            now = datetime.now(UTC)
            if not now - timedelta(minutes=30) <= observed <= now + timedelta(minutes=5):
                errors.append(
                    {
                        "field": "observed_time",
                        "constraint": "max",
                        "message": "observed_time must lie within [now-30m, now+5m]",
                    }
                )
        conditions = body.get("conditions")
        if not isinstance(conditions, list):
            errors.append({"field": "conditions", "constraint": "required", "message": "conditions are required"})
            return errors
        seen: set[str] = set()
        for i, cond in enumerate(conditions):
            if not isinstance(cond, dict):
                errors.append({"field": f"conditions[{i}]", "constraint": "required", "message": "not an object"})
                continue
            kind = cond.get("type")
            if not isinstance(kind, str) or not kind.strip():
                errors.append(
                    {"field": f"conditions[{i}].type", "constraint": "required", "message": "condition type is empty"}
                )
            elif kind in seen:
                errors.append(
                    {
                        "field": f"conditions[{i}].type",
                        "constraint": "unique",
                        "message": f"duplicate condition type {kind}",
                    }
                )
            else:
                seen.add(kind)
            if cond.get("status") not in CONDITION_STATUSES:
                errors.append(
                    {
                        "field": f"conditions[{i}].status",
                        "constraint": "enum",
                        "value": cond.get("status"),
                        "message": "condition status must be True, False or Unknown",
                    }
                )
        for kind in REQUIRED_CONDITIONS:
            if kind not in seen:
                errors.append({"field": "conditions", "constraint": "required", "message": f"missing condition {kind}"})
        return errors
