"""What the Pull Secret Service's answers mean: refusals, configuration errors, failures, problem details.

The client (api.py) asks; nothing here calls.

The DDR's "Client Retry Guidance" (section 1.4) and docs/contract.md §3b's table:
- 409 CNF-001, 429, 5xx: transient (a 429 is RateLimited, with the Retry-After it asks for, section 3.5).
- 400 and other 4xx: terminal (`PullSecretServiceRejected`): the same request cannot succeed.
- 401, and 403 without an authorization code: our token refused (`token_refused`); still refused after a re-read or
  re-mint, a transient `CredentialsRefused` at error level (our own identity is never the cluster's fault).
- Configuration errors of the deployment, never the cluster's (ERROR line with `error_kind=configuration`,
  redelivered, never acknowledged, as the HyperFleet client's): a 404 without NTF-001 on a GET (`no_route`,
  `EndpointNotFound`), and any 3xx (`redirected`, `EndpointRedirected`: PULL_SECRET_SERVICE_URL moved, or a proxy
  in front of it redirects; the client follows no redirect, so its token reaches the configured host only).

Text the service wrote (a problem's `detail` or `title`, a `Location`) reaches a message only through
`logs.answer_text`: scrubbed of every registered secret and credential shape (a detail echoing our
`Authorization: Bearer ...` header), then cut.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from pullsecret.errors import AdapterError, RateLimited, TerminalError, TransientError
from pullsecret.hyperfleet.answers import RETRY_STATUSES, hyperfleet_code, shown_url
from pullsecret.logs import answer_text, log
from pullsecret.source.service.reports import SERVICE

SHOWN = "Pull Secret Service"
NOT_FOUND = "HYPERFLEET-NTF-001"
ROTATING = "HYPERFLEET-CNF-001"
ROTATION_IN_PROGRESS = "RotationInProgress"  # the reason of a 409 CNF-001 (transient)
REDIRECTED = "EndpointRedirected"  # the reason of a 3xx (a configuration error)
_AUTHZ_PREFIX = "HYPERFLEET-AUZ-"
_DETAIL_CHARS = 200
_PROBLEM_MAX = 64 * 1024  # a larger body is not parsed for a problem


class Redirected(TransientError):
    """A 3xx from the service: a configuration error (`EndpointRedirected`) carrying where it pointed (shown)."""

    def __init__(self, message: str, *, location: str) -> None:
        super().__init__(message, reason=REDIRECTED, service=SERVICE)
        self.location = location


class Reply(Protocol):
    """One answer of the service, as the client read it."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def body(self) -> bytes: ...


def failure(answer: Reply, what: str) -> AdapterError:
    """The error an unexpected answer stands for (the module's docstring)."""
    code = answer.status
    problem = code_of(answer)
    text = f"{what}: the {SHOWN} answered {code}{f' {problem}' if problem else ''}{detail(answer)}"
    if code == 409 and problem == ROTATING:
        return TransientError(text + "; a rotation is in progress", reason=ROTATION_IN_PROGRESS, service=SERVICE)
    if code == 429:  # DDR §3.5: the caller's ServiceAccount spent its budget; Retry-After says for how long
        wait_s = retry_after(answer)
        text += f"; retry after {wait_s:g} s"
        return RateLimited(text, retry_after_s=wait_s, reason="DependencyUnavailable", service=SERVICE)
    if code in RETRY_STATUSES or code >= 500 or code == 409:
        return TransientError(text, reason="DependencyUnavailable", service=SERVICE)
    return TerminalError(text, reason="PullSecretServiceRejected", service=SERVICE)


def credentials_refused(answer: Reply, what: str, *, remedy: str) -> TransientError:
    """Our token refused even after a re-read or re-mint: redelivered, said at error level."""
    code = answer.status
    message = (
        f"{what}: the {SHOWN} refused the adapter's token ({code}, "
        f"{'not authenticated' if code == 401 else 'not authorised'}); the event will be redelivered: {remedy}"
    )
    log.error(
        message,
        operation=f"{SERVICE}.auth",
        error_kind="credentials",
        reason="CredentialsRefused",
        http_status=code,
        service=SERVICE,
    )
    return TransientError(message, reason="CredentialsRefused", service=SERVICE)


