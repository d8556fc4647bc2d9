"""The settings of the Kubernetes ServiceAccount identity (`*_AUTH=service-account-token`), its scheme and private CAs.

Read once by config.load (`read`), beside the other settings; this module owns these variables:

- HYPERFLEET_API_TOKEN_CLUSTER (projects/P/locations/L/clusters/C) and HYPERFLEET_API_SERVICE_ACCOUNT
  (namespace/name): where the token is minted and for whom; required with HYPERFLEET_API_AUTH=service-account-token,
  refused otherwise (a setting that does nothing is a mistake).
- HYPERFLEET_API_AUTH_SCHEME: the Authorization scheme, `ServiceAccount` (hyperfleet-gateway's machine identity)
  or `Bearer`; default `ServiceAccount` with a ServiceAccount token, else `Bearer`; an ID token is `Bearer` only.
- PULL_SECRET_SERVICE_TOKEN_CLUSTER and PULL_SECRET_SERVICE_SERVICE_ACCOUNT: the same for
  PULL_SECRET_SERVICE_AUTH=service-account-token, defaulting to HYPERFLEET_API_'s; the service takes `Bearer`
  (its design record, §3.4).
- HYPERFLEET_API_CA_BUNDLE, PULL_SECRET_SERVICE_CA_BUNDLE: a PEM file of the root CA(s) the service's TLS chains to
  (a gateway's self-signed root), in place of the public roots; any mode.
A token file is refused in this mode, as with google-id-token: one credential, never two.

One identity per audience (`shared`): the token the function sends the Pull Secret Service must never be one the
HyperFleet API (or its gateway) admits, else the service, compromised or hostile, could replay what it receives
there. Two credentials are one when their issuer, subject and audience are the same: ServiceAccount tokens of one
token cluster and account for one audience, Google ID tokens of the runtime account for one audience, or one token
file. The settings are compared at cold start (pullsecret.source.service.settings); the doctor compares the minted
tokens' claims too, which catches what names cannot (one cluster named by its project id and its number).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pullsecret.errors import ConfigError
from pullsecret.model.names import GKE_CLUSTER_RE
from pullsecret.settings import envvars

MODE = "service-account-token"
SCHEMES = ("ServiceAccount", "Bearer")
# namespace/name: a namespace is a DNS-1123 label, a ServiceAccount name a DNS-1123 subdomain.
ACCOUNT_RE = re.compile(r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$")


@dataclass(frozen=True)
class TokenSource:
    """Where a ServiceAccount token is minted: the GKE cluster's TokenRequest, for namespace/name."""

    cluster: str
    namespace: str
    name: str
    settings: str  # the variables that say so, for messages: "HYPERFLEET_API_TOKEN_CLUSTER, ..."

    @property
    def account(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class CallerIdentity:
    """How the function presents itself to HyperFleet and to the Pull Secret Service beyond the token itself."""

    hyperfleet_token: TokenSource | None = None  # HYPERFLEET_API_AUTH=service-account-token
    hyperfleet_scheme: str = "Bearer"
    hyperfleet_ca_bundle: str | None = None
    service_token: TokenSource | None = None  # PULL_SECRET_SERVICE_AUTH=service-account-token
    service_ca_bundle: str | None = None


def read(env: Mapping[str, str]) -> CallerIdentity:
    """The caller-identity settings; ConfigError naming the first bad variable."""
    api_mode = envvars.get(env, "HYPERFLEET_API_AUTH") == MODE
    hyperfleet = _source(
        env, "HYPERFLEET_API_TOKEN_CLUSTER", "HYPERFLEET_API_SERVICE_ACCOUNT", required=api_mode, fallback=None
    )
    if api_mode and envvars.get(env, "HYPERFLEET_API_TOKEN_FILE") is not None:
        raise ConfigError(f"HYPERFLEET_API_TOKEN_FILE must be unset with HYPERFLEET_API_AUTH={MODE}")
    scheme = envvars.get(env, "HYPERFLEET_API_AUTH_SCHEME") or ("ServiceAccount" if api_mode else "Bearer")
    if scheme not in SCHEMES:
        raise ConfigError(f"HYPERFLEET_API_AUTH_SCHEME must be ServiceAccount or Bearer, got {scheme!r}")
    if scheme != "Bearer" and envvars.get(env, "HYPERFLEET_API_AUTH") == "google-id-token":
        raise ConfigError("HYPERFLEET_API_AUTH_SCHEME must be Bearer with HYPERFLEET_API_AUTH=google-id-token")
    service_mode = envvars.get(env, "PULL_SECRET_SERVICE_AUTH") == MODE
    service = _source(
        env,
        "PULL_SECRET_SERVICE_TOKEN_CLUSTER",
        "PULL_SECRET_SERVICE_SERVICE_ACCOUNT",
        required=service_mode,
        fallback=hyperfleet,
    )
    if service_mode and envvars.get(env, "PULL_SECRET_SERVICE_TOKEN_FILE") is not None:
        raise ConfigError(f"PULL_SECRET_SERVICE_TOKEN_FILE must be unset with PULL_SECRET_SERVICE_AUTH={MODE}")
    return CallerIdentity(
        hyperfleet_token=hyperfleet,
        hyperfleet_scheme=scheme,
        hyperfleet_ca_bundle=envvars.readable_file(env, "HYPERFLEET_API_CA_BUNDLE"),
        service_token=service if service_mode else None,
        service_ca_bundle=envvars.readable_file(env, "PULL_SECRET_SERVICE_CA_BUNDLE"),
    )


def _source(
    env: Mapping[str, str], cluster_name: str, account_name: str, *, required: bool, fallback: TokenSource | None
) -> TokenSource | None:
    """PREFIX_TOKEN_CLUSTER and PREFIX_SERVICE_ACCOUNT, each defaulting to `fallback`'s; None when not `required`."""
    prefix = cluster_name.removesuffix("_TOKEN_CLUSTER")
    cluster = envvars.get(env, cluster_name)
    account = envvars.get(env, account_name)
    if not required:
        for name, value in ((cluster_name, cluster), (account_name, account)):
            if value is not None:
                raise ConfigError(f"{name} must be unset unless {prefix}_AUTH={MODE}")
        return None
    if cluster is not None and not GKE_CLUSTER_RE.match(cluster):
        raise ConfigError(f"{cluster_name} must be projects/P/locations/L/clusters/C, got {cluster!r}")
    if account is not None and not ACCOUNT_RE.match(account):
        raise ConfigError(f"{account_name} must be namespace/name (a Kubernetes ServiceAccount), got {account!r}")
    if cluster is None and fallback is not None:
        cluster, cluster_name = fallback.cluster, f"HYPERFLEET_API_TOKEN_CLUSTER (no {cluster_name})"
    if account is None and fallback is not None:
        account, account_name = fallback.account, f"HYPERFLEET_API_SERVICE_ACCOUNT (no {account_name})"
    if cluster is None or account is None:
        missing = cluster_name if cluster is None else account_name
        raise ConfigError(f"{missing} is required with {prefix}_AUTH={MODE}")
    namespace, _, name = account.partition("/")
    return TokenSource(cluster, namespace, name, f"{cluster_name}, {account_name}, {prefix}_AUDIENCE")


@dataclass(frozen=True)
class Presented:
    """The bearer credential one client presents, as its settings describe it: who issues it, for whom, for which
    audience; `settings` names the variables that say so (for messages). Never the token."""

    issuer: str
    subject: str
    audience: str
    settings: str


def presented(
    prefix: str, auth: str, *, source: TokenSource | None, audience: str, token_file: str | None
) -> Presented | None:
    """What PREFIX_AUTH=`auth` presents (None: no token at all, token-file mode without a file)."""
    if auth == MODE and source is not None:
        return Presented(f"the token cluster {source.cluster}", source.account, audience, source.settings)
    if auth == "google-id-token":
        return Presented("Google", "the runtime service account", audience, f"{prefix}_AUTH, {prefix}_AUDIENCE")
    if token_file is not None:  # one file is one token, whatever audience it was made for
        return Presented(f"the file {os.path.realpath(token_file)}", "", "", f"{prefix}_TOKEN_FILE")
    return None


def shared(hyperfleet: Presented | None, service: Presented | None) -> str | None:
    """Why the service's credential is one the HyperFleet API admits (the setting to change first, then both
    credentials' settings; SHARED_FIX says what to do), or None when they differ in issuer, subject or audience."""
    if hyperfleet is None or service is None or hyperfleet != replace(service, settings=hyperfleet.settings):
        return None
    variable = "PULL_SECRET_SERVICE_AUDIENCE" if service.audience else "PULL_SECRET_SERVICE_TOKEN_FILE"
    whose = f" for {service.subject}" if service.subject else ""
    audience = f" with audience {service.audience!r}" if service.audience else ""
    return (
        f"{variable} makes the Pull Secret Service's token the HyperFleet API's: both come from {service.issuer}"
        f"{whose}{audience} (the service's: {service.settings}; the API's: {hyperfleet.settings}), so the service "
        "could replay what it receives at the API"
    )


SHARED_FIX = (
    "Give the service an audience of its own: PULL_SECRET_SERVICE_AUDIENCE unset (the service's URL) or the "
    "audience its TokenReview or ID-token check expects, never HYPERFLEET_API_AUDIENCE; or, with "
    "service-account-token, a ServiceAccount of its own (PULL_SECRET_SERVICE_SERVICE_ACCOUNT); with token-file, "
    "a token of its own (PULL_SECRET_SERVICE_TOKEN_FILE)"
)
