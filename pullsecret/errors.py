"""The error taxonomy, which is also the retry policy.

`TransientError`: raise out of the handler so Pub/Sub redelivers (after in-process retries ran out).
`TerminalError`: report the failure in the status, log at error level, acknowledge the event.

Messages are written for a person and never carry secret material: they are built from resource
names, field names and rules, not from payloads or from client exception texts that may echo them.
"""

from __future__ import annotations

import errno
import json
import re
import socket
import ssl
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from pullsecret.logs import answer_text

T = TypeVar("T")


class AdapterError(Exception):
    """Base of the adapter's errors; `reason` is a CamelCase status reason, `service` the system at fault."""

    default_reason = "Error"

    def __init__(self, message: str, *, reason: str | None = None, service: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.service = service

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reason={self.reason!r}, message={self.message!r})"


class TransientError(AdapterError):
    """A failure that a later attempt may not meet: the event is redelivered."""

    default_reason = "TransientFailure"


class RateLimited(TransientError):
    """A service's rate limit refused the call (429): `retry_after_s` is how long it asks the caller to wait. An
    event is redelivered all the same (Pub/Sub's backoff); a long-running caller (`rekey`) waits it out."""

    def __init__(
        self, message: str, *, retry_after_s: float, reason: str | None = None, service: str | None = None
    ) -> None:
        super().__init__(message, reason=reason, service=service)
        self.retry_after_s = retry_after_s


class TerminalError(AdapterError):
    """A failure no retry can fix (bad input, ownership, permissions): reported, then acknowledged."""

    default_reason = "TerminalFailure"


class OwnershipConflict(TerminalError):
    """A resource the adapter would write or delete is not labelled as its own (a Secret Manager secret, a
    Kubernetes Secret): it is left alone, and the reason says so."""

    default_reason = "OwnershipConflict"


class ConfigError(ValueError):
    """A configuration variable is missing or malformed; the message names the variable."""

    @property
    def variable(self) -> str | None:
        """The variable at fault: every message of pullsecret.settings.common starts with its name."""
        first = str(self).split(" ", 1)[0]
        return first if re.fullmatch(r"[A-Z][A-Z0-9_]*", first) else None


# --- mapping client exceptions onto the taxonomy ------------------------------------------------

_TRANSIENT_HTTP = frozenset({408, 425, 429, 500, 502, 503, 504})
_TRANSIENT_GRPC = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "RESOURCE_EXHAUSTED", "ABORTED"})


def looks_like_io(exc: BaseException) -> bool:
    """True for network-level failures (resets, timeouts, TLS, DNS) from any client library."""
    if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout, ssl.SSLError)):
        return True
    if isinstance(exc, OSError) and exc.errno in (errno.ECONNRESET, errno.ECONNREFUSED, errno.EPIPE):
        return True
    module = type(exc).__module__
    name = type(exc).__name__
    if module.startswith(("urllib3", "requests")) and name in {
        "ConnectionError",
        "ProtocolError",
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "NewConnectionError",
        "MaxRetryError",
        "Timeout",
        "ReadTimeout",
        "ConnectTimeout",
        "ChunkedEncodingError",
        "SSLError",
        "RemoteDisconnected",
    }:
        return True
    return module.startswith("http.client") and name in {
        "RemoteDisconnected",
        "IncompleteRead",
        "BadStatusLine",
    }


def grpc_code_name(exc: BaseException) -> str | None:
    """The gRPC status code name of a google-api-core exception, if it has one."""
    code = getattr(exc, "grpc_status_code", None)
    if code is not None:
        return str(getattr(code, "name", code))
    return None


def is_retryable_google(exc: BaseException) -> bool:
    """Retry predicate for google-api-core calls (Secret Manager, GKE)."""
    name = grpc_code_name(exc)
    if name is not None:
        return name in _TRANSIENT_GRPC
    code = getattr(exc, "code", None)
    if isinstance(code, int) and type(exc).__module__.startswith("google.api_core"):
        return code in _TRANSIENT_HTTP
    return looks_like_io(exc)


def kube_status(exc: BaseException) -> tuple[int, str] | None:
    """(HTTP status, Status reason) of a kubernetes ApiException, else None."""
    status = getattr(exc, "status", None)
    # kubernetes>=35 raises ApiException subclasses (NotFoundException, ...), all from kubernetes.client.
    if not type(exc).__module__.startswith("kubernetes.") or not isinstance(status, int):
        return None
    return status, kube_reason(exc)


