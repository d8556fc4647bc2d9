"""ServiceAccounts, their bound tokens (TokenRequest) and the review of tokens (TokenReview).

Sources, each rule beside its code:
- TokenRequest, authentication.k8s.io/v1, the `token` subresource of a ServiceAccount
  (https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-request-v1/):
  `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`, authorized as verb `create` on resource
  `serviceaccounts`, subresource `token`, with the account's name (so a Role's `resourceNames` can hold it to
  one account). kube-apiserver pkg/registry/core/serviceaccount/storage/token.go: the account must exist
  (404 `serviceaccounts "x" not found`), the request is validated by pkg/apis/authentication/validation
  (`expirationSeconds` below 600 or above 2^32 is a 422 `TokenRequest.authentication.k8s.io "" is invalid:
  spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`), `spec.audiences`
  empty means the API server's own audiences, and the answer (201) echoes the spec with `status.token` and
  `status.expirationTimestamp`. Defaults (pkg/apis/authentication/v1/defaults.go): `expirationSeconds` 3600.
- The token is a JWT as pkg/serviceaccount/claims.go writes it: `iss`, `sub`
  `system:serviceaccount:<ns>:<name>`, `aud` (a list), `exp`, `iat`, `nbf`, `jti` and `kubernetes.io`
  {namespace, serviceaccount {name, uid}}; RS256 under the API server's key.
- TokenReview, authentication.k8s.io/v1 (https://kubernetes.io/docs/reference/kubernetes-api/
  authentication-resources/token-review-v1/; pkg/registry/authentication/tokenreview/storage.go and
  pkg/serviceaccount/jwt.go): cluster-scoped `create` on `tokenreviews` (the bootstrap ClusterRole
  system:auth-delegator grants it). A token is authenticated when its signature holds, it has not expired, its
  account still exists with the same uid, and its audiences intersect the requested ones (the API server's when
  the request names none); `status.audiences` is that intersection; the user is
  `system:serviceaccount:<ns>:<name>` in groups system:serviceaccounts, system:serviceaccounts:<ns> and
  system:authenticated. A refused token is answered 201 with `authenticated` absent and `status.error`.

Nothing here is persisted beyond the emulator's life; `advance(seconds)` moves this clock forward so that a test
can show an expired token refused without waiting the 10 minutes the API server imposes.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from emulators.idtoken import IdTokenIssuer
from emulators.kubernetes.base import Json, utc_now
from emulators.kubernetes.status import ApiError, FieldError, bad_request, invalid, not_found

AUTHENTICATION_GROUP = "authentication.k8s.io"
MIN_EXPIRATION_SECONDS = 10 * 60  # pkg/apis/authentication/validation: MinTokenAgeSec
MAX_EXPIRATION_SECONDS = 1 << 32
DEFAULT_EXPIRATION_SECONDS = 3600  # pkg/apis/authentication/v1/defaults.go
# The API server's own audience when --api-audiences is not set: its issuer (kube-apiserver options/authentication.go).
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# The bootstrap ClusterRole that lets a delegating server (a gateway, Authorino) review tokens
# (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: system:auth-delegator).
AUTH_DELEGATOR = {
    "kind": "ClusterRole",
    "metadata": {"name": "system:auth-delegator"},
    "rules": [
        {"apiGroups": [AUTHENTICATION_GROUP], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ],
}
_ISSUED_KEPT = 10_000  # issued tokens remembered (the oldest expired ones are forgotten first)


def service_account_user(namespace: str, name: str) -> str:
    """The user a ServiceAccount's token authenticates as (k8s.io/apiserver/pkg/authentication/serviceaccount)."""
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True)
class ReviewEndpoint:
    """How a delegating server reaches this API server's TokenReview: URL, CA to trust, its own bearer token.

    repr() hides the token (it is a credential of the reviewing server).
    """

    url: str
    ca_pem: bytes
    token: str
    user: str

    def __repr__(self) -> str:
        return f"ReviewEndpoint(url={self.url!r}, user={self.user!r})"


