"""Whole-call deadlines for the HTTP clients: one deadline ends a call's connect, headers and body alike.

A socket timeout bounds one read, not a call: a server that sends its status line and then one header byte a second
never lets a read time out, and keeps the call (and the event waiting on it) going for as long as the header limits
allow. Every HTTP client of the function makes its calls inside `within(deadline)`, over connections made here
(urllib3 pools: `connection_from_url`, `HTTPSConnectionPool`, a PoolManager's `bound`; http.client: `BoundedResponse`
and `connect_timeout`), each with its deadline:
- the HyperFleet API: its call budget (hyperfleet/budget.py `call_budget_s`, its tries and waits included);
- the Pull Secret Service: the event's deadline (RETRY_DEADLINE), or its call budget without an event (rekey, the
  doctor's probe);
- GKE's GetCluster and the Kubernetes client of direct delivery: the call's timeout (`Deadline.call_timeout`, inside
  the event's deadline; the Kubernetes client's `_request_timeout`);
- the token cluster's TokenRequest: the mint's MINT_DEADLINE_S, GetCluster included;
- registry verification: each exchange's limit (REGISTRY_TIMEOUT); the doctor's Cloud Resource Manager call: 10 s.

What the deadline bounds, at the socket:
- connect: the TCP connect's timeout is cut to what remains, and none starts once it has passed (urllib3:
  ConnectTimeoutError). The socket's timeout then also bounds the whole TLS handshake: CPython's ssl module applies a
  socket's timeout to a handshake as a whole, not per read.
- the answer: each socket read under the response, whether it reads the status line, a header, a chunk size or
  the body, waits at most min(the client's read timeout, what remains), and none starts once the deadline has passed:
  the read raises TimeoutError (urllib3: ReadTimeoutError), which each client turns into its own error.
- a response read after `within` has ended (the Kubernetes client's `_preload_content=False` bodies) keeps the
  deadline it was started under; a call made outside any `within` reads as urllib3 and http.client always did.
- nested `within`s: the earlier deadline holds. The HyperFleet client's urllib3 retries (hyperfleet/budget.py) start
  no retry, and wait no longer, than `remaining()` allows.
Not bounded here: the DNS lookup (getaddrinfo has no timeout), and a request body's send beyond its socket timeout
(our bodies are a few KiB, well inside a socket's buffer).

The deadline travels in a context variable (one per thread), so one pooled connection serves calls of different
deadlines.
"""

from __future__ import annotations

import http.client
import io
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError
from urllib3.util.url import parse_url

from pullsecret.retrying import Deadline

PAST = "the call's deadline has passed"

_deadline: ContextVar[Deadline | None] = ContextVar("call_deadline", default=None)


@contextmanager
def within(deadline: Deadline | None) -> Iterator[None]:
    """Calls made inside end by `deadline` (or by an enclosing one, when that is earlier)."""
    outer = _deadline.get()
    if deadline is None or (outer is not None and outer.remaining() <= deadline.remaining()):
        deadline = outer
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """What remains of the current call's deadline, None outside any `within`."""
    deadline = _deadline.get()
    return None if deadline is None else deadline.remaining()


def connect_timeout(timeout: Any) -> Any:
    """A connection's timeout cut to what remains of the deadline; raises TimeoutError once it has passed."""
    left = remaining()
    if left is None:
        return timeout
    if left <= 0:
        raise TimeoutError(PAST)
    return min(timeout, left) if isinstance(timeout, (int, float)) else left


class _DeadlineReads(io.RawIOBase):
    """The socket's reads under a response, each cut to what remains of the deadline."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline
        self._per_read = sock.gettimeout()  # the client's read timeout, as set for this response

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = self._deadline.remaining()
        if left <= 0:
            raise TimeoutError(PAST)
        self._sock.settimeout(left if self._per_read is None else min(self._per_read, left))
        return self._raw.readinto(buffer)

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class BoundedResponse(http.client.HTTPResponse):
    """http.client's response, read (status line, headers and body) within the deadline current at its start."""

    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None):
        super().__init__(sock, debuglevel, method, url)
        deadline = _deadline.get()
        if deadline is not None:
            self.fp = io.BufferedReader(_DeadlineReads(self.fp.detach(), sock, deadline))


def _within_deadline(connection: HTTPConnection) -> None:
    """Cut the connection's connect timeout to what remains of the current deadline; refuse once it has passed."""
    try:
        connection.timeout = connect_timeout(connection.timeout)
    except TimeoutError:
        raise ConnectTimeoutError(connection, PAST) from None


class BoundedHTTPConnection(HTTPConnection):
    """urllib3's connection, connected and read within the current deadline."""

    response_class = BoundedResponse

    def _new_conn(self) -> socket.socket:
        _within_deadline(self)
        return super()._new_conn()


class BoundedHTTPSConnection(HTTPSConnection):
    """urllib3's TLS connection, connected (handshake included) and read within the current deadline."""

    response_class = BoundedResponse

    def _new_conn(self) -> socket.socket:
        _within_deadline(self)
        return super()._new_conn()


class HTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = BoundedHTTPConnection


class HTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = BoundedHTTPSConnection


POOL_CLASSES: dict[str, type[urllib3.HTTPConnectionPool]] = {
    "http": HTTPConnectionPool,
    "https": HTTPSConnectionPool,
}


def connection_from_url(url: str, **kw: Any) -> urllib3.HTTPConnectionPool:
    """urllib3's `connection_from_url`, with connections bounded by the current deadline."""
    parts = parse_url(url)
    tls = parts.scheme == "https"
    pool = POOL_CLASSES["https" if tls else "http"]
    return pool(parts.host or "", port=parts.port or (443 if tls else 80), **kw)


def bound(manager: urllib3.PoolManager) -> urllib3.PoolManager:
    """`manager`'s pools made with connections bounded by the current deadline (a SOCKS manager keeps its own)."""
    if type(manager) in (urllib3.PoolManager, urllib3.ProxyManager):
        manager.pool_classes_by_scheme = POOL_CLASSES
    return manager


def pool_manager(**kw: Any) -> urllib3.PoolManager:
    """A urllib3 PoolManager whose connections are bounded by the current deadline."""
    return bound(urllib3.PoolManager(**kw))
