"""The platform source (PULL_SECRET_SOURCE) as pullsecret.source.sources registers it: the variable that selects it,
its settings, what it declares (failure reasons, the services it calls) and its factory, importing none of its
machinery until built."""

from __future__ import annotations

from typing import TypedDict

from pullsecret.model.status import Declared
from pullsecret.source.base import Registration, Source, Wiring
from pullsecret.source.platform import settings


class PlatformData(TypedDict, total=False):
    """The platform source's own status `data` keys: none (one pull secret shared by every cluster)."""


# What a cluster's owner reads for this source's own failures (docs/contract.md's table).
REASONS = {
    "SourceNotFound": "The platform's registry credentials were not found; the platform team must restore them.",
    "SourceUnavailable": "The platform's registry credentials are unusable; the platform team must fix them.",
}


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