@dataclass(frozen=True)
class _Issued:
    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    expires: float


class ServiceAccountTokens:
    """The ServiceAccounts of the cluster, the tokens minted for them, and the review of such tokens."""

    def __init__(self, *, issuer: str = DEFAULT_ISSUER, audiences: tuple[str, ...] | None = None) -> None:
        self.issuer = issuer
        self.api_audiences = audiences or (issuer,)
        self._lock = threading.Lock()
        self._keys = IdTokenIssuer()
        self._accounts: dict[tuple[str, str], Json] = {}
        self._issued: dict[str, _Issued] = {}
        self._skew = 0.0
        self._salt = secrets.token_bytes(16)  # stable reviewer tokens across reset() (see reviewer_token)
        self.minted = 0

    # -- state -----------------------------------------------------------------------------
    def now(self) -> float:
        with self._lock:
            return time.time() + self._skew

    def advance(self, seconds: float) -> None:
        """Move this API server's clock forward (tokens expire sooner); reset() puts it back."""
        with self._lock:
            self._skew += seconds

    def reset(self) -> None:
        with self._lock:
            self._accounts.clear()
            self._issued.clear()
            self._skew = 0.0
            self.minted = 0

    def state(self) -> Json:
        with self._lock:
            return {
                "serviceaccounts": [f"{ns}/{name}" for ns, name in sorted(self._accounts)],
                "tokens_minted": self.minted,
                "clock_skew_s": self._skew,
            }

    def add_service_account(self, namespace: str, name: str) -> Json:
        """Create (or keep) a ServiceAccount; a recreated account gets a new uid (its old tokens fail review)."""
        with self._lock:
            found = self._accounts.get((namespace, name))
            if found is None:
                found = {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "uid": str(uuid.uuid4()),
                        "creationTimestamp": utc_now(),
                    },
                }
                self._accounts[(namespace, name)] = found
            return copy.deepcopy(found)

    def delete_service_account(self, namespace: str, name: str) -> bool:
        with self._lock:
            return self._accounts.pop((namespace, name), None) is not None

    def get_service_account(self, namespace: str, name: str) -> Json:
        with self._lock:
            found = self._accounts.get((namespace, name))
        if found is None:
            raise not_found("serviceaccounts", name)
        return copy.deepcopy(found)

    def reviewer_token(self, user: str) -> str:
        """A static bearer token for `user`, the same for this emulator's life (it survives reset())."""
        return "kube-reviewer-" + hmac.new(self._salt, user.encode(), hashlib.sha256).hexdigest()[:40]

    # -- TokenRequest -----------------------------------------------------------------------
    def token_request(self, namespace: str, name: str, body: bytes) -> Json:
        """Mint a token for namespace/name (the caller is already authorized); the TokenRequest answered."""
        try:
            request = json.loads(body or b"{}")
        except ValueError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        if not isinstance(request, dict):
            raise bad_request("the body of the request was in an unknown format")
        meta = request.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            # storage/token.go: the body's name, when given, must be the account's
            raise invalid(
                "TokenRequest",
                name,
                [
                    FieldError(
                        "FieldValueInvalid",
                        "metadata.name",
                        "must match the service account name if specified",
                        meta["name"],
                    )
                ],
                group=AUTHENTICATION_GROUP,
            )
        spec = request.get("spec") or {}
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = DEFAULT_EXPIRATION_SECONDS
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise bad_request("json: cannot unmarshal into Go struct field TokenRequestSpec.spec.expirationSeconds")
        errors: list[FieldError] = []
        if seconds < MIN_EXPIRATION_SECONDS:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.expirationSeconds",
                    "may not specify a duration less than 10 minutes",
                    seconds,
                )
            )
        if seconds > MAX_EXPIRATION_SECONDS:
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.expirationSeconds",
                    "may not specify a duration larger than 2^32 seconds",
                    seconds,
                )
            )
        account = self.get_service_account(namespace, name)  # 404 first: storage/token.go gets the account first
        if errors:
            raise invalid("TokenRequest", "", errors, group=AUTHENTICATION_GROUP)
        audiences = tuple(str(a) for a in (spec.get("audiences") or self.api_audiences))
        uid = account["metadata"]["uid"]
        issued_at = self.now()
        expires = issued_at + seconds
        claims = {
            "aud": list(audiences),
            "exp": int(expires),
            "iat": int(issued_at),
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
            "nbf": int(issued_at),
            "sub": service_account_user(namespace, name),
        }
        token = self._keys.mint(claims)
        with self._lock:
            self.minted += 1
            if len(self._issued) >= _ISSUED_KEPT:
                oldest = min(self._issued, key=lambda k: self._issued[k].expires)
                del self._issued[oldest]
            self._issued[_digest(token)] = _Issued(namespace, name, uid, audiences, expires)
        return {
            "kind": "TokenRequest",
            "apiVersion": f"{AUTHENTICATION_GROUP}/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": _rfc3339(issued_at)},
            "spec": {"audiences": list(audiences), "expirationSeconds": seconds, "boundObjectRef": None},
            "status": {"token": token, "expirationTimestamp": _rfc3339(expires)},
        }

    # -- TokenReview ------------------------------------------------------------------------
    def authenticate(self, token: str, audiences: tuple[str, ...] = ()) -> tuple[str | None, tuple[str, ...], str]:
        """(user or None, the audiences granted, the error) of a token, as pkg/serviceaccount/jwt.go decides."""
        requested = audiences or self.api_audiences
        with self._lock:
            issued = self._issued.get(_digest(token))
            account = self._accounts.get((issued.namespace, issued.name)) if issued else None
            now = time.time() + self._skew
        if issued is None:
            return None, (), "invalid bearer token"
        if issued.expires <= now:
            return None, (), "service account token has expired"
        if account is None:
            return None, (), f'serviceaccounts "{issued.name}" not found'
        if account["metadata"]["uid"] != issued.uid:
            return None, (), f"service account UID ({account['metadata']['uid']}) does not match claim ({issued.uid})"
        granted = tuple(a for a in requested if a in issued.audiences)
        if not granted:
            wanted = _go_list(requested)
            return (
                None,
                (),
                f"token audiences {_go_list(issued.audiences)} is invalid for the target audiences {wanted}",
            )
        return service_account_user(issued.namespace, issued.name), granted, ""

    def token_review(self, body: bytes) -> Json:
        """Answer a TokenReview (the caller is already authorized to create one)."""
        try:
            review = json.loads(body or b"{}")
        except ValueError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        spec = (review or {}).get("spec") if isinstance(review, dict) else None
        if not isinstance(spec, dict):
            spec = {}
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            # pkg/registry/authentication/tokenreview/storage.go: "token is required for TokenReview in authentication"
            raise ApiError(400, "BadRequest", "token is required for TokenReview in authentication")
        wanted = tuple(str(a) for a in spec.get("audiences") or ())
        user, granted, error = self.authenticate(token, wanted)
        status: Json = {"user": {}}
        if user is not None:
            namespace = user.split(":")[2]
            status = {
                "authenticated": True,
                "user": {
                    "username": user,
                    "uid": self._uid_of(user),
                    "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
                },
                "audiences": list(granted),
            }
        else:
            status["error"] = f"[invalid bearer token, {error}]" if error != "invalid bearer token" else error
        return {
            "kind": "TokenReview",
            "apiVersion": f"{AUTHENTICATION_GROUP}/v1",
            "metadata": {"creationTimestamp": None},
            "spec": {"token": token, **({"audiences": list(wanted)} if wanted else {})},
            "status": status,
        }

    def _uid_of(self, user: str) -> str:
        _, _, namespace, name = user.split(":", 3)
        with self._lock:
            account = self._accounts.get((namespace, name))
        return str(account["metadata"]["uid"]) if account else ""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _rfc3339(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _go_list(values: tuple[str, ...]) -> str:
    """A []string as Go's %q prints it: ["a" "b"]."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"
