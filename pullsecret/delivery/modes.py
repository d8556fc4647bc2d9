"""The delivery modes by KUBERNETES_DELIVERY value: adding a mode is one module (a `Delivery` and its factory) and
one line here (config.DELIVERY_MODES lists the values the variable accepts)."""

from __future__ import annotations

from pullsecret.delivery import direct, external_secrets
from pullsecret.delivery.base import Delivery, Factory, Wiring

MODES: dict[str, Factory] = {
    direct.MODE: direct.build,
    external_secrets.MODE: external_secrets.build,
}


def build(wiring: Wiring) -> Delivery:
    """The delivery KUBERNETES_DELIVERY names."""
    return MODES[wiring.settings.kubernetes_delivery](wiring)
