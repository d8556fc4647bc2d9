"""The Pull Secret Service source (PULL_SECRET_SERVICE_URL) as pullsecret.source.sources registers it: the variable
that selects it, its settings, what it declares (status keys, failure reasons, the services it calls) and its
factory, importing none of its machinery until built."""

from __future__ import annotations

from typing import Any, TypedDict

from pullsecret.model.status import Declared
from pullsecret.source.base import Registration, Source, Wiring
from pullsecret.source.service import settings

SERVICE = "pullsecretservice"  # the `service` its errors name


class ServiceData(TypedDict, total=False):
    """The service source's own status `data` keys."""

    source: str  # the source that answered
    minted: list[dict[str, Any]]  # per registry: its id, the username's fingerprint, when it was created
    revoked: str  # deletion: the source's answer to revoking the cluster's credentials


# What a cluster's owner reads for this source's own failures (docs/contract.md's table).
REASONS = {
    "PullSecretServiceRejected": "The Pull Secret Service refused this cluster; the platform team must fix it.",
}


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
