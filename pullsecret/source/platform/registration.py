"""The platform source (PULL_SECRET_SOURCE) as pullsecret.source.sources registers it: the variable that selects it,
its settings, what it declares (failure reasons, the services it calls) and its factory, importing none of its
machinery until built."""

from __future__ import annotations

from pullsecret.model.status import Declared
from pullsecret.source.base import Registration, Source, Wiring
from pullsecret.source.platform import settings
from pullsecret.source.platform.reports import REASONS, PlatformData


def build(wiring: Wiring) -> Source:
    """The platform source (pullsecret.source.platform.source, imported now)."""
    from pullsecret.source.platform import source

    return source.build(wiring)


REGISTRATION = Registration(
    settings.NAME,
    settings.SELECTED_BY,
    "the platform pull secret in Secret Manager",
    False,  # one platform pull secret shared by every cluster
    build,
    settings.read,
    Declared(PlatformData, REASONS, services=("secretmanager",)),
)
