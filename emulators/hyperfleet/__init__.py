"""Emulator of the HyperFleet API (clusters and adapter statuses), validated against the vendored OpenAPI specs.

The parts: ``emulator`` (the emulator: lifecycle, serving, routing and the admin API).
"""

from emulators.hyperfleet.emulator import HyperFleetEmulator, rfc3339

__all__ = ["HyperFleetEmulator", "rfc3339"]
