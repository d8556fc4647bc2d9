"""The delivery modes by KUBERNETES_DELIVERY value: adding a mode is one package (a `Delivery`, its factory, its
`Wording`, registered as its module's REGISTRATION; its own settings, if any, in its package's `settings` module)
and one line here (the values KUBERNETES_DELIVERY accepts are these keys: pullsecret.settings.configured).

Only the configured mode's module is imported: direct mode's Kubernetes client, GKE client and admission-policy
check stay out of an external-secrets instance's cold start, and the reverse.
"""

from __future__ import annotations

import importlib

from pullsecret.delivery.base import Delivery, Factory, Registration, Wiring

MODES: dict[str, str] = {
    "direct": "pullsecret.delivery.direct.mode",
    "external-secrets": "pullsecret.delivery.external_secrets.mode",
}


def registration(mode: str) -> Registration:
    """The registration of a KUBERNETES_DELIVERY value (imports that mode's module); raises TypeError when the
    module registers no mode."""
    registered = importlib.import_module(MODES[mode]).REGISTRATION
    if not isinstance(registered, Registration) or registered.mode != mode:
        raise TypeError(f"{MODES[mode]} registers no delivery mode {mode!r}")
    return registered


def factory(mode: str) -> Factory:
    """The factory of a KUBERNETES_DELIVERY value (imports that mode's module)."""
    return registration(mode).build


def build(wiring: Wiring) -> Delivery:
    """The delivery KUBERNETES_DELIVERY names."""
    return factory(wiring.settings.kubernetes_delivery)(wiring)
