"""KUBERNETES_DELIVERY=external-secrets as pullsecret.delivery.modes registers it: its words, its settings, what it
declares (status keys, failure reasons, the services it calls) and its factory, importing none of its machinery
until built."""

from __future__ import annotations

from pullsecret.delivery.base import Delivery, Registration, Wiring
from pullsecret.delivery.external_secrets import settings
from pullsecret.delivery.external_secrets.reports import REASONS, WORDING, ExternalSecretsData
from pullsecret.model.status import Declared


def build(wiring: Wiring) -> Delivery:
    """The external-secrets delivery (pullsecret.delivery.external_secrets.mode, imported now)."""
    from pullsecret.delivery.external_secrets import mode

    return mode.build(wiring)


REGISTRATION = Registration(
    settings.MODE,
    WORDING,
    build,
    settings.read,
    Declared(ExternalSecretsData, REASONS, services=("secretmanager",)),
)
