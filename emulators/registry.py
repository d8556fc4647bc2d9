"""Container registries and their token service: the Docker Registry HTTP API v2 authentication handshake.

Each role is its own HTTPS server (its own `127.0.0.1:PORT`, a distinct registry host to a client), all
signed by one CA (`ca_pem`; the stack writes it to the file `REGISTRY_CA_BUNDLE` names):

    token      GET /v2/ -> 401 `Bearer realm="https://<sso>/auth",service="registry.emulator"`;
               200 with a token the sso issued for that service
    sso        the token service on a second host (like registry.redhat.io and sso.redhat.com):
               GET /auth with HTTP Basic, POST /auth with an OAuth2 refresh_token grant
    basic      GET /v2/ -> 401 `Basic realm="Registry Realm"`; 200 with a known user:password
    anonymous  GET /v2/ -> 200 to anyone
    redirect   like basic, but a request carrying a credential gets 307 to the anonymous host
    foreign    like token, but its realm names the sso as `localhost:<port>`: another domain
    pivot      like token, but its realm names the internal host below (same address, another port)
    dead       an address that refuses connections (a bound socket that never listens)
    internal   an HTTPS service of the platform's own network (loopback, like a metadata server or a
               control plane): the stack's REGISTRY_ALLOWED_HOSTS lists every host above but this one,
               so a pull secret naming it must never reach it (`connections` counts TCP accepts per role)

Faults and latency come from the stack's FaultBook: service `registry`, method `<role>.ping` or `sso.token`
(e.g. `{"service": "registry", "method": "sso.token", "code": "503", "count": 1}`; `"timeout"` holds
the connection open, a slow registry; `"drip"` sends the answer's body one byte every half second).
Every request is counted there; `credentialed` counts, per role,
the requests that carried an Authorization header (a credential sent somewhere).

Accounts (user:password, accepted by the basic/redirect hosts and the sso) are the defaults plus what
`add_account` adds and `remove_account` removes: the Pull Secret Service emulator adds each credential it mints
and removes each it deletes, so that a revoked credential is refused here.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import secrets
import socket
import ssl
import threading
from typing import Any, ClassVar
from urllib.parse import parse_qs

from emulators.faults import FaultBook, ServiceControl
from emulators.httpbase import HTTPEmulator, Reply, Request, _Server
from emulators.tlsutil import TLSMaterial, make_tls_material, server_context

SERVICE = "registry.emulator"
DEFAULT_USER = "registry-robot"
DEFAULT_PASSWORD = "Regi5try-Robot-Passw0rd"  # a fake credential whose leaks the tests look for
DEFAULT_REFRESH_TOKEN = "emu-refresh-0123456789abcdef"  # an OAuth2 identity token the sso accepts
ROLES = ("token", "sso", "basic", "anonymous", "redirect", "foreign", "pivot", "internal")

# The API version check: https://distribution.github.io/distribution/spec/api/#api-version-check
# (200 when the client may proceed, 401 with WWW-Authenticate otherwise; every answer carries this header).
_VERSION_HEADER = {"Docker-Distribution-API-Version": "registry/2.0"}


class _TLSServer(_Server):
    """The shared HTTP server, with the TLS handshake on each connection's own thread (as kubernetes.py)."""

    context: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        emulator = self.emulator
        if isinstance(emulator, _Role):
            emulator.owner.note_connection(emulator.role)
        request.settimeout(10.0)
        try:
            conn = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            request.close()
            return
        conn.settimeout(None)
        try:
            self.RequestHandlerClass(conn, client_address, self)  # type: ignore[arg-type]
        except (OSError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # client disconnects are routine


class _Role(HTTPEmulator):
    """One host of the registry emulator; `handle` delegates to the owner with the role bound."""

    service: ClassVar[str] = "registry"

    def __init__(self, owner: RegistryEmulator, role: str) -> None:
        super().__init__()
        self.owner = owner
        self.role = role

    def handle(self, request: Request) -> Reply:
        return self.owner.handle_role(self.role, request)

    def start_tls(self, context: ssl.SSLContext, host: str = "127.0.0.1") -> None:
        server = _TLSServer((host, 0), self)
        server.context = context
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=f"registry-{self.role}", daemon=True
        )
        self._thread.start()


