"""Who may call the API: the shared opaque bearer token (rotatable, optionally in a file) and trusted ID tokens.

RS256 ID tokens are verified as the API's JWT handler does (emulators/idtoken.py), one trusted issuer per
``server.jwt.configs`` entry of the API. A credential the API authenticates but that holds no rights is a 403.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path

from emulators.httpbase import Request
from emulators.idtoken import GOOGLE_ISSUER, InvalidIdToken, Jwks, TrustedIssuer, looks_like_jwt, verify


class ApiAuth:
    """The API's credentials: the opaque token, the forbidden ones, the trusted issuers and who they admitted."""

    def __init__(self, *, token: str | None, token_file: Path | None) -> None:
        self._lock = threading.Lock()
        self.token = token
        self.token_file = token_file
        self._initial_token = token
        # Tokens (or ID-token identities) the API authenticates but that hold no rights on the API: 403.
        self.forbidden_tokens: set[str] = set()
        # ID-token issuers trusted beside the opaque token (`trust_id_tokens`), and who they authenticated.
        self._issuers: list[TrustedIssuer] = []
        self.identities: list[str] = []
        # The gateway in front (hyperfleet-infra helm/hyperfleet-gateway) denies every call: a 403 with no code.
        self.gateway_denies = False
        # Behind a gateway in EDGE mode the API is deployed without authentication of its own (auth.mode EDGE).
        self.behind_edge = False

    @property
    def enabled(self) -> bool:
        return self.token is not None or bool(self._issuers)

    def start(self) -> None:
        """With ``token_file`` write the bearer token there first (random unless ``token``)."""
        if self.token_file is not None:
            if self.token is None:
                self.token = "hf-emu-" + secrets.token_urlsafe(32)
            self.token_file.parent.mkdir(parents=True, exist_ok=True)
            self.token_file.write_text(self.token + "\n", encoding="utf-8")
        self._initial_token = self.token

    def set_token(self, token: str, *, forbidden: bool = False) -> None:
        with self._lock:
            self.token = token
            if forbidden:
                self.forbidden_tokens.add(token)
            else:
                self.forbidden_tokens.discard(token)

    def reset(self) -> None:
        with self._lock:
            # Back to the token of start(), in the file too: a test's rotation does not leak into the next.
            self.token = self._initial_token
            self.forbidden_tokens.clear()
            self.identities.clear()
            self.gateway_denies = False
            if self.token_file is not None and self.token is not None:
                try:
                    current = self.token_file.read_text(encoding="utf-8").strip()
                except OSError:
                    current = None
                if current != self.token:
                    self.token_file.write_text(self.token + "\n", encoding="utf-8")

    def trust_id_tokens(
        self,
        keys: Callable[[], Jwks],
        *,
        issuer: str = GOOGLE_ISSUER,
        audience: str | None = "hyperfleet-api",
        identity_claim: str = "email",
        identity_pattern: str | None = None,
    ) -> None:
        """Accept RS256 ID tokens of `issuer` beside the opaque token: one `server.jwt.configs` entry of the API."""
        pattern = re.compile(identity_pattern) if identity_pattern else None
        with self._lock:
            self._issuers = [i for i in self._issuers if i.issuer != issuer]
            self._issuers.append(TrustedIssuer(issuer, audience, keys, identity_claim, pattern))

    def distrust(self, issuer: str) -> None:
        """Stop accepting ID tokens of `issuer` (a gateway's wristbands, when the gateway goes)."""
        with self._lock:
            self._issuers = [i for i in self._issuers if i.issuer != issuer]

    def failure(self, request: Request) -> tuple[int, str] | None:
        """(401, AUT code) for a missing, unknown, expired or unverifiable credential, (403, AUZ-001) for a known
        one without rights, else None; `identities` records who each ID token authenticated."""
        with self._lock:
            token, forbidden, issuers = self.token, set(self.forbidden_tokens), list(self._issuers)
        if (token is None and not issuers) or self.behind_edge:
            return None
        header = request.header("Authorization") or ""
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            return 401, "HYPERFLEET-AUT-001"
        if issuers and looks_like_jwt(credential):
            try:
                identity = verify(credential, issuers)
            except InvalidIdToken as exc:
                return 401, "HYPERFLEET-AUT-003" if exc.expired else "HYPERFLEET-AUT-002"
            with self._lock:
                self.identities.append(identity)
            return (403, "HYPERFLEET-AUZ-001") if identity in forbidden else None
        if token is None or not secrets.compare_digest(credential.encode(), token.encode()):
            return 401, "HYPERFLEET-AUT-002"
        return (403, "HYPERFLEET-AUZ-001") if credential in forbidden else None
