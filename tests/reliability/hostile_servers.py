"""Slow servers for the hostile-server suite: real sockets on loopback that answer too slowly or not at all.

- `trickle`: reads the request, sends a status line, then one header byte every `interval` seconds and never ends the
  headers: no socket read of the client ever waits longer than `interval`, so only a whole-call deadline ends it.
- `trickle-body`: answers a complete status line and headers (200, a JSON body of 100,000 bytes), then the body one
  byte every `interval` seconds.
- `silent`: accepts, reads the request and never answers.
- `mute`: accepts and never reads or sends a byte: with `tls`, the client's handshake gets no answer.
- `answer`: answers every request with one fixed JSON body (a GetCluster that points at a slow server).

With `tls` (emulators.tlsutil material for 127.0.0.1) the server speaks HTTPS, its handshake done normally. Each
server's threads are named `hostile-server`, so a test can tell them from a thread the client left running; `stop`
closes every socket and joins them.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

from emulators.tlsutil import TLSMaterial, make_tls_material, server_context

THREAD_NAME = "hostile-server"
TRICKLE_INTERVAL_S = 0.25  # shorter than every read timeout the suite gives a client


class SlowServer:
    """One listening socket on 127.0.0.1 and a thread per connection, misbehaving as `behaviour` says."""

    def __init__(
        self,
        behaviour: str,
        *,
        tls: TLSMaterial | None = None,
        interval: float = TRICKLE_INTERVAL_S,
        body: Any = None,
    ) -> None:
        assert behaviour in ("trickle", "trickle-body", "silent", "mute", "answer")
        self.behaviour = behaviour
        self.tls = tls
        self.interval = interval
        self.body = json.dumps(body).encode()
        self.accepted = 0
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._context = server_context(tls) if tls is not None else None
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}"

    def start(self) -> SlowServer:
        self._spawn(self._accept_loop)
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for thread in threads:
            thread.join(timeout=5)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=THREAD_NAME, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        self._listener.settimeout(0.05)  # a blocked accept() does not notice the socket closed: poll for `stop`
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                self.accepted += 1
                self._sockets.append(conn)
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.behaviour == "mute":
                self._stop.wait()
                return
            if self._context is not None:
                conn.settimeout(10)
                conn = self._context.wrap_socket(conn, server_side=True)
                with self._lock:
                    self._sockets.append(conn)
            _read_request(conn)
            if self.behaviour == "answer":
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\n\r\n"
                while True:  # keep-alive: every request on this connection gets the same answer
                    conn.sendall(head.encode() + self.body)
                    _read_request(conn)
            elif self.behaviour.startswith("trickle"):
                if self.behaviour == "trickle":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                else:
                    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
                    conn.sendall(head.encode() + b"[")
                while not self._stop.wait(self.interval):
                    conn.sendall(b" ")
            else:
                self._stop.wait()


def _read_request(conn: socket.socket) -> None:
    """Read up to the end of the request's headers (the bodies the clients send are read as they come, or not)."""
    data = b""
    conn.settimeout(30)
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("closed")
        data += chunk


@contextlib.contextmanager
def slow_server(behaviour: str, *, tls: TLSMaterial | None = None, body: Any = None) -> Iterator[SlowServer]:
    server = SlowServer(behaviour, tls=tls, body=body).start()
    try:
        yield server
    finally:
        server.stop()


def loopback_tls() -> TLSMaterial:
    """A fresh CA and a server certificate for 127.0.0.1."""
    return make_tls_material()


def client_threads() -> set[threading.Thread]:
    """The running threads other than the slow servers' own."""
    return {thread for thread in threading.enumerate() if thread.name != THREAD_NAME}
