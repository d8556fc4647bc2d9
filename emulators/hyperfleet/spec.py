"""The HyperFleet OpenAPI contract: the vendored specs, the API's operations, and checking traffic against them.

Every request received and every response sent is checked with openapi-core against the mode's spec;
violations are recorded (``Violations``), never enforced beyond what the real server enforces.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from openapi_core import Config, OpenAPI
from openapi_core.deserializing.media_types.util import json_loads
from openapi_core.testing import MockRequest, MockResponse

from emulators.httpbase import Reply, Request

BASE = "/api/hyperfleet/v1"
# The vendored HyperFleet specifications (emulators/contracts/README.md names their source and licence).
CONTRACTS = Path(os.environ.get("HYPERFLEET_CONTRACTS_DIR", Path(__file__).resolve().parent.parent / "contracts"))
SPEC_FILES = {
    "PUT": "hyperfleet-api-core-1.0.25.openapi.yaml",
    "POST": "hyperfleet-api-0.1.0.openapi.yaml",
}
_ERROR_TEXT_MAX = 600
_SPEC_HOST = "https://hyperfleet.redhat.com"  # the specs' server URL; openapi-core matches paths under it

CLUSTER_RE = re.compile(rf"^{BASE}/clusters/(?P<id>[^/]+)$")
STATUSES_RE = re.compile(rf"^{BASE}/clusters/(?P<id>[^/]+)/statuses$")

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


def operation_of(request: Request) -> str | None:
    """The spec's operationId a request calls, None for a path or method the spec does not have."""
    path, method = request.path, request.method
    if path == f"{BASE}/clusters":
        return "getClusters" if method == "GET" else None
    if CLUSTER_RE.match(path):
        return "getClusterById" if method == "GET" else None
    if STATUSES_RE.match(path):
        return {"GET": "getClusterStatuses", "PUT": "putClusterStatuses", "POST": "postClusterStatuses"}.get(method)
    return None


def cluster_schema_errors(status_method: str, cluster: dict[str, Any]) -> list[str]:
    """Where a cluster body violates the mode's Cluster schema (as a getClusterById answer)."""
    path = f"{BASE}/clusters/{cluster.get('id', 'x')}"
    request = MockRequest(_SPEC_HOST, "GET", path)
    response = MockResponse(json.dumps(cluster).encode(), status_code=200)
    return [_error_text(e) for e in load_spec(status_method).iter_response_errors(request, response)]


def _mock_request(request: Request) -> MockRequest:
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


def request_errors(status_method: str, request: Request) -> list[str]:
    return [_error_text(exc) for exc in load_spec(status_method).iter_request_errors(_mock_request(request))]


def response_errors(status_method: str, request: Request, reply: Reply) -> list[str]:
    if operation_of(request) is None:
        return []  # no operation: the request violation already says so
    content_type = reply.headers.get("Content-Type", "").split(";")[0].strip()
    response = MockResponse(
        reply.body or b"",
        status_code=reply.status,
        headers={k: v for k, v in reply.headers.items() if k.lower() != "content-type"},
        content_type=content_type or None,  # type: ignore[arg-type]
    )
    spec = load_spec(status_method)
    try:
        return [_error_text(e) for e in spec.iter_response_errors(_mock_request(request), response)]
    except RecursionError:
        return ["the response body is nested deeper than the validator decodes"]


def violation(
    *, kind: str, request: Request, operation: str | None, text: str, spec: str, status: int | None = None
) -> dict[str, Any]:
    """One recorded violation: which side (`kind`), the call, the spec file and the error text."""
    item: dict[str, Any] = {
        "kind": kind,
        "method": request.method,
        "path": request.target,
        "operation": operation,
        "spec": spec,
        "error": text,
    }
    if status is not None:
        item["status"] = status
    return item


class Violations:
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
