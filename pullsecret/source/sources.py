"""The pull-secret sources: the one configured is the source (configuration allows exactly one). Adding a source is
one package (a `Source` and its factory, registered as its module's REGISTRATION) and one line here."""

from __future__ import annotations

from pullsecret.errors import ConfigError
from pullsecret.source.base import Registration, Source, Wiring
from pullsecret.source.platform import source as platform
from pullsecret.source.service import source as service

SOURCES: tuple[Registration, ...] = (service.REGISTRATION, platform.REGISTRATION)


def build(wiring: Wiring) -> Source:
    """The configured source (configured.load requires one: PULL_SECRET_SOURCE or PULL_SECRET_SERVICE_URL)."""
    for registered in SOURCES:
        source = registered.build(wiring)
        if source is not None:
            return source
    raise ConfigError("no pull-secret source configured: set PULL_SECRET_SOURCE or PULL_SECRET_SERVICE_URL")
