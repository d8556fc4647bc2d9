"""The Pull Secret Service's settings (PULL_SECRET_SERVICE_*), read and checked at cold start
(pullsecret.settings.configured).

Exactly one pull-secret source is configured: PULL_SECRET_SOURCE (the platform secret) or PULL_SECRET_SERVICE_URL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pullsecret.errors import ConfigError
from pullsecret.settings import envvars

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
    url: str | None = None
    auth: str = "google-id-token"
    audience: str | None = None
    token_file: str | None = None
    registries: tuple[str, ...] = ("quay", "rhit")
    ttl_s: float = DEFAULT_TTL_S


def read(env: Mapping[str, str]) -> ServiceSettings:
    """PULL_SECRET_SERVICE_*: exactly one of PULL_SECRET_SOURCE and PULL_SECRET_SERVICE_URL names the source."""
    url = envvars.get(env, "PULL_SECRET_SERVICE_URL")
    if (url is None) == (envvars.get(env, "PULL_SECRET_SOURCE") is None):
        raise ConfigError(
            "exactly one of PULL_SECRET_SOURCE (the platform pull secret in Secret Manager) and "
            "PULL_SECRET_SERVICE_URL (the HyperFleet Pull Secret Service) must be set, "
            + ("both are" if url is not None else "neither is")
        )
    if url is None:
        for name in (
            "PULL_SECRET_SERVICE_AUTH",
            "PULL_SECRET_SERVICE_AUDIENCE",
            "PULL_SECRET_SERVICE_TOKEN_FILE",
            "PULL_SECRET_SERVICE_TTL",
        ):
            if envvars.get(env, name) is not None:
                raise ConfigError(f"{name} must be unset without PULL_SECRET_SERVICE_URL")
        return ServiceSettings()
    base = _service_url(url)
    auth, token_file = _service_auth(env)
    audience = envvars.get(env, "PULL_SECRET_SERVICE_AUDIENCE") or base
    if len(audience) > 256 or not audience.isprintable() or " " in audience:
        raise ConfigError(f"PULL_SECRET_SERVICE_AUDIENCE must be one printable word (an audience), got {audience!r}")
    ttl_s = envvars.number(env, "PULL_SECRET_SERVICE_TTL", DEFAULT_TTL_S, minimum=0, maximum=604_800)
    return ServiceSettings(base, auth, audience, token_file, _service_registries(env), ttl_s)


def fields(env: Mapping[str, str]) -> dict[str, Any]:
    """The Settings fields this source owns (its registration's settings reader); raises ConfigError."""
    service = read(env)
    return {
        "pull_secret_service_url": service.url,
        "pull_secret_service_auth": service.auth,
        "pull_secret_service_audience": service.audience,
        "pull_secret_service_token_file": service.token_file,
        "pull_secret_service_registries": service.registries,
        "pull_secret_service_ttl_s": service.ttl_s,  # not a Settings field: Settings.options
    }


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
