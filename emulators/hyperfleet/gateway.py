"""The gateway in front of hyperfleet-api (Envoy + Authorino), as the adapter meets it: opt-in, off by default.

Source: hyperfleet-infra helm/hyperfleet-gateway after 5da6143 (HYPERFLEET-1480): `values.yaml`
(`envoy.stripHeaders`, `envoy.retryPolicy`, `auth.mode`, `auth.machineIdentity`, `auth.wristband`),
`templates/authconfig.yaml` and `templates/configmap.yaml`. The rules, in order:

1. Envoy removes the identity and tenant headers a caller sends (`early_header_mutation`, `stripHeaders`:
   x-tenant-org, x-tenant-project, x-tenant-tenancy-ocid, x-tenant-compartment, x-hyperfleet-system,
   x-hyperfleet-identity), here with the API's own tenant headers added (the chart keeps both lists in sync).
2. The scheme picks exactly one authentication method: `ServiceAccount <token>` is reviewed with a Kubernetes
   TokenReview for `auth.machineIdentity.audience` (default `hyperfleet-api`); `Bearer <jwt>` is verified against
   the human identity providers. Any other header, or a credential its method refuses, is Authorino's 401: no
   body, a `WWW-Authenticate` challenge per method, the reason in `x-ext-auth-reason` (never a HyperFleet code).
3. Authorization (Authorino's denial is a 403, no body, `x-ext-auth-reason: Unauthorized`): a machine caller's user
   must be exactly `system:serviceaccount:<gateway namespace>:<one of allowedServiceAccounts>` (rule
   restrict-system-subjects); a human needs a non-empty identity claim and the tenant model's required claim
   (`org_id` in the onprem model).
4. On success Authorino adds `x-hyperfleet-system` ("true" for machines), `x-hyperfleet-identity` and the tenant
   headers; in EDGE+API mode the caller's credential is replaced by the gateway's own RS256 wristband
   (`Bearer`, 300 s, audience hyperfleet-api, `sub` the ServiceAccount user), which the API verifies; in EDGE mode
   the API runs without authentication of its own.
5. Envoy retries GET, HEAD, PUT and DELETE on connect-failure, refused-stream, reset and gateway-error
   (502/503/504), 3 retries; a reset on every try becomes Envoy's own plain-text 503. (A hang is passed through.)

Not modelled: TLS between the hops, the per-try timeouts, Authorino's caches, mTLS.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from emulators.httpbase import Reply, Request
from emulators.idtoken import IdTokenIssuer, InvalidIdToken, TrustedIssuer, verify
from emulators.kubernetes.delegated import TokenReviewer
from emulators.kubernetes.tokens import ReviewEndpoint

STRIP_HEADERS = (
    "x-tenant-org",
    "x-tenant-project",
    "x-tenant-tenancy-ocid",
    "x-tenant-compartment",
    "x-hyperfleet-system",
    "x-hyperfleet-identity",
)
MACHINE_METHOD = "hyperfleet-components"  # the AuthConfig's name for the ServiceAccount method (its realm)
WRISTBAND_ISSUER = "https://hyperfleet-gateway.hyperfleet.svc/hyperfleet/hyperfleet-tenant-policy/wristband"
WRISTBAND_SECONDS = 300  # auth.wristband.tokenDuration
RETRIED_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRIES = 3  # envoy.retryPolicy.numRetries
MODES = ("EDGE", "EDGE+API")


@dataclass(frozen=True)
class GatewayConfig:
    """The chart's values the adapter depends on; `reviewer` is the gateway's way to the cluster's TokenReview."""

    reviewer: TokenReviewer
    namespace: str = "hyperfleet"
    allowed_service_accounts: tuple[str, ...] = ()
    audience: str = "hyperfleet-api"
    mode: str = "EDGE"
    humans: tuple[TrustedIssuer, ...] = ()  # auth.identityProviders (identity claim: each issuer's)
    tenant_claim: str = "org_id"
    tenant_header: str = "x-tenant-org"
    strip_headers: tuple[str, ...] = STRIP_HEADERS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"gateway mode must be one of {MODES}")


@dataclass
class Admission:
    """Who the gateway admitted and the request it forwards, or the denial it answers."""

    denial: Reply | None = None
    forwarded: Request | None = None
    user: str = ""


