"""The Pull Secret Service's settings (PULL_SECRET_SERVICE_*), read and checked at cold start
(pullsecret.configured). Which source is selected is the registry's choice (pullsecret.source.sources).

The service's credential is checked against the HyperFleet API's (pullsecret.settings.token_source.shared): a token
the service receives must never be one the API admits (same token cluster, account and audience; same runtime
account and audience; the same token file), or the service could replay it there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pullsecret.errors import ConfigError
from pullsecret.settings import common, envvars, token_source

NAME = "service"
SELECTED_BY = "PULL_SECRET_SERVICE_URL"
API_AUTH_MODES = ("token-file", "google-id-token", "service-account-token")
REGISTRY_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# PULL_SECRET_SERVICE_TTL: how long one instance keeps the service's answer for a cluster (pullsecret.source.service.
# source). 6 h: a ready cluster's Sentinel events (every 30 min) then cost one read in twelve, 10,000 clusters about
# 28 of the 100 requests a minute DDR §3.5 gives one ServiceAccount per instance that sees them all; a rotation made
# at the service by other means reaches the cluster within it, inside the dual-credential period it lengthens
# (docs/contract.md §3b). At most 7 days, the DDR's estimated rotation; 0 asks on every event.
DEFAULT_TTL_S = 21_600.0


@dataclass(frozen=True)
class ServiceSettings:
    """The service's base URL (None: this source is not the one selected), how the function authenticates to it,
    the registries it asks for, and its read timeout."""

    url: str | None = None
    auth: str = "google-id-token"
    audience: str | None = None
    token_file: str | None = None
    registries: tuple[str, ...] = ("quay", "rhit")
    timeout_s: float = 10.0
    ttl_s: float = DEFAULT_TTL_S

    def credential(self, caller: token_source.CallerIdentity) -> token_source.Presented | None:
        """The credential PULL_SECRET_SERVICE_AUTH presents, as the settings describe it (token_source.shared)."""
        return token_source.presented(
            "PULL_SECRET_SERVICE",
            self.auth,
            source=caller.service_token,
            audience=self.audience or self.url or "",
            token_file=self.token_file,
        )


def read(env: Mapping[str, str], selected: str) -> ServiceSettings:
    """PULL_SECRET_SERVICE_* (the source `selected` by the registry: the others must be unset unless it is this one);
    raises ConfigError naming the variable."""
    timeout_s = envvars.number(env, "PULL_SECRET_SERVICE_TIMEOUT", 10.0, minimum=0.1, maximum=60)
    url = envvars.get(env, SELECTED_BY)
    if selected != NAME:
        for name in (
            "PULL_SECRET_SERVICE_AUTH",
            "PULL_SECRET_SERVICE_AUDIENCE",
            "PULL_SECRET_SERVICE_TOKEN_FILE",
            "PULL_SECRET_SERVICE_TTL",
        ):
            if envvars.get(env, name) is not None:
                raise ConfigError(f"{name} must be unset without PULL_SECRET_SERVICE_URL")
        return ServiceSettings(timeout_s=timeout_s)
    assert url is not None  # the registry selected this source: its variable is set
    base = _service_url(url)
    auth, token_file = _service_auth(env)
    audience = envvars.get(env, "PULL_SECRET_SERVICE_AUDIENCE") or base
    if len(audience) > 256 or not audience.isprintable() or " " in audience:
        raise ConfigError(f"PULL_SECRET_SERVICE_AUDIENCE must be one printable word (an audience), got {audience!r}")
    ttl_s = envvars.number(env, "PULL_SECRET_SERVICE_TTL", DEFAULT_TTL_S, minimum=0, maximum=604_800)
    own = ServiceSettings(base, auth, audience, token_file, _service_registries(env), timeout_s, ttl_s)
    refused = token_source.shared(common.hyperfleet_credential(env), own.credential(token_source.read(env)))
    if refused is not None:  # one identity per audience (docs/trust.md)
        raise ConfigError(f"{refused}. {token_source.SHARED_FIX}")
    return own


def _service_url(url: str) -> str:
    """PULL_SECRET_SERVICE_URL: https, or http to loopback only (a bearer token over plain HTTP reaches anyone on the
    path); a base URL without credentials, query or fragment."""
    parsed = envvars.url("PULL_SECRET_SERVICE_URL", url)
    if parsed.scheme != "https" and not (parsed.scheme == "http" and envvars.is_loopback(parsed.hostname)):
        raise ConfigError(f"PULL_SECRET_SERVICE_URL must be an https URL (http only to loopback), got {url!r}")
    if not parsed.hostname or parsed.username or parsed.password or parsed.query or parsed.fragment:
        raise ConfigError(f"PULL_SECRET_SERVICE_URL must be a base URL without credentials or query, got {url!r}")
    return url.rstrip("/")


def _service_auth(env: Mapping[str, str]) -> tuple[str, str | None]:
    """(PULL_SECRET_SERVICE_AUTH, PULL_SECRET_SERVICE_TOKEN_FILE): the file with token-file only."""
    auth = envvars.choice(env, "PULL_SECRET_SERVICE_AUTH", "google-id-token", API_AUTH_MODES, upper=False)
    token_file = envvars.readable_file(env, "PULL_SECRET_SERVICE_TOKEN_FILE")
    if auth == "token-file" and token_file is None:
        raise ConfigError("PULL_SECRET_SERVICE_TOKEN_FILE is required with PULL_SECRET_SERVICE_AUTH=token-file")
    if auth == "google-id-token" and token_file is not None:
        raise ConfigError("PULL_SECRET_SERVICE_TOKEN_FILE must be unset with PULL_SECRET_SERVICE_AUTH=google-id-token")
    return auth, token_file


def _service_registries(env: Mapping[str, str]) -> tuple[str, ...]:
    registries = envvars.items(env, "PULL_SECRET_SERVICE_REGISTRIES", ("quay", "rhit"))
    if not registries or len(registries) > 8 or not all(REGISTRY_ID_RE.match(r) for r in registries):
        raise ConfigError(
            "PULL_SECRET_SERVICE_REGISTRIES must be 1 to 8 comma-separated registry ids (e.g. quay,rhit), "
            f"got {env.get('PULL_SECRET_SERVICE_REGISTRIES')!r}"
        )
    return registries
