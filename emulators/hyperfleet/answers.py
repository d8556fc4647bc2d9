"""HyperFleet's answers: RFC 3339 timestamps as the Go server prints them and RFC 9457 problem+json errors."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from emulators.httpbase import Reply


def rfc3339(moment: datetime | None = None) -> str:
    """RFC 3339 UTC timestamp with microseconds, as the Go API server prints them."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp with a zone, else None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


# hyperfleet-api pkg/errors/errors.go (errorDefinitions: type slug, title, code per status). A 404 is
# NTF-001 for a missing resource (errors.NotFound in pkg/services/util.go) and NTF-000 "Endpoint Not Found"
# when no route matched (pkg/api/error.go SendNotFound, installed by server/router.go WithNotFoundHandler).
PROBLEMS = {
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
    slug, title, code = kind or PROBLEMS.get(status, ("error", "Error", "HYPERFLEET-INT-001"))
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


def no_route(path: str) -> Reply:
    """The router's 404 for a path no route matches."""
    return problem(404, f"The requested endpoint '{path}' does not exist", path, kind=NO_ROUTE)


def method_not_allowed(path: str, allow: str) -> Reply:
    reply = problem(405, "method not allowed", path)
    reply.headers["Allow"] = allow
    return reply


def database_unavailable(path: str) -> Reply:
    """hyperfleet-api 541f6b4 pkg/services/util.go and pkg/db/transaction_middleware.go: a lost database connection
    (db.IsDBConnectionError) is errors.ServiceUnavailable("Database connection unavailable"), a 503 problem with
    code HYPERFLEET-SVC-001 (pkg/errors/errors.go, type service-unavailable, title "Service Unavailable")."""
    return problem(503, "Database connection unavailable", path)
