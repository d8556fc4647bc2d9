"""The platform source's settings (PULL_SECRET_SOURCE, PULL_SECRET_SOURCE_TTL), read and checked at cold start
(pullsecret.configured)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pullsecret.model.names import SOURCE_VERSION_RE
from pullsecret.settings import envvars

NAME = "platform"
SELECTED_BY = "PULL_SECRET_SOURCE"


@dataclass(frozen=True)
class PlatformSettings:
    """The platform pull secret's version (None: this source is not the one selected) and its cache's TTL."""

    version: str | None = None  # projects/P/secrets/S/versions/(latest|N)
    ttl_s: float = 30.0


def read(env: Mapping[str, str], selected: str) -> PlatformSettings:
    """PULL_SECRET_SOURCE and PULL_SECRET_SOURCE_TTL (the source `selected` by the registry); raises ConfigError
    naming the variable."""
    version = envvars.matching(env, SELECTED_BY, SOURCE_VERSION_RE, "projects/P/secrets/S/versions/(latest|N)")
    ttl = envvars.number(env, "PULL_SECRET_SOURCE_TTL", 30.0, minimum=0, maximum=3600)
    return PlatformSettings(version if selected == NAME else None, ttl)
