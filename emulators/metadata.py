"""Emulator of the GCE / Cloud Run metadata server, as google-auth's compute-engine credentials use it.

Point google-auth at it with ``GCE_METADATA_HOST=127.0.0.1:PORT`` and ``GCE_METADATA_IP=127.0.0.1:PORT``
(google-auth reads ``GCE_METADATA_HOST`` once, at import of ``google.auth.compute_engine._metadata``; a test
process that imported it earlier must also patch ``_metadata._GCE_METADATA_HOST``).

Like the real server: every answer carries ``Metadata-Flavor: Google``; a request without that header, or
with ``X-Forwarded-For``, gets 403; directories answer listings, ``?recursive=true`` answers JSON with
camelCase keys; errors are Google's HTML error pages.  Access tokens are fresh random opaque strings;
the emulator remembers each one with its expiry so the other emulators can authenticate callers through
`MetadataEmulator.identity_for_token`. Identity tokens are RS256 JWTs signed by `id_tokens`
(emulators/idtoken.py), whose JWKS the HyperFleet emulator trusts; `PUT /metadata/identity_lifetime` and
`POST /metadata/rotate_identity_key` make them expire or stop verifying.

Short-lived tokens: google-auth treats a token as expired ``REFRESH_THRESHOLD`` (3 min 45 s = 225 s) before
its ``expires_in``.  A test that wants the refresh path sets the lifetime to 225 + N seconds (e.g.
``PUT /metadata/token_lifetime {"seconds": 228}``): the client then uses each token for about N = 3 s and
refreshes, while the server honours it for the full 228 s.  To make the *server* reject a token the client
still believes valid, use ``POST /metadata/revoke_all``.
"""

from __future__ import annotations

import html
import secrets
import threading
import time
from typing import Any, ClassVar

from emulators.faults import FaultBook, ServiceControl
from emulators.httpbase import HTTPEmulator, Reply, Request
from emulators.idtoken import GOOGLE_ISSUER, IdTokenIssuer
from emulators.routes import AdminCall, AdminRouter, Answer, Handler

_V1 = "/computeMetadata/v1"
_FLAVOR = {"Metadata-Flavor": "Google", "Server": "Metadata Server for VM"}
_DEFAULT_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)

_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _google_error_page(status: int, detail: str) -> Reply:
    """Google's front-end HTML error page, as the metadata server sends it."""
    body = (
        "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n"
        f"  <title>Error {status} ({_REASONS.get(status, 'Error')})!!1</title>\n"
        f"  <p><b>{status}.</b> <ins>That\u2019s an error.</ins>\n"
        f"  <p>{html.escape(detail)}  <ins>That\u2019s all we know.</ins>\n"
    )
    reply = Reply.text(status, body, "text/html; charset=UTF-8")
    reply.headers.update(_FLAVOR)
    return reply


