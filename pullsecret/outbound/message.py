"""One outgoing JSON request, built the same way by every HTTP client of the function: its headers, body, timeouts.

The four clients (the HyperFleet API, the Pull Secret Service, the token cluster's TokenRequest, GKE's GetCluster)
each own their pool, their retries and what their answers mean; what they send is built here, once:
`Accept: application/json`, the adapter's `User-Agent`, `Authorization: <scheme> <token>` when there is a token,
the event's W3C `traceparent` (same trace id, a new span id per call) when the client propagates the trace, and a
JSON body (`allow_nan=False`: a NaN or an infinity is an error here, never text a server reads) with its
`Content-Type`. A `Request`'s `repr` never shows the Authorization header or the body.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import urllib3

from pullsecret.logs import TraceContext
from pullsecret.logs import current as current_log_context
from pullsecret.retrying import Deadline

USER_AGENT = "hyperfleet-pullsecret-adapter"
_LEAST_TIMEOUT_S = 0.001  # urllib3 refuses a timeout of 0


@dataclass(frozen=True)
class Request:
    """What one call sends besides its method and path; `repr` leaves out the credential and the body."""

    headers: dict[str, str] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)


def request(*, token: str | None = None, scheme: str = "Bearer", json_body: Any = None, trace: bool = True) -> Request:
    """The headers and body of one call (the module's docstring says what each holds)."""
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = f"{scheme} {token}"
    context = current_log_context().trace if trace else None
    if context is not None:
        headers["traceparent"] = traceparent(context)
    body = None
    if json_body is not None:
        body = json.dumps(json_body, allow_nan=False).encode()
        headers["Content-Type"] = "application/json"
    return Request(headers, body)


def traceparent(trace: TraceContext) -> str:
    """W3C traceparent for an outgoing call: the event's trace id, a new span id, the sampled flag."""
    return f"00-{trace.trace_id}-{secrets.token_hex(8)}-{'01' if trace.sampled else '00'}"


def timeout(*, connect: float, read: float, deadline: Deadline | None = None) -> urllib3.Timeout:
    """Connect and read timeouts, each cut to what remains of `deadline` when there is one (callers check the
    deadline before they send; one spent in between gives urllib3's least timeout, so the call fails at once).
    A read timeout bounds one socket read; what bounds the whole call is `deadline_io.within`."""
    if deadline is not None:
        remaining = max(deadline.remaining(), _LEAST_TIMEOUT_S)
        connect, read = min(connect, remaining), min(read, remaining)
    return urllib3.Timeout(connect=connect, read=read)
