"""KUBERNETES_DELIVERY=direct as pullsecret.delivery.modes registers it: its words, its settings, what it declares
(status keys, failure reasons, the services it calls) and its factory, importing none of its machinery until built."""

from __future__ import annotations

from pullsecret.delivery.base import Delivery, Registration, Wiring
from pullsecret.delivery.direct import settings
from pullsecret.delivery.direct.reports import REASONS, WORDING, DirectData
from pullsecret.model.status import Declared


def build(wiring: Wiring) -> Delivery:
    """The direct delivery (pullsecret.delivery.direct.mode, imported now: an instance of another mode never loads
    the Kubernetes client)."""
    from pullsecret.delivery.direct import mode

    return mode.build(wiring)


REGISTRATION = Registration(
    settings.MODE,
    WORDING,
    build,
    settings.read,
    Declared(DirectData, REASONS, services=("gke", "kubernetes")),
)