def no_route(answer: Reply, what: str, *, url: str) -> TransientError:
    """A 404 without NTF-001: PULL_SECRET_SERVICE_URL reaches no route of the service."""
    message = (
        f"{what}: PULL_SECRET_SERVICE_URL {url} reaches no Pull Secret Service route (404, "
        f"{code_of(answer) or 'no HyperFleet error code'}); a configuration error: fix PULL_SECRET_SERVICE_URL; "
        "the event will be redelivered"
    )
    _alert(message, reason="EndpointNotFound", status=404, operation="route")
    return TransientError(message, reason="EndpointNotFound", service=SERVICE)


def is_redirect(answer: Reply) -> bool:
    return 300 <= answer.status < 400


def redirected(answer: Reply, what: str, *, url: str) -> Redirected:
    """A 3xx: the service is not (or no longer) at PULL_SECRET_SERVICE_URL; the redirect is not followed."""
    target = location(answer)
    message = (
        f"{what}: PULL_SECRET_SERVICE_URL {url} answered {answer.status}, a redirect to {target}; a configuration "
        "error: set PULL_SECRET_SERVICE_URL to the URL the service answers at (a redirect is never followed: the "
        "adapter's token goes to the configured host only); the event will be redelivered"
    )
    _alert(message, reason=REDIRECTED, status=answer.status, operation="route")
    return Redirected(message, location=target)


def location(answer: Reply) -> str:
    """Where a redirect points, without user, password, query or fragment, scrubbed and bounded."""
    target = answer.headers.get("Location") or ""
    try:
        shown = shown_url(target.strip())
    except ValueError:  # a port out of range: the URL cannot be shown as one
        shown = ""
    return answer_text(shown, _DETAIL_CHARS) or "no Location"


def _alert(message: str, *, reason: str, status: int, operation: str) -> None:
    """The ERROR line of a configuration error (the event is redelivered: someone must fix the deployment)."""
    log.error(
        message,
        operation=f"{SERVICE}.{operation}",
        error_kind="configuration",
        reason=reason,
        http_status=status,
        service=SERVICE,
    )


def retry_after(answer: Reply) -> float:
    """A 429's wait: its Retry-After in seconds, else the problem's `retry_after_seconds` (§3.5 sends both), else the
    DDR's example, 60 s; between 1 s and an hour."""
    header = (answer.headers.get("Retry-After") or "").strip()
    extension = problem_of(answer).get("retry_after_seconds")
    if header.isdigit():
        seconds = float(header)
    elif isinstance(extension, int) and not isinstance(extension, bool):
        seconds = float(extension)
    else:
        seconds = 60.0
    return min(max(seconds, 1.0), 3600.0)


def problem_of(answer: Reply) -> dict[str, Any]:
    """The body as a JSON object (a problem, or a created rotation), {} when it is none or too large."""
    if len(answer.body) > _PROBLEM_MAX:
        return {}
    try:
        problem = json.loads(answer.body)
    except (ValueError, RecursionError):
        return {}
    return problem if isinstance(problem, dict) else {}


def code_of(answer: Reply) -> str | None:
    """The problem's HyperFleet `code`, when it has a code's shape (`HYPERFLEET-CAT-NUM`), else None."""
    return hyperfleet_code(problem_of(answer).get("code"))


def detail(answer: Reply) -> str:
    """' (detail)': the problem's detail (or title) scrubbed, then cut to 200 printable characters; or ''."""
    problem = problem_of(answer)
    text = problem.get("detail") or problem.get("title") or ""
    if not isinstance(text, str):
        return ""
    shown = answer_text(text, _DETAIL_CHARS)
    return f" ({shown})" if shown else ""


def token_refused(answer: Reply) -> bool:
    """The service refused our token: 401, or a 403 without an authorization code."""
    if answer.status == 401:
        return True
    return answer.status == 403 and not (code_of(answer) or "").startswith(_AUTHZ_PREFIX)