def _status_body(exc: Any) -> dict[str, Any]:
    """The Kubernetes `Status` object in an ApiException's body, or {} when there is none."""
    body = getattr(exc, "body", None)
    try:
        parsed = json.loads(body) if body else {}
    except (TypeError, ValueError, RecursionError):
        parsed = {}
    return parsed if isinstance(parsed, dict) else {}


def kube_reason(exc: Any) -> str:
    """The `reason` of a Kubernetes Status body (`NotFound`, `Invalid`, ...), else the HTTP reason phrase; bounded."""
    return answer_text(str(_status_body(exc).get("reason") or getattr(exc, "reason", "") or ""), 80)


def kube_message(exc: Any) -> str:
    """The `message` of a Kubernetes Status body (the API server redacts secret contents in it), scrubbed of our own
    credentials too, then cut to 300 printable characters."""
    return answer_text(str(_status_body(exc).get("message") or ""), 300)


def is_retryable_kube(exc: BaseException) -> bool:
    """Retry predicate for Kubernetes API calls."""
    status = kube_status(exc)
    if status is not None:
        return status[0] in _TRANSIENT_HTTP or status[0] == 0
    return looks_like_io(exc)


def from_google(exc: BaseException, *, service: str, what: str) -> AdapterError:
    """Map a google-api-core exception from `what` (an operation on a named resource) onto the taxonomy."""
    name = grpc_code_name(exc) or type(exc).__name__
    if is_retryable_google(exc):
        return TransientError(f"{what}: {service} answered {name}", reason="DependencyUnavailable", service=service)
    if name in ("UNAUTHENTICATED", "Unauthorized"):
        # Our token was refused (revoked or expired early): the handler drops it; a redelivery uses a fresh one.
        return TransientError(
            f"{what}: {service} refused the runtime identity's token ({name})",
            reason="Unauthenticated",
            service=service,
        )
    if name in ("PERMISSION_DENIED", "Forbidden"):
        return TerminalError(
            f"{what}: {service} denied the runtime identity ({name}); grant it the documented role",
            reason="PermissionDenied",
            service=service,
        )
    return TerminalError(f"{what}: {service} rejected the request ({name})", reason="RequestRejected", service=service)


def mapped_pages(items: Iterable[T], *, service: str, what: str) -> Iterator[T]:
    """Iterate a google-api-core pager, mapping a failure to fetch a later page onto the taxonomy.

    A pager fetches page 2 and on while it is iterated, outside the call that returned it (and outside
    that call's error mapping): without this, a 503 on page 2 would surface as an unexpected exception.
    """
    iterator = iter(items)
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        except AdapterError:
            raise
        except Exception as exc:
            if (
                grpc_code_name(exc) is None
                and not type(exc).__module__.startswith("google.")
                and not looks_like_io(exc)
            ):
                raise  # not a service's answer: a bug, reported as one
            raise from_google(exc, service=service, what=f"{what} (a later page)") from None
        yield item


def from_kube(exc: BaseException, *, what: str) -> AdapterError:
    """Map a Kubernetes client exception onto the taxonomy."""
    status = kube_status(exc)
    if status is None:
        if looks_like_io(exc):
            return TransientError(f"{what}: Kubernetes API unreachable", reason="Unreachable", service="kubernetes")
        return TransientError(
            f"{what}: unexpected {type(exc).__name__}", reason="UnexpectedError", service="kubernetes"
        )
    code, reason = status
    if code == 0:  # no HTTP answer at all: connection or TLS failure (the client reports status 0)
        return TransientError(f"{what}: Kubernetes API unreachable", reason="Unreachable", service="kubernetes")
    if code in _TRANSIENT_HTTP:
        return TransientError(
            f"{what}: Kubernetes API answered {code} {reason}",
            reason="DependencyUnavailable",
            service="kubernetes",
        )
    if code == 401:
        return TransientError(
            f"{what}: Kubernetes API refused the runtime identity's token (401)",
            reason="Unauthenticated",
            service="kubernetes",
        )
    if code == 403:
        return TerminalError(
            f"{what}: Kubernetes API denied the runtime identity ({code} {reason}); check its RBAC",
            reason="PermissionDenied",
            service="kubernetes",
        )
    return TerminalError(
        f"{what}: Kubernetes API rejected the request ({code} {reason}): {kube_message(exc)}",
        reason="RequestRejected",
        service="kubernetes",
    )
