"""HTTP and TLS serving of the emulated API server."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import struct
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from emulators.kubernetes.status import ApiError
from emulators.tlsutil import TLSMaterial, make_tls_material, server_context

MAX_REQUEST_BODY = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
HANG_SECONDS = 30.0


class Hangup(Exception):
    """Answer by dropping (``reset``) or stalling (``timeout``) the connection."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class HttpsServing:
    """HTTPS serving: TLS on each connection's own thread, keep-alive, hang-ups on demand."""

    _server: ThreadingHTTPServer | None
    _thread: threading.Thread | None
    _tls: TLSMaterial | None
    _stopping: threading.Event
    _connections: set[socket.socket]
    _conn_lock: threading.Lock

    def serve(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError

    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve HTTPS on host:port (0 = a free port) with a freshly generated CA."""
        self._tls = make_tls_material()
        ctx = server_context(self._tls)
        emulator = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            request_queue_size = 256

            def finish_request(self, request: Any, client_address: Any) -> None:
                # The TLS handshake runs here, on the connection's own thread, so one slow
                # or hostile client cannot stall the accept loop.
                request.settimeout(10.0)
                try:
                    conn = ctx.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError):
                    request.close()
                    return
                conn.settimeout(None)
                with emulator._conn_lock:
                    emulator._connections.add(conn)
                try:
                    _Handler(conn, client_address, self, emulator)
                except (OSError, ssl.SSLError):
                    pass
                finally:
                    with emulator._conn_lock:
                        emulator._connections.discard(conn)
                    with contextlib.suppress(OSError):
                        conn.close()

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # client disconnects are routine here, not worth a traceback

        self._stopping.clear()
        self._server = Server((host, port), _Handler)  # type: ignore[arg-type]
        self._thread = threading.Thread(target=self._server.serve_forever, name="k8s-emulator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def address(self) -> str:
        if self._server is None:
            raise RuntimeError("emulator not started")
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def ca_pem(self) -> bytes:
        if self._tls is None:
            raise RuntimeError("emulator not started")
        return self._tls.ca_pem


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    # Real API frontends send small answers at once; with Nagle, a client's delayed ACK adds ~40 ms.
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-emulator"
    sys_version = ""
    timeout = 300  # idle keep-alive connections are closed after this long

    def __init__(self, request: Any, client_address: Any, server: Any, emulator: HttpsServing) -> None:
        self.emulator_ref = emulator
        super().__init__(request, client_address, server)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    break
                total += size
                if total > MAX_REQUEST_BODY:
                    raise ApiError(413, "RequestEntityTooLarge", "the request body is too large", {})
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge", "the request body is too large", {})
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = self._read_body()
        except ApiError as exc:
            self._send(exc.code, exc.status(), exc.headers)
            return
        try:
            code, payload, extra = self.emulator_ref.serve(self.command, split.path, split.query, headers, body)
        except Hangup as hang:
            self._hang_up(hang.how)
            return
        self._send(code, payload, extra)

    def _send(self, code: int, payload: Any, extra: dict[str, str]) -> None:
        if isinstance(payload, bytes):
            data, content_type = payload, "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(payload, separators=(",", ":")).encode() + b"\n", "application/json"
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _hang_up(self, how: str) -> None:
        self.close_connection = True
        conn = self.connection
        if how == "timeout":
            deadline = HANG_SECONDS
            while deadline > 0 and not self.emulator_ref._stopping.is_set():
                # A readable socket while we owe an answer means the client gave up (EOF).
                readable, _, _ = select.select([conn], [], [], 0.25)
                if readable:
                    break
                deadline -= 0.25
        with contextlib.suppress(OSError):
            # SO_LINGER 0: close with RST, as a crashed or reset peer would.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            conn.close()

    do_GET = _serve
    do_POST = _serve
    do_PUT = _serve
    do_PATCH = _serve
    do_DELETE = _serve
    do_HEAD = _serve
    do_OPTIONS = _serve