@dataclass
class Gateway:
    """One gateway configuration, with what it saw (admitted users, denials by reason) for the tests."""

    config: GatewayConfig
    wristbands: IdTokenIssuer = field(default_factory=IdTokenIssuer)
    admitted: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)

    def forward(
        self, request: Request, upstream: Callable[[Request], Reply], *, also_strip: tuple[str, ...] = ()
    ) -> Reply:
        """Answer one request as the gateway does: deny it, or pass it (rewritten) to `upstream`, retrying.
        `also_strip`: the API's own tenant headers (lower-case), removed like the chart's list."""
        admission = self.admit(request, also_strip)
        if admission.forwarded is None:
            assert admission.denial is not None
            return admission.denial
        reply = upstream(admission.forwarded)
        if request.method not in RETRIED_METHODS:
            return reply
        for _ in range(RETRIES):
            if not (reply.fault == "reset" or reply.status in (502, 503, 504)):
                return reply
            reply = upstream(admission.forwarded)
        if reply.fault == "reset":
            return Reply.text(
                503, "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
            )
        return reply

    def admit(self, request: Request, also_strip: tuple[str, ...] = ()) -> Admission:
        config = self.config
        stripped = set(config.strip_headers) | set(also_strip)
        headers = {k: v for k, v in request.headers.items() if k not in stripped}
        scheme, _, credential = (request.header("Authorization") or "").partition(" ")
        credential = credential.strip()
        if scheme == "ServiceAccount" and credential:
            review = config.reviewer.review(credential, (config.audience,))
            if not review.authenticated:
                return self._unauthenticated(review.error or "not authenticated")
            allowed = {f"system:serviceaccount:{config.namespace}:{name}" for name in config.allowed_service_accounts}
            if review.username not in allowed:
                return self._forbidden(f"{review.username} is not an allowed service account")
            headers["x-hyperfleet-system"] = "true"
            return self._admitted(request, headers, review.username, {"hf_system": "true"})
        if scheme == "Bearer" and credential and config.humans:
            try:
                identity = verify(credential, list(config.humans))
            except InvalidIdToken as exc:
                return self._unauthenticated(str(exc))
            claims = _claims(credential)
            tenant = claims.get(config.tenant_claim)
            if not isinstance(tenant, str) or not tenant:
                return self._forbidden(f"no {config.tenant_claim} claim")
            headers.update(
                {"x-hyperfleet-system": "false", "x-hyperfleet-identity": identity, config.tenant_header: tenant}
            )
            return self._admitted(request, headers, identity, {"hf_system": "false", config.tenant_claim: tenant})
        return self._unauthenticated("credential not found")

    def _admitted(self, request: Request, headers: dict[str, str], user: str, claims: dict[str, str]) -> Admission:
        if self.config.mode == "EDGE+API":
            now = int(time.time())
            wristband = self.wristbands.mint(
                {
                    "iss": WRISTBAND_ISSUER,
                    "aud": self.config.audience,
                    "sub": user,
                    "hf_identity": "" if claims.get("hf_system") == "true" else user,
                    "iat": now,
                    "exp": now + WRISTBAND_SECONDS,
                    **claims,
                }
            )
            headers["authorization"] = f"Bearer {wristband}"
        self.admitted.append(user)
        return Admission(forwarded=replace(request, headers=headers), user=user)

    def _unauthenticated(self, reason: str) -> Admission:
        self.denied.append(f"401 {reason}")
        challenges = [f'ServiceAccount realm="{MACHINE_METHOD}"']
        challenges += [f'Bearer realm="{issuer.issuer}"' for issuer in self.config.humans]
        headers = {"WWW-Authenticate": ", ".join(challenges), "x-ext-auth-reason": reason}
        return Admission(denial=Reply(401, b"", headers))

    def _forbidden(self, reason: str) -> Admission:
        self.denied.append(f"403 {reason}")
        return Admission(denial=Reply(403, b"", {"x-ext-auth-reason": "Unauthorized"}))


def config_from_admin(body: Any) -> GatewayConfig:
    """The admin API's gateway (PUT /_emulator/gateway); raises ValueError naming what is missing."""
    body = body if isinstance(body, dict) else {}
    kube = body.get("kubernetes") or {}
    allowed = body.get("allowed_service_accounts")
    if not isinstance(kube, dict) or not all(isinstance(kube.get(k), str) for k in ("url", "ca_pem", "token")):
        raise ValueError('gateway needs "kubernetes": {"url", "ca_pem", "token"} (the TokenReview endpoint)')
    if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
        raise ValueError('gateway needs "allowed_service_accounts": [names in its namespace]')
    endpoint = ReviewEndpoint(kube["url"], kube["ca_pem"].encode(), kube["token"], str(kube.get("user", "")))
    return GatewayConfig(
        TokenReviewer(endpoint),
        namespace=str(body.get("namespace", "hyperfleet")),
        allowed_service_accounts=tuple(allowed),
        audience=str(body.get("audience", "hyperfleet-api")),
        mode=str(body.get("mode", "EDGE")),
    )


def gateway_state(gateway: Gateway | None) -> dict[str, Any]:
    """The admin API's view of the gateway (GET /_emulator/gateway): its configuration and what it decided."""
    if gateway is None:
        return {"gateway": None}
    config = gateway.config
    return {
        "gateway": config.mode,
        "namespace": config.namespace,
        "allowed_service_accounts": list(config.allowed_service_accounts),
        "audience": config.audience,
        "admitted": list(gateway.admitted),
        "denied": list(gateway.denied),
    }


def _claims(token: str) -> dict[str, object]:
    """The claims of a token `verify` already accepted."""
    part = token.split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded if isinstance(decoded, dict) else {}
