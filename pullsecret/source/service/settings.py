"""The Pull Secret Service's settings (PULL_SECRET_SERVICE_*), read and checked at cold start
(pullsecret.configured). Which source is selected is the registry's choice (pullsecret.source.sources)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pullsecret.errors import ConfigError
from pullsecret.settings import envvars

NAME = "service"
SELECTED_BY = "PULL_SECRET_SERVICE_URL"
API_AUTH_MODES = ("token-file", "google-id-token", "service-account-token")
REGISTRY_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


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


def read(env: Mapping[str, str], selected: str) -> ServiceSettings:
    """PULL_SECRET_SERVICE_* (the source `selected` by the registry: the others must be unset unless it is this one);
    raises ConfigError naming the variable."""
    timeout_s = envvars.number(env, "PULL_SECRET_SERVICE_TIMEOUT", 10.0, minimum=0.1, maximum=60)
    url = envvars.get(env, SELECTED_BY)
    if selected != NAME:
        for name in ("PULL_SECRET_SERVICE_AUTH", "PULL_SECRET_SERVICE_AUDIENCE", "PULL_SECRET_SERVICE_TOKEN_FILE"):
            if envvars.get(env, name) is not None:
                raise ConfigError(f"{name} must be unset without PULL_SECRET_SERVICE_URL")
        return ServiceSettings(timeout_s=timeout_s)
    assert url is not None  # the registry selected this source: its variable is set
    base = _service_url(url)
    auth, token_file = _service_auth(env)
    audience = envvars.get(env, "PULL_SECRET_SERVICE_AUDIENCE") or base
    if len(audience) > 256 or not audience.isprintable() or " " in audience:
        raise ConfigError(f"PULL_SECRET_SERVICE_AUDIENCE must be one printable word (an audience), got {audience!r}")
    return ServiceSettings(base, auth, audience, token_file, _service_registries(env), timeout_s)


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
