"""The delivery modes by KUBERNETES_DELIVERY value: adding a mode is one module (a `Delivery` and its factory) and
one line here (config.DELIVERY_MODES lists the values the variable accepts).

Only the configured mode's module is imported: direct mode's Kubernetes client, GKE client and admission-policy
check stay out of an external-secrets instance's cold start, and the reverse.
"""

from __future__ import annotations

import importlib

from pullsecret.delivery.base import Delivery, Factory, Wiring

MODES: dict[str, str] = {
    "direct": "pullsecret.delivery.direct.mode",
    "external-secrets": "pullsecret.delivery.external_secrets.mode",
}


def factory(mode: str) -> Factory:
    """The factory of a KUBERNETES_DELIVERY value (imports that mode's module)."""
    built: Factory = importlib.import_module(MODES[mode]).build
    return built


def build(wiring: Wiring) -> Delivery:
    """The delivery KUBERNETES_DELIVERY names."""
    return factory(wiring.settings.kubernetes_delivery)(wiring)
