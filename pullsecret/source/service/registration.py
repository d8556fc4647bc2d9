"""The Pull Secret Service source (PULL_SECRET_SERVICE_URL) as pullsecret.source.sources registers it: the variable
that selects it, its settings, what it declares (status keys, failure reasons, the services it calls) and its
factory, importing none of its machinery until built."""

from __future__ import annotations

from pullsecret.model.status import Declared
from pullsecret.source.base import Registration, Source, Wiring
from pullsecret.source.service import settings
from pullsecret.source.service.reports import REASONS, SERVICE, ServiceData


def build(wiring: Wiring) -> Source:
    """The service source (pullsecret.source.service.source, imported now)."""
    from pullsecret.source.service import source

    return source.build(wiring)


REGISTRATION = Registration(
    settings.NAME,
    settings.SELECTED_BY,
    "the HyperFleet Pull Secret Service",
    True,  # each cluster's own, revocable credentials
    build,
    settings.read,
    Declared(ServiceData, REASONS, services=(SERVICE,)),
)
