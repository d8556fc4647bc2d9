"""Who may call the Pull Secret Service emulator: bearer-token authentication, then per-identity authorization.

The design record's service authenticates a Kubernetes ServiceAccount token with a TokenReview and authorizes
the ServiceAccount with Kubernetes RBAC (DDR §3.4, §6.1, §6.2; §1.4 Principle 4 layers 1-2: an invalid token is
401, an authenticated caller without the permission is 403). The emulator models the TokenReview as a configured
table of accepted opaque tokens, each naming its identity (e.g. `system:serviceaccount:hyperfleet-system:
gcp-adapter`), and RBAC as a table identity -> verbs; the verbs are the DDR's ClusterRole rules (§3.4):
`pull-secrets:get|create|delete`, `rotations:get|create|list`.

Beside it (assumed where the DDR is silent: the DDR names no other credential; issue 29 asks what the service
would need to accept a Cloud Run function's identity) it can accept Google-signed ID tokens, verified as
emulators/idtoken.py verifies them (RS256 signature against the issuer's JWKS, issuer, audience = the configured
audience, expiry); their identity is the `email` claim, which must be in the configured allowlist (else 403,
as an RBAC binding that names another subject).

Opt-in (`review_service_account_tokens`), the DDR's own mechanism over real HTTP: a bearer JWT that is not a Google
ID token is reviewed by a Kubernetes TokenReview for the service's audience (emulators/kubernetes/delegated.py),
under the service's own credentials; a token the review does not authenticate is 401 HYPERFLEET-AUT-002; the
authenticated ServiceAccount (`system:serviceaccount:<ns>:<name>`) then needs its grants (403 otherwise) and, when an
allowlist of accounts is configured, to be on it (403, as an RBAC binding naming another subject).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from emulators.idtoken import GOOGLE_ISSUER, InvalidIdToken, Jwks, TrustedIssuer, looks_like_jwt, verify
from emulators.kubernetes.delegated import TokenReviewer

VERBS = frozenset(
    {
        "pull-secrets:get",
        "pull-secrets:create",
        "pull-secrets:delete",
        "rotations:get",
        "rotations:create",
        "rotations:list",
    }
)


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: 401 (who are you?) or 403 (not allowed), with the HyperFleet code."""

    status: int
    code: str
    detail: str


class Access:
    """Accepted tokens, trusted ID-token issuer and grants of one emulator instance; thread-safe."""

    def __init__(
        self,
        *,
        bearer_tokens: Mapping[str, str] | None = None,
        grants: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = dict(bearer_tokens or {})  # token -> identity
        self._grants: dict[str, frozenset[str]] | None = None
        if grants is not None:
            self.set_grants(grants)
        self._issuer: TrustedIssuer | None = None
        self._emails: frozenset[str] = frozenset()
        self._reviewer: TokenReviewer | None = None
        self._review_audience = ""
        self._accounts: frozenset[str] | None = None

    def __repr__(self) -> str:  # tokens must never land in logs
        with self._lock:
            return f"Access(tokens={len(self._tokens)}, id_tokens={self._issuer is not None})"

    def accept_token(self, token: str, identity: str) -> None:
        with self._lock:
            self._tokens[token] = identity

    def revoke_token(self, token: str) -> None:
        with self._lock:
            self._tokens.pop(token, None)

    def set_grants(self, grants: Mapping[str, Collection[str]] | None) -> None:
        """identity -> verbs it may use; None: every authenticated identity may use every verb."""
        if grants is not None:
            unknown = {v for verbs in grants.values() for v in verbs} - VERBS
            if unknown:
                raise ValueError(f"unknown verbs {sorted(unknown)}; known: {sorted(VERBS)}")
        with self._lock:
            self._grants = None if grants is None else {k: frozenset(v) for k, v in grants.items()}

    def trust_id_tokens(
        self, keys: Callable[[], Jwks], *, audience: str, emails: Collection[str], issuer: str = GOOGLE_ISSUER
    ) -> None:
        """Accept RS256 ID tokens of `issuer` for `audience` whose `email` is one of `emails`."""
        with self._lock:
            self._issuer = TrustedIssuer(issuer=issuer, audience=audience, keys=keys, identity_claim="email")
            self._emails = frozenset(emails)

    def review_service_account_tokens(
        self, reviewer: TokenReviewer | None, *, audience: str = "", accounts: Collection[str] | None = None
    ) -> None:
        """Authenticate bearer JWTs by TokenReview for `audience` (None: stop); `accounts`: the users admitted
        (`system:serviceaccount:ns:name`), None for any the grants allow."""
        with self._lock:
            self._reviewer = reviewer
            self._review_audience = audience
            self._accounts = None if accounts is None else frozenset(accounts)

    def _reviewed(self, credential: str) -> tuple[str | None, Refusal | None]:
        with self._lock:
            reviewer, audience, accounts = self._reviewer, self._review_audience, self._accounts
        assert reviewer is not None
        review = reviewer.review(credential, (audience,))
        if not review.authenticated:
            return None, Refusal(401, "HYPERFLEET-AUT-002", "Missing or invalid authentication token")
        if accounts is not None and review.username not in accounts:
            return review.username, Refusal(
                403, "HYPERFLEET-AUZ-001", "The identity is not allowed to use this service"
            )
        return review.username, None

    def _is_google(self, credential: str) -> bool:
        try:
            return verify_issuer(credential) == GOOGLE_ISSUER
        except ValueError:
            return False

    def check(self, authorization: str | None, verb: str) -> tuple[str | None, Refusal | None]:
        """The caller's identity, or why it is refused; `verb` is the permission the request needs."""
        scheme, _, credential = (authorization or "").partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            return None, Refusal(401, "HYPERFLEET-AUT-001", "Missing or invalid authentication token")
        with self._lock:
            issuer, emails, tokens, grants = self._issuer, self._emails, dict(self._tokens), self._grants
        identity: str | None = None
        reviewing = self._reviewer is not None and looks_like_jwt(credential)
        if reviewing and not (issuer is not None and self._is_google(credential)):
            identity, refusal = self._reviewed(credential)
            if refusal is not None:
                return identity, refusal
        elif issuer is not None and looks_like_jwt(credential):
            try:
                identity = verify(credential, [issuer])
            except InvalidIdToken as exc:
                code = "HYPERFLEET-AUT-003" if exc.expired else "HYPERFLEET-AUT-002"
                return None, Refusal(401, code, f"Invalid ID token: {exc}")
            if identity not in emails:
                return identity, Refusal(403, "HYPERFLEET-AUZ-001", "The identity is not allowed to use this service")
        else:
            identity = next(
                (who for tok, who in tokens.items() if secrets.compare_digest(tok.encode(), credential.encode())), None
            )
            if identity is None:
                return None, Refusal(401, "HYPERFLEET-AUT-002", "Missing or invalid authentication token")
        assert identity is not None
        if grants is not None and verb not in grants.get(identity, frozenset()):
            return identity, Refusal(403, "HYPERFLEET-AUZ-001", f"The identity may not {verb}")
        return identity, None


def verify_issuer(token: str) -> str:
    """The unverified `iss` of a JWT (which verifier to ask); raises ValueError when it has none."""
    part = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    if not isinstance(claims, dict) or not isinstance(claims.get("iss"), str):
        raise ValueError("no issuer")
    return str(claims["iss"])
