"""The doctor's checks of the ServiceAccount identity (HYPERFLEET_API_AUTH=service-account-token) and their fixes.

What the doctor proves, in order: (1) the runtime identity can mint a token (TokenRequest on the token cluster:
its RBAC there), (2) the token says what the gateway will review (its `aud` holds the audience, its `sub` is the
configured account: read from the token's own claims, since a TokenReview needs `create` on tokenreviews, which
the runtime identity deliberately lacks; the review itself is the gateway's, proven by (3)), (3) one authenticated
read through the gateway (doctor_checks.hyperfleet_api). Each refusal names its fix: the Role and RoleBinding on
the token cluster, the allow-list (the gateway's bare 403), the audience (its bare 401), the CA (TLS).
No line carries the token: only the account, the cluster, the audience and the claims' names.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from pullsecret.doctor.kit import Context, Line
from pullsecret.errors import AdapterError

CHECK = "service-account-token"
ALLOW_LIST_FIX = (
    "put the account on hyperfleet-gateway's allow-list: add `{name}` to auth.machineIdentity.allowedServiceAccounts "
    "of the HyperFleet deployment in namespace {namespace} (terraform output gateway_allowed_service_accounts) and "
    "re-deploy the gateway"
)
AUDIENCE_FIX = (
    "the gateway refused the token itself (a bare 401): HYPERFLEET_API_AUDIENCE ({audience!r}) must be the gateway's "
    "auth.machineIdentity.audience (default hyperfleet-api), and the token cluster the one whose TokenReview it uses"
)
CA_FIX = (
    "if the gateway's certificate comes from a private root CA (the chart's self-signed one), put that CA in "
    "HYPERFLEET_API_CA_BUNDLE; else make HYPERFLEET_API_URL reachable (the function's VPC egress, "
    "docs/trust.md 'Reaching a private gateway')"
)


def minted_token(ctx: Context) -> list[Line]:
    """Mint the token (1) and read its claims (2)."""
    credential = ctx.hyperfleet.credential
    source = ctx.settings.caller.hyperfleet_token
    if source is None or credential is None:
        return [Line(CHECK, None, "HYPERFLEET_API_AUTH is not service-account-token")]
    where = f"ServiceAccount {source.account} on {source.cluster}"
    try:
        token = credential.current()
    except AdapterError as exc:
        return [Line(CHECK, False, f"{where}: no token ({exc.reason})", _mint_fix(exc.message))]
    lines = [Line(CHECK, True, f"{ctx.runtime} mints tokens of {where} (TokenRequest)")]
    claimed = claims(token)
    audience = ctx.settings.hyperfleet_api_audience
    user = f"system:serviceaccount:{source.namespace}:{source.name}"
    if audience not in audiences(claimed) or claimed.get("sub") != user:
        text = f"the token's claims do not name audience {audience!r} and {user}"
        fix = "the token cluster's API server must issue tokens for the requested audience (its --api-audiences)"
        return [*lines, Line(CHECK, False, text, fix)]
    text = (
        f"the token names audience {audience!r} and {user}; the gateway's TokenReview is proven by the "
        "authenticated read (the runtime identity may not create TokenReviews, by design)"
    )
    return [*lines, Line(CHECK, True, text)]


def api_fix(ctx: Context, exc: AdapterError) -> str | None:
    """The fix of a refused read in this mode (3), or None when the common fix applies."""
    source = ctx.settings.caller.hyperfleet_token
    if source is None:
        return None
    if exc.reason == "CredentialsRefused":
        status = re.search(r"\((40[13])\b", exc.message)
        if status is not None and status.group(1) == "403":
            return ALLOW_LIST_FIX.format(name=source.name, namespace=source.namespace)
        return AUDIENCE_FIX.format(audience=ctx.settings.hyperfleet_api_audience)
    if exc.reason == "CredentialsUnavailable":
        return _mint_fix(exc.message)
    if exc.reason == "DependencyUnavailable" and "unreachable" in exc.message:
        return CA_FIX
    return None


def _mint_fix(message: str) -> str:
    if "may not create tokens" in message or "does not exist" in message:
        return (
            "apply the token cluster's manifests (terraform output -raw token_cluster_manifests | kubectl apply "
            "--server-side -f -): the ServiceAccount, and the Role allowing create on serviceaccounts/token for that "
            "one name, bound to the runtime identity's Kubernetes user"
        )
    if "token cluster" in message and "refused the runtime identity" in message:
        return "grant the runtime identity container.clusters.get on the token cluster (terraform, token_cluster)"
    return "HYPERFLEET_API_TOKEN_CLUSTER must name a GKE cluster the runtime identity can reach: " + message[-300:]


def audiences(claimed: dict[str, Any]) -> list[str]:
    """The token's `aud` claim as a list (a JWT may carry one audience as a string)."""
    found = claimed.get("aud")
    return [found] if isinstance(found, str) else [str(a) for a in found] if isinstance(found, list) else []


def claims(token: str) -> dict[str, Any]:
    """The JWT's payload (not verified: the doctor reads what the API server wrote, the gateway verifies)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}
