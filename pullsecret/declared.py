"""What the registered delivery modes and sources declare, assembled once for the code that reports: the words a
cluster's owner reads for every failure reason, the services whose failures are the `resources` phase, and every
status `data` key a report may carry.

The model names no implementation (pullsecret.model.status holds the common reasons, pullsecret.model.status_data
the common keys); each registration declares its own (`Declared`: its status keys as a TypedDict, its reasons
with their owner-facing messages, the services it calls), and this module reads them from the registries. Callers
read `declared.WORDS` through the module (assembled at import, from the registries as they are listed).
"""

from __future__ import annotations

import typing

from pullsecret.delivery import modes
from pullsecret.model.status import Declared, Words
from pullsecret.model.status_data import StatusData
from pullsecret.source import sources

# The GKE API under any mode: the ServiceAccount token's cluster (pullsecret.identity.satoken) is read through it.
SHARED_SERVICES = ("gke",)


def declarations() -> tuple[Declared, ...]:
    """Every registered mode's and source's declaration, in the registries' order."""
    return (
        *(registered.declared for registered in modes.MODES),
        *(registered.declared for registered in sources.SOURCES),
    )


def assemble() -> Words:
    """The common words with every registered implementation's; raises ValueError when two give one reason two
    messages."""
    return Words.assembled(declarations(), services=SHARED_SERVICES)


WORDS = assemble()


def status_keys() -> set[str]:
    """Every key a report's `data` may carry: StatusData's, and each registered implementation's own."""
    keys = set(typing.get_type_hints(StatusData))
    for declared in declarations():
        if declared.keys is not None:
            keys |= set(typing.get_type_hints(declared.keys))
    return keys