class RegistryEmulator:
    """All registry roles; accounts, refresh tokens and issued tokens are shared between them."""

    service: ClassVar[str] = "registry"

    def __init__(self, book: FaultBook) -> None:
        self.control = ServiceControl(book, self.service)
        self._lock = threading.Lock()
        self._roles = {role: _Role(self, role) for role in ROLES}
        self._tls: TLSMaterial | None = None
        self._dead: socket.socket | None = None
        self._accounts: dict[str, str] = {}
        self._refresh: dict[str, str] = {}
        self._tokens: dict[str, str] = {}  # issued token -> service
        self.credentialed: dict[str, int] = {}
        self.connections: dict[str, int] = {}
        self._in_flight = 0
        self.max_in_flight = 0  # the most requests served at once since the last reset
        self.reset()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._tls = make_tls_material()
        context = server_context(self._tls)
        for role in self._roles.values():
            role.start_tls(context)
        dead = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        self._dead = dead

    def stop(self) -> None:
        for role in self._roles.values():
            role.stop()
        if self._dead is not None:
            self._dead.close()
            self._dead = None

    def reset(self) -> None:
        with self._lock:
            self._accounts = {DEFAULT_USER: DEFAULT_PASSWORD}
            self._refresh = {DEFAULT_REFRESH_TOKEN: DEFAULT_USER}
            self._tokens = {}
            self.credentialed = dict.fromkeys(ROLES, 0)
            self.connections = dict.fromkeys(ROLES, 0)
            self.max_in_flight = self._in_flight

    @property
    def ca_pem(self) -> bytes:
        if self._tls is None:
            raise RuntimeError("registry emulator not started")
        return self._tls.ca_pem

    def hosts(self) -> dict[str, str]:
        """Each role's registry host (`127.0.0.1:PORT`), as a pull secret's `auths` key names it."""
        found = {role: server.address for role, server in self._roles.items()}
        if self._dead is not None:
            found["dead"] = f"127.0.0.1:{self._dead.getsockname()[1]}"
        return found

    def allowed_hosts(self) -> list[str]:
        """The hosts a function on this stack may verify (its REGISTRY_ALLOWED_HOSTS): all but `internal`."""
        return [host for role, host in self.hosts().items() if role != "internal"]

    def add_account(self, user: str, password: str) -> None:
        """Accept `user:password` from now on (HTTP Basic on the basic/redirect hosts and at the sso)."""
        with self._lock:
            self._accounts[user] = password

    def remove_account(self, user: str) -> None:
        """Refuse `user` from now on; a token the sso issued before stays valid (it names no user), as a bearer
        token outlives the revocation of the credential it was exchanged for until it expires."""
        with self._lock:
            self._accounts.pop(user, None)

    def note_connection(self, role: str) -> None:
        with self._lock:
            self.connections[role] = self.connections.get(role, 0) + 1

    def issued_tokens(self) -> list[str]:
        with self._lock:
            return list(self._tokens)

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "hosts": self.hosts(),
                "accounts": sorted(self._accounts),
                "tokens_issued": len(self._tokens),
                "credentialed": dict(self.credentialed),
                "connections": dict(self.connections),
                "max_in_flight": self.max_in_flight,
            }

    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Admin routes relative to /registry: state, accounts/{user} (PUT {"password"}, DELETE), reset."""
        route = "/" + path.strip("/")
        if method == "GET" and route == "/state":
            return 200, self.state()
        if route.startswith("/accounts/") and len(route) > len("/accounts/"):
            user = route[len("/accounts/") :]
            if method == "PUT":
                password = (body or {}).get("password") if isinstance(body, dict) else None
                if not isinstance(password, str) or not password:
                    return 400, {"error": 'body must be {"password": "..."}'}
                self.add_account(user, password)
                return 200, {"account": user}
            if method == "DELETE":
                self.remove_account(user)
                return 200, {"deleted": user}
        if method == "POST" and route == "/reset":
            self.reset()
            return 200, self.state()
        return 404, {"error": f"no admin route {method} {route}"}

    # -- the protocol ----------------------------------------------------------------------
    def handle_role(self, role: str, request: Request) -> Reply:
        authorization = request.header("Authorization")
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if authorization:
                self.credentialed[role] += 1
        try:
            return self._serve(role, request, authorization)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _serve(self, role: str, request: Request, authorization: str | None) -> Reply:
        operation = "token" if role == "sso" else "ping"
        code = self.control.enter(f"{role}.{operation}")
        if code is not None:
            if code in ("reset", "timeout"):
                return Reply.drop(code)
            if code != "drip":
                return _error(int(code), "UNAVAILABLE", "service unavailable")
        reply = self._answer(role, request, authorization)
        if code == "drip":
            reply.fault = "drip"
        return reply

    def _answer(self, role: str, request: Request, authorization: str | None) -> Reply:
        if role == "sso":
            return self._token(request)
        if request.path != "/v2/" or request.method not in ("GET", "HEAD"):
            return _error(404, "NOT_FOUND", "the emulator serves only the API version check")
        if role in ("anonymous", "internal"):
            return _ok()
        if role in ("basic", "redirect"):
            return self._basic(role, authorization)
        return self._bearer(role, authorization)

    def _basic(self, role: str, authorization: str | None) -> Reply:
        # distribution's htpasswd access controller: 401 with `Basic realm="<realm>"` unless the user and
        # password match (registry/auth/htpasswd/access.go).
        if authorization is not None and self._basic_user(authorization) is not None:
            if role == "redirect":
                location = f"https://{self._roles['anonymous'].address}/v2/"
                return Reply(307, b"", {"Location": location, **_VERSION_HEADER})
            return _ok()
        return _challenge('Basic realm="Registry Realm"')

    def _bearer(self, role: str, authorization: str | None) -> Reply:
        # The token authentication specification: https://distribution.github.io/distribution/spec/auth/token/
        # (401 with `Bearer realm=...,service=...` until the request carries a token the realm issued).
        sso_port = self._roles["sso"].address.rsplit(":", 1)[1]
        realm_host = f"localhost:{sso_port}" if role == "foreign" else self._roles["sso"].address
        if role == "pivot":
            realm_host = self._roles["internal"].address
        challenge = f'Bearer realm="https://{realm_host}/auth",service="{SERVICE}"'
        if authorization is not None and authorization.startswith("Bearer "):
            with self._lock:
                known = self._tokens.get(authorization[len("Bearer ") :]) == SERVICE
            if known:
                return _ok()
            return _challenge(challenge + ',error="invalid_token"')
        return _challenge(challenge)

    def _basic_user(self, authorization: str) -> str | None:
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):
            return None
        with self._lock:
            return user if sep and self._accounts.get(user) == password else None

    def _token(self, request: Request) -> Reply:
        if request.path != "/auth":
            return _error(404, "NOT_FOUND", "unknown path")
        if request.method == "POST":
            # OAuth2 refresh-token grant: https://distribution.github.io/distribution/spec/auth/oauth/
            form = {k: v[0] for k, v in parse_qs(request.body.decode("utf-8", "replace")).items()}
            with self._lock:
                user = self._refresh.get(form.get("refresh_token", ""))
            if form.get("grant_type") != "refresh_token" or user is None:
                return Reply.json(401, {"error": "invalid_grant"})
            service = form.get("service", "")
            return Reply.json(200, {"access_token": self._issue(service), "expires_in": 300, "scope": ""})
        if request.method != "GET":
            return _error(405, "UNSUPPORTED", "method not allowed")
        authorization = request.header("Authorization")
        if authorization is None or self._basic_user(authorization) is None:
            # Wrong or missing credentials: 401 Unauthorized (RFC 7235 §3.1), which docker login reports as
            # "unauthorized: incorrect username or password".
            return Reply.json(401, {"details": "incorrect username or password"})
        service = request.arg("service") or ""
        token = self._issue(service)
        # The token response: `token` (and `access_token`, its OAuth2 alias), expires_in, issued_at.
        return Reply.json(200, {"token": token, "access_token": token, "expires_in": 300})

    def _issue(self, service: str) -> str:
        token = "emu-token-" + secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[token] = service
        return token


def _ok() -> Reply:
    return Reply(200, b"{}", {"Content-Type": "application/json", **_VERSION_HEADER})


def _challenge(value: str) -> Reply:
    body = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}'
    return Reply(401, body, {"Content-Type": "application/json", "WWW-Authenticate": value, **_VERSION_HEADER})


def _error(status: int, code: str, message: str) -> Reply:
    return Reply.json(status, {"errors": [{"code": code, "message": message, "detail": None}]})
