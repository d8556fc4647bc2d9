"""A small threaded HTTP/1.1 server base shared by the HTTP emulators (metadata, HyperFleet).

An emulator subclasses `HTTPEmulator` and implements ``handle(request) -> Reply``.  The base owns the
socket server (keep-alive, one thread per connection, sized for ~100 concurrent clients), reads
request bodies, writes replies and turns the transport-level faults of the `FaultBook` into real
socket behaviour: ``"reset"`` closes the connection with a TCP RST and no answer, ``"timeout"``
holds the connection open without answering (30 s, or until the client or the emulator goes away).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

HANG_SECONDS = 30.0
_IDLE_KEEPALIVE_S = 120.0  # idle keep-alive connections are dropped after this, as real frontends do


@dataclass
class Request:
    """One HTTP request as the emulator sees it."""

    method: str
    target: str  # path plus query string, as sent
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    host: str

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def json(self) -> Any:
        """The body parsed as JSON; raises ValueError when it is not JSON."""
        return json.loads(self.body.decode("utf-8"))


@dataclass
class Reply:
    """One HTTP answer; ``fault`` set to "reset"/"timeout" sends no answer at all, "drip" sends it slowly."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    fault: str | None = None

    @classmethod
    def json(cls, status: int, payload: Any, content_type: str = "application/json") -> Reply:
        return cls(status, json.dumps(payload).encode("utf-8"), {"Content-Type": content_type})

    @classmethod
    def text(cls, status: int, text: str, content_type: str = "text/plain; charset=utf-8") -> Reply:
        return cls(status, text.encode("utf-8"), {"Content-Type": content_type})

    @classmethod
    def drop(cls, fault: str) -> Reply:
        return cls(status=0, fault=fault)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # a burst of ~100 new connections must not overflow the backlog

    def __init__(self, addr: tuple[str, int], emulator: HTTPEmulator) -> None:
        self.emulator = emulator
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        self.stopping = threading.Event()
        super().__init__(addr, _Handler)


class _Handler(BaseHTTPRequestHandler):
    # Real API frontends send small answers at once; with Nagle, a client's delayed ACK adds ~40 ms.
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"
    timeout = _IDLE_KEEPALIVE_S
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.conn_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.conn_lock:
                self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the emulator's state, not its access log."""

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            target=self.path,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            host=self.headers.get("Host", ""),
        )
        emulator = self.server.emulator
        try:
            reply = emulator.handle(request)
        except Exception as exc:  # noqa: BLE001 - an emulator bug must answer 500, not kill the thread
            reply = emulator.internal_error(exc)
        if reply.fault == "reset":
            self._reset()
            return
        if reply.fault == "timeout":
            self._hang()
            return
        self.send_response(reply.status)
        headers = dict(reply.headers)
        for name, value in headers.items():
            self.send_header(name, value)
        if reply.status not in (204, 304) and "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if reply.status not in (204, 304) and self.command != "HEAD":
            if reply.fault == "drip":
                self._drip(reply.body)
            else:
                self.wfile.write(reply.body)
        self.wfile.flush()

    def _drip(self, body: bytes) -> None:
        """A slow server: the body one byte every half second, until sent, the client leaves or the stack stops."""
        self.close_connection = True
        for i in range(len(body)):
            if self.server.stopping.is_set():
                return
            try:
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.5)

    def _reset(self) -> None:
        # SO_LINGER 0 makes close() send a RST, which clients see as "connection reset by peer".
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def _hang(self) -> None:
        self.close_connection = True
        deadline = time.monotonic() + self.server.emulator.hang_seconds
        conn = self.connection
        while time.monotonic() < deadline and not self.server.stopping.is_set():
            readable, _, _ = select.select([conn], [], [], 0.2)
            if readable:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        return  # the client gave up
                except OSError:
                    return
                time.sleep(0.2)  # pipelined bytes: keep hanging without busy-looping

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


class HTTPEmulator:
    """Base of an HTTP emulator: start/stop/address; subclasses implement `handle`."""

    service: ClassVar[str] = "http"
    hang_seconds: float = HANG_SECONDS

    def __init__(self) -> None:
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def handle(self, request: Request) -> Reply:
        raise NotImplementedError

    def internal_error(self, exc: Exception) -> Reply:
        return Reply.text(500, f"emulator error: {type(exc).__name__}: {exc}")

    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on host:port (0 = a free port) and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError(f"{self.service} emulator already started")
        self._server = _Server((host, port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"{self.service}-emulator",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and cut every open connection (clients see the service go away)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.stopping.set()
        server.shutdown()
        server.server_close()
        with server.conn_lock:
            conns = list(server.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def address(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self.service} emulator not started")
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"
