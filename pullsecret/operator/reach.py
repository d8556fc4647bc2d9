"""Whether the Google endpoints (or their emulators) a configuration points at accept a connection, before the CLI
waits on them.

Without SECRET_MANAGER_EMULATOR_HOST the clients call secretmanager.googleapis.com, and an offline workstation or a
shell that never sourced the playground's env file would retry for RETRY_DEADLINE (a minute) in silence, then say
UNAVAILABLE. A TCP connection per endpoint, bounded by PROBE_TIMEOUT_S, tells at once which endpoint was really
tried and why it was that one (the emulator variable, or its absence).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from pullsecret.delivery import modes
from pullsecret.settings.common import Settings

PROBE_TIMEOUT_S = 3.0

Connect = Callable[[tuple[str, int], float], object]


def _connect(address: tuple[str, int], timeout: float) -> object:
    with socket.create_connection(address, timeout=timeout):
        return None


def endpoints(settings: Settings) -> list[tuple[str, str, str]]:
    """(service, host:port, why this one) for each endpoint this configuration's commands call."""
    found = []
    # The GKE endpoint only for a mode that declares it calls GKE (its registration's `declared.services`).
    calls_gke = "gke" in modes.registration(settings.kubernetes_delivery).declared.services
    for service, variable, host, google in (
        ("Secret Manager", "SECRET_MANAGER_EMULATOR_HOST", settings.secret_manager_emulator_host, "secretmanager"),
        ("GKE", "GKE_EMULATOR_HOST", settings.gke_emulator_host, "container"),
    ):
        if google == "container" and not calls_gke:
            continue
        if host:
            found.append((service, host, f"the emulator {variable} names"))
        else:
            found.append((service, f"{google}.googleapis.com:443", f"Google's endpoint: {variable} is unset"))
    return found


def _address(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def unreachable(settings: Settings, *, connect: Connect = _connect, playground_running: bool = False) -> str | None:
    """A person's line naming the first endpoint that refuses a connection, what it was and the fix; else None."""
    for service, hostport, why in endpoints(settings):
        try:
            connect(_address(hostport), PROBE_TIMEOUT_S)
        except (OSError, ValueError) as exc:
            said = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if "unset" in why and playground_running:
                fix = "a playground is running in this checkout: run `source .playground/env` in this shell"
            elif "unset" in why:
                fix = "check the network (or set the emulator variable: `make up` prints it)"
            else:
                fix = "is the playground running? `make up`, then `source .playground/env`"
            return f"cannot reach {service} at {hostport} ({why}): {said}; {fix}"
    return None
