"""One HTTPS exchange with a registry at a vetted address, inside a wall-clock limit that covers the body.

The connection goes to `Endpoint.address` (resolved and vetted by `registry_egress`), with the TLS server
name and certificate check for `Endpoint.hostname` and `Host` naming it. The limit is the exchange's whole-call
deadline (pullsecret.outbound.deadline_io: connect, handshake, headers and body), so a registry that answers one byte a
second holds a thread for the limit, not for as long as it likes. Answers are asked for uncompressed
(`Accept-Encoding: identity`) and read up to `max_body` bytes; no redirect is followed (nothing here does).
No proxy, .netrc or CA from the environment: only REGISTRY_CA_BUNDLE or the certifi bundle is trusted.
Every failure is an `ExchangeFailed` whose `kind` is a fixed word; nothing of the exchange is in its text.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass

import certifi

from pullsecret.outbound import deadline_io
from pullsecret.registry.egress import Endpoint
from pullsecret.retrying import Deadline

MAX_BODY = 64 * 1024  # token answers are a few KiB; a larger one is not read further


class ExchangeFailed(Exception):
    """The exchange gave no usable answer; `kind` is timeout, tls, connection or protocol."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True)
class Answer:
    """A registry's answer: status, every WWW-Authenticate value, and at most `max_body` + 1 bytes of body."""

    status: int
    challenges: tuple[str, ...]
    body: bytes


class _PinnedConnection(http.client.HTTPSConnection):
    """An HTTPS connection to the vetted address, TLS for the name, within the current deadline (deadline_io)."""

    response_class = deadline_io.BoundedResponse

    def __init__(self, endpoint: Endpoint, context: ssl.SSLContext, timeout: float) -> None:
        super().__init__(endpoint.hostname, endpoint.port, timeout=timeout, context=context)
        self._address = endpoint.address
        self._tls_context = context

    def connect(self) -> None:
        # The socket's timeout, cut to the deadline, also bounds the whole handshake (deadline_io).
        raw = socket.create_connection((self._address, self.port), deadline_io.connect_timeout(self.timeout))
        try:
            self.sock = self._tls_context.wrap_socket(raw, server_hostname=self.host)
        except BaseException:
            raw.close()
            raise


class PinnedHTTPS:
    """HTTPS exchanges to vetted endpoints with the registry CA; thread-safe (one connection per exchange)."""

    def __init__(self, *, ca_bundle: str | None, user_agent: str, max_body: int = MAX_BODY) -> None:
        self._context = ssl.create_default_context(cafile=ca_bundle or certifi.where())
        self._user_agent = user_agent
        self._max_body = max_body

    def exchange(
        self,
        endpoint: Endpoint,
        method: str,
        target: str,
        *,
        limit_s: float,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> Answer:
        """Send one request and read the answer within `limit_s` seconds in all; raises ExchangeFailed."""
        if limit_s <= 0:
            raise ExchangeFailed("timeout")
        conn = _PinnedConnection(endpoint, self._context, timeout=limit_s)
        try:
            with deadline_io.within(Deadline(limit_s)):
                return self._exchange(conn, method, target, headers=headers, body=body)
        except ExchangeFailed:
            raise
        except TimeoutError:
            raise ExchangeFailed("timeout") from None
        except (ssl.SSLError, ssl.CertificateError):
            raise ExchangeFailed("tls") from None
        except (http.client.HTTPException, ValueError):
            raise ExchangeFailed("protocol") from None
        except OSError:
            raise ExchangeFailed("connection") from None
        finally:
            conn.close()

    def _exchange(
        self,
        conn: _PinnedConnection,
        method: str,
        target: str,
        *,
        headers: dict[str, str] | None,
        body: bytes | None,
    ) -> Answer:
        conn.request(
            method,
            target,
            body=body,
            headers={
                "User-Agent": self._user_agent,
                "Accept-Encoding": "identity",
                "Connection": "close",
                **(headers or {}),
            },
        )
        response = conn.getresponse()
        data = self._read(response)
        return Answer(response.status, tuple(response.msg.get_all("WWW-Authenticate") or ()), data)

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        """At most max_body + 1 bytes (one more says "too large"); a short body raises IncompleteRead."""
        chunks: list[bytes] = []
        size = 0
        while size <= self._max_body:
            piece = response.read(min(16 * 1024, self._max_body + 1 - size))
            if not piece:
                break
            chunks.append(piece)
            size += len(piece)
        return b"".join(chunks)