def _camel(key: str) -> str:
    head, *rest = key.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class MetadataEmulator(HTTPEmulator):
    """The metadata server of one Cloud Run service with one runtime service account."""

    service: ClassVar[str] = "metadata"

    def __init__(
        self,
        book: FaultBook,
        *,
        project_id: str = "hf-demo-project",
        project_number: str = "123456789012",
        service_account: str = "pullsecret-runtime@hf-demo-project.iam.gserviceaccount.com",
        token_lifetime_s: int = 3600,
        region: str = "us-central1",
    ) -> None:
        super().__init__()
        self.control = ServiceControl(book, self.service)
        self.project_id = project_id
        self.project_number = project_number
        self.service_account = service_account
        self.region = region
        self._initial_lifetime = int(token_lifetime_s)
        self._lock = threading.Lock()
        self.token_lifetime_s = int(token_lifetime_s)
        # token -> (email, expiry as epoch seconds, scopes)
        self._tokens: dict[str, tuple[str, float, tuple[str, ...]]] = {}
        self._issued = 0
        self._identity_issued = 0
        self._attributes: dict[str, str] = {}
        # Signs the identity tokens; its JWKS stands in for https://www.googleapis.com/oauth2/v3/certs.
        self.id_tokens = IdTokenIssuer()
        self.identity_lifetime_s = 3600
        self._admin = AdminRouter(self._admin_table())

    # -- what the other emulators use --------------------------------------------------------
    def identity_for_token(self, token: str) -> str | None:
        """The service-account email a live access token was issued to, else None."""
        info = self.token_info(token)
        return None if info is None else str(info["email"])

    def token_info(self, token: str) -> dict[str, Any] | None:
        """Email, scopes and remaining seconds of a live token; None when unknown or expired."""
        with self._lock:
            entry = self._tokens.get(token)
        if entry is None:
            return None
        email, expiry, scopes = entry
        remaining = expiry - time.time()
        if remaining <= 0:
            return None
        return {"email": email, "scopes": list(scopes), "expires_in": remaining}

    # -- admin -----------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        now = time.time()
        with self._lock:
            live = sum(1 for _, expiry, _ in self._tokens.values() if expiry > now)
            return {
                "project_id": self.project_id,
                "project_number": self.project_number,
                "service_account": self.service_account,
                "token_lifetime_s": self.token_lifetime_s,
                "tokens_issued": self._issued,
                "live_tokens": live,
                "identity_tokens_issued": self._identity_issued,
                "attributes": dict(self._attributes),
            }

    def reset(self) -> None:
        with self._lock:
            self._tokens.clear()
            self._issued = 0
            self._identity_issued = 0
            self.token_lifetime_s = self._initial_lifetime
            self.identity_lifetime_s = 3600
            self._attributes.clear()

    def revoke_all(self) -> int:
        """Expire every issued token now; returns how many were live."""
        now = time.time()
        with self._lock:
            live = 0
            for token, (email, expiry, scopes) in self._tokens.items():
                if expiry > now:
                    live += 1
                self._tokens[token] = (email, now - 1, scopes)
            return live

    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Admin routes relative to /metadata: state, token_lifetime, revoke_all, attributes, reset."""
        answer = self._admin.dispatch(method, path, body)
        if answer is None:
            return 404, {"error": f"no admin route {method} {'/' + path.strip('/')}"}
        return answer

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/state"): lambda _: (200, self.state()),
            ("PUT", "/token_lifetime"): self._admin_token_lifetime,
            ("POST", "/revoke_all"): lambda _: (200, {"revoked": self.revoke_all()}),
            ("PUT", "/identity_lifetime"): self._admin_identity_lifetime,
            ("POST", "/rotate_identity_key"): self._admin_rotate_identity_key,
            ("GET", "/jwks"): lambda _: (200, self.id_tokens.jwks()),
            ("PUT", "/attributes"): self._admin_attributes,
            ("POST", "/reset"): self._admin_reset,
        }

    def _admin_token_lifetime(self, call: AdminCall) -> Answer:
        try:
            seconds = int((call.body or {})["seconds"])
        except (KeyError, TypeError, ValueError):
            return 400, {"error": 'body must be {"seconds": N}'}
        if seconds < 1:
            return 400, {"error": "seconds must be >= 1"}
        with self._lock:
            self.token_lifetime_s = seconds
        return 200, {"token_lifetime_s": seconds}

    def _admin_identity_lifetime(self, call: AdminCall) -> Answer:
        try:
            seconds = int((call.body or {})["seconds"])
        except (KeyError, TypeError, ValueError):
            return 400, {"error": 'body must be {"seconds": N}'}
        with self._lock:
            self.identity_lifetime_s = seconds  # <= 0: tokens already expired when issued
        return 200, {"identity_lifetime_s": seconds}

    def _admin_rotate_identity_key(self, _: AdminCall) -> Answer:
        self.id_tokens.rotate()  # every ID token issued so far stops verifying
        return 200, {"rotated": True}

    def _admin_attributes(self, call: AdminCall) -> Answer:
        body = call.body
        if not isinstance(body, dict) or not all(isinstance(v, str) for v in body.values()):
            return 400, {"error": "body must be an object of string values"}
        with self._lock:
            self._attributes = {str(k): v for k, v in body.items()}
        return 200, {"attributes": body}

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, self.state()

    # -- the metadata tree -----------------------------------------------------------------
    def _account(self) -> dict[str, Any]:
        return {
            "aliases": ["default"],
            "email": self.service_account,
            "scopes": list(_DEFAULT_SCOPES),
            "token": None,  # dynamic leaves, listed but never part of a recursive answer
            "identity": None,
        }

    def _tree(self) -> dict[str, Any]:
        account = self._account()
        with self._lock:
            attributes: dict[str, Any] = dict(self._attributes)
        return {
            "instance": {
                "attributes": attributes,
                "id": "00bf4bf02d" + self.project_number[-8:],
                "region": f"projects/{self.project_number}/regions/{self.region}",
                "zone": f"projects/{self.project_number}/zones/{self.region}-1",
                "service-accounts": {"default": account, self.service_account: account},
            },
            "project": {
                "attributes": {},
                "numeric-project-id": self.project_number,
                "project-id": self.project_id,
            },
            "universe": {"universe-domain": "googleapis.com"},
        }

    @staticmethod
    def _fault_name(parts: list[str]) -> str:
        if not parts:
            return "ping"
        if parts[:2] == ["project", "project-id"] and len(parts) == 2:
            return "project-id"
        if parts[:2] == ["project", "numeric-project-id"] and len(parts) == 2:
            return "numeric-project-id"
        if len(parts) >= 2 and parts[:2] == ["instance", "service-accounts"]:
            if len(parts) == 4 and parts[3] in ("token", "email", "identity"):
                return parts[3]
            return "service-accounts"
        return "other"

    def handle(self, request: Request) -> Reply:
        """Serve one metadata request."""
        path = request.path
        if path in ("", "/"):
            parts: list[str] = []
        elif path == _V1 or path.startswith(_V1 + "/"):
            parts = [p for p in path[len(_V1) :].split("/") if p]
        else:
            parts = ["?"]
        code = self.control.enter(self._fault_name(parts))
        if code is not None:
            if code in ("reset", "timeout"):
                return Reply.drop(code)
            status = int(code)
            return _google_error_page(status, "The server encountered a temporary error.")
        if request.header("X-Forwarded-For") is not None:
            return _google_error_page(403, "Your client does not have permission to get URL from this server.")
        if path in ("", "/"):
            # The root answers even without the Metadata-Flavor request header, like GCE.
            reply = Reply.text(200, "computeMetadata/\n", "application/text")
            reply.headers.update(_FLAVOR)
            return reply
        if request.header("Metadata-Flavor") != "Google":
            return _google_error_page(
                403,
                f"Your client does not have permission to get URL {path} from this server. "
                "Missing Metadata-Flavor:Google header.",
            )
        token_post = request.method == "POST" and parts[-1:] == ["token"]
        if request.method not in ("GET", "HEAD") and not token_post:
            return _google_error_page(405, f"The request method {request.method} is inappropriate.")
        if parts[:1] == ["?"]:
            return _google_error_page(404, f"The requested URL {path} was not found on this server.")
        return self._lookup(request, parts)

    def _lookup(self, request: Request, parts: list[str]) -> Reply:
        node: Any = self._tree()
        for i, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                return _google_error_page(404, f"The requested URL {request.path} was not found on this server.")
            if node[part] is None:  # a dynamic leaf
                if i != len(parts) - 1:
                    return _google_error_page(404, f"The requested URL {request.path} was not found on this server.")
                return self._dynamic(request, parts[i - 1] if i else "", part)
            node = node[part]
        recursive = (request.arg("recursive") or "").lower() == "true"
        alt = request.arg("alt")
        if isinstance(node, dict):
            if not request.path.endswith("/"):
                reply = Reply.text(301, "", "text/html; charset=UTF-8")
                reply.headers.update(_FLAVOR)
                reply.headers["Location"] = request.path + "/"
                return reply
            if recursive or alt == "json":
                return self._json(200, self._recursive(node, top=parts))
            listing = "".join(k + ("/" if isinstance(v, dict) else "") + "\n" for k, v in node.items())
            return self._text(listing)
        if isinstance(node, list):
            if alt == "json":
                return self._json(200, node)
            return self._text("".join(f"{v}\n" for v in node))
        if alt == "json":
            return self._json(200, node)
        return self._text(str(node))

    def _recursive(self, node: dict[str, Any], top: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        keep_keys = bool(top) and top[-1] == "attributes"
        for key, value in node.items():
            if value is None:
                continue
            # Attribute keys are user data and service-account keys are emails: not camelCased.
            name = key if keep_keys or top[-1:] == ["service-accounts"] else _camel(key)
            out[name] = self._recursive(value, [*top, key]) if isinstance(value, dict) else value
        return out

    def _dynamic(self, request: Request, account: str, leaf: str) -> Reply:
        if leaf == "token":
            raw_scopes = request.arg("scopes")
            scopes = tuple(s for s in (raw_scopes or "").split(",") if s) or _DEFAULT_SCOPES
            token = "ya29.emu-" + secrets.token_urlsafe(48)
            with self._lock:
                lifetime = self.token_lifetime_s
                self._tokens[token] = (self.service_account, time.time() + lifetime, scopes)
                self._issued += 1
            return self._json(200, {"access_token": token, "expires_in": lifetime, "token_type": "Bearer"})
        # identity: a Google-signed ID token (emulators/idtoken.py states the format and its source)
        audience = request.arg("audience")
        if not audience:
            return _google_error_page(400, "non-empty audience parameter required")
        now = int(time.time())
        with self._lock:
            lifetime = self.identity_lifetime_s
        claims: dict[str, Any] = {
            "aud": audience,
            "azp": "1" + self.project_number,
            "exp": now + lifetime,
            "iat": now,
            "iss": GOOGLE_ISSUER,
            "sub": "1" + self.project_number,
            # Two tokens minted in the same second differ, as Google's do (a re-mint after a refusal is new).
            "jti": secrets.token_hex(8),
        }
        if request.arg("format") == "full" or request.arg("format") == "standard":
            claims["email"] = self.service_account
            claims["email_verified"] = True
        jwt = self.id_tokens.mint(claims)
        with self._lock:
            self._identity_issued += 1
        return self._text(jwt)

    @staticmethod
    def _text(text: str) -> Reply:
        reply = Reply.text(200, text, "application/text")
        reply.headers.update(_FLAVOR)
        return reply

    @staticmethod
    def _json(status: int, payload: Any) -> Reply:
        reply = Reply.json(status, payload)
        reply.headers.update(_FLAVOR)
        return reply
