"""What the HyperFleet API's answers mean: problem codes, refusals of our token, and the configuration errors a
status code reveals (docs/contract.md §2's table). The client (hyperfleet/client.py) asks; nothing here calls.

Text the API (or a proxy in front of it) wrote, a problem's `detail` or `title`, a `Content-Type`, a `Location`,
reaches a message only through `logs.answer_text`: scrubbed of every registered secret and credential shape (an
answer that echoes our `Authorization` header), then cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pullsecret.errors import AdapterError, TerminalError, TransientError
from pullsecret.logs import answer_text, log

RETRY_STATUSES = (429, 500, 502, 503, 504)
REFUSED = (401, 403)
# hyperfleet-api pkg/errors/errors.go: NTF-001 generic, NTF-002 cluster, NTF-003 node pool not found.
GONE_CODES = frozenset({"HYPERFLEET-NTF-001", "HYPERFLEET-NTF-002", "HYPERFLEET-NTF-003"})
AUTHZ_PREFIX = "HYPERFLEET-AUZ-"
# hyperfleet-api 541f6b4 pkg/tenant/middleware.go (resolveDimensions): the details of a tenancy refusal.
TENANT_DETAIL = re.compile(r"tenant header|tenant dimensions", re.IGNORECASE)
ALLOW = re.compile(r"^[A-Z, ]{1,80}$")
# A HyperFleet error code as hyperfleet-api pkg/errors/errors.go spells them (`HYPERFLEET-NTF-001`): only a code of
# that shape is believed and shown, so an answer cannot put other text (a token's first characters) there.
CODE = re.compile(r"HYPERFLEET-[A-Z]{2,10}-[0-9]{1,6}")


class UnparseableCluster(TerminalError):
    """The API's answer for one cluster is JSON the decoder refuses (nested too deep): that cluster's own terminal
    problem, reported with `generation` when its top-level `generation` member can still be read, else at the
    event's generation (reconcile.run's `event_generation`; the API discards one above the cluster's)."""

    default_reason = "InvalidCluster"

    def __init__(self, message: str, *, generation: int | None) -> None:
        super().__init__(message, reason="InvalidCluster", service="hyperfleet")
        self.generation = generation


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of the API: status, headers, body (read whole: the API's answers are small JSON)."""

    status_code: int
    headers: Mapping[str, str]
    body: bytes = field(repr=False)

    def json(self) -> Any:
        """The body as JSON; raises ValueError (also for bytes that are not UTF-8) or RecursionError."""
        return json.loads(self.body)


def refused(response: Answer, what: str, *, base_url: str, remedy: str) -> TransientError:
    """Our own token refused even after a re-read: redeliver (never acknowledge), and say so at error level.

    A 403 without any HyperFleet code is not the API's answer but a gateway's (or a proxy's) denial: the
    deployment does not admit this identity, a configuration error (docs/contract.md "Authentication")."""
    code = response.status_code
    if code == 403 and problem_code(response) is None:
        message = (
            f"{what}: a gateway or proxy in front of the HyperFleet API at {base_url} refused the adapter's "
            f"token (403 without a HyperFleet error code{problem_title(response)}); a configuration "
            "error: the gateway must admit this identity (HYPERFLEET_API_AUTH, docs/contract.md "
            f"'Authentication'), or {remedy}; the event will be redelivered"
        )
        kind = "configuration"
    else:
        why = "not authenticated" if code == 401 else "not authorised"
        message = (
            f"{what}: HyperFleet API refused the adapter's token ({code}, {why}{problem_title(response)}); "
            f"the event will be redelivered: {remedy}"
        )
        kind = "credentials"
    log.error(
        message,
        operation="hyperfleet.auth",
        error_kind=kind,
        reason="CredentialsRefused",
        http_status=code,
        service="hyperfleet",
    )
    return TransientError(message, reason="CredentialsRefused", service="hyperfleet")


def no_route(response: Answer, what: str, *, base_url: str) -> TransientError:
    """A 404 that names no missing resource: the URL reaches no API route. Loud, and never an acknowledgement."""
    code = problem_code(response) or "no HyperFleet error code"
    message = (
        f"{what}: HYPERFLEET_API_URL {base_url} reaches no HyperFleet API route (404, {code}); "
        "a configuration error: fix HYPERFLEET_API_URL; the event will be redelivered"
    )
    log.error(
        message,
        operation="hyperfleet.route",
        error_kind="configuration",
        reason="EndpointNotFound",
        http_status=404,
        service="hyperfleet",
    )
    return TransientError(message, reason="EndpointNotFound", service="hyperfleet")


def no_tenant(response: Answer, what: str, *, base_url: str) -> TransientError:
    """Tenancy is on and this caller is neither a tenant nor the system: HYPERFLEET_SYSTEM_HEADER is missing."""
    message = (
        f"{what}: HyperFleet API at {base_url} requires a tenant (403 HYPERFLEET-AUZ-001"
        f"{problem_title(response)}); a configuration error: set HYPERFLEET_SYSTEM_HEADER to the API's "
        "server.tenant.system_header (e.g. X-HyperFleet-System) so that calls are the system identity's; "
        "the event will be redelivered"
    )
    log.error(
        message,
        operation="hyperfleet.tenancy",
        error_kind="configuration",
        reason="TenantRequired",
        http_status=403,
        service="hyperfleet",
    )
    return TransientError(message, reason="TenantRequired", service="hyperfleet")


def failure(response: Answer, what: str) -> AdapterError:
    """An answer no call expects: 429 and 5xx (e.g. 503 HYPERFLEET-SVC-001, the API lost its database) transient."""
    code = response.status_code
    problem = problem_code(response)
    text = f"{what}: HyperFleet API answered {code}{f' {problem}' if problem else ''}" + problem_title(response)
    if code in RETRY_STATUSES or code >= 500:
        return TransientError(text, reason="DependencyUnavailable", service="hyperfleet")
    return TerminalError(text, reason="RequestRejected", service="hyperfleet")


def json_of(response: Answer, what: str) -> Any:
    content_type = response.headers.get("Content-Type", "")
    try:
        return response.json()
    except (ValueError, RecursionError):
        # A 2xx that is not JSON is a proxy or a broken deployment, not the cluster's fault.
        raise TransientError(
            f"{what}: HyperFleet API returned a non-JSON body ({answer_text(content_type, 60) or 'no content type'})",
            reason="DependencyUnavailable",
            service="hyperfleet",
        ) from None


def redirected(response: Answer, what: str, *, base_url: str) -> TransientError:
    """A 3xx (the client follows none: the token would go where it points): HYPERFLEET_API_URL moved, or a proxy in
    front of the API redirects. A configuration error of the deployment, never the cluster's: ERROR, redelivered."""
    target = response.headers.get("Location") or ""
    try:
        shown = answer_text(shown_url(target.strip()), 200)
    except ValueError:  # a port out of range: the URL cannot be shown as one
        shown = ""
    message = (
        f"{what}: HYPERFLEET_API_URL {base_url} answered {response.status_code}, a redirect to "
        f"{shown or 'no Location'}; a configuration error: set HYPERFLEET_API_URL to the URL the API answers at; "
        "the event will be redelivered"
    )
    log.error(
        message,
        operation="hyperfleet.route",
        error_kind="configuration",
        reason="EndpointRedirected",
        http_status=response.status_code,
        service="hyperfleet",
    )
    return TransientError(message, reason="EndpointRedirected", service="hyperfleet")


def wrong_method(response: Answer, what: str, *, method: str, base_url: str, status_method: str) -> TransientError:
    """A 405: the API routes the path but not this method (the status write's, HYPERFLEET_STATUS_METHOD)."""
    allow = response.headers.get("Allow", "").strip()
    allowed = allow if ALLOW.match(allow) else "not said"
    message = (
        f"{what}: HyperFleet API at {base_url} does not allow {method} here (405; allowed: {allowed}); "
        f"a configuration error: HYPERFLEET_STATUS_METHOD={status_method} does not match this API "
        "(PUT for API >= 0.3.0, POST for API <= 0.2.1); the event will be redelivered"
    )
    log.error(
        message,
        operation="hyperfleet.route",
        error_kind="configuration",
        reason="MethodNotAllowed",
        http_status=405,
        service="hyperfleet",
    )
    return TransientError(message, reason="MethodNotAllowed", service="hyperfleet")


def problem_code(response: Answer) -> str | None:
    """The `code` of a HyperFleet problem+json answer (`HYPERFLEET-CAT-NUM`), or None."""
    try:
        problem = response.json()
    except (ValueError, RecursionError):
        return None
    return hyperfleet_code(problem.get("code") if isinstance(problem, dict) else None)


def hyperfleet_code(value: Any) -> str | None:
    """`value` when it is a HyperFleet error code (`CODE`), else None."""
    return value if isinstance(value, str) and CODE.fullmatch(value) else None


def token_refused(response: Answer) -> bool:
    """The API (or its gateway) refused our token: 401, or a 403 without an authorization code."""
    if response.status_code == 401:
        return True
    return response.status_code == 403 and not (problem_code(response) or "").startswith(AUTHZ_PREFIX)


def shown_url(url: str) -> str:
    """The URL without user:password, query or fragment, for messages (the doctor prints it)."""
    parts = urlsplit(url)
    hostname = parts.hostname or ""
    host = (f"[{hostname}]" if ":" in hostname else hostname) + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=host, query="", fragment=""))


def problem_title(response: Answer) -> str:
    """' (detail)' from a problem+json answer, scrubbed, then cut to 200 printable characters; or ''."""
    try:
        problem = response.json()
    except (ValueError, RecursionError):
        return ""
    if not isinstance(problem, dict):
        return ""
    title = answer_text(str(problem.get("detail") or problem.get("title") or ""), 200)
    return f" ({title})" if title else ""
