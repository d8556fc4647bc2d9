"""The delivery modes by KUBERNETES_DELIVERY value: adding a mode is one package (its `registration` module's
REGISTRATION: its value, words, settings record, declarations and factory; its machinery beside it) and one line
here (the values KUBERNETES_DELIVERY accepts are these names: pullsecret.configured).

One shape with pullsecret.source.sources: a tuple of registrations, each imported from its package's `registration`
module, which imports none of the mode's machinery (a registration's factory imports it when the mode is built):
direct mode's Kubernetes client, GKE client and admission-policy check stay out of an external-secrets instance's
cold start, and the reverse.
"""

from __future__ import annotations

from pullsecret.delivery.base import Delivery, Registration, Wiring
from pullsecret.delivery.direct import registration as direct
from pullsecret.delivery.external_secrets import registration as external_secrets

MODES: tuple[Registration, ...] = (direct.REGISTRATION, external_secrets.REGISTRATION)


def names() -> tuple[str, ...]:
    """The KUBERNETES_DELIVERY values the registered modes answer to."""
    return tuple(registered.name for registered in MODES)


def registration(mode: str) -> Registration:
    """The registration of a KUBERNETES_DELIVERY value; raises KeyError when no mode is registered under it."""
    for registered in MODES:
        if registered.name == mode:
            return registered
    raise KeyError(f"no delivery mode is registered as {mode!r}")


def build(wiring: Wiring) -> Delivery:
    """The delivery KUBERNETES_DELIVERY names (its machinery imported now)."""
    return registration(wiring.settings.kubernetes_delivery).build(wiring)
