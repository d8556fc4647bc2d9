"""The Pull Secret Service source's part of the status reports: the service it names, its own `data` keys and
its failure reasons (what its registration declares; the client and the source read them from here).
"""

from __future__ import annotations

from typing import Any, TypedDict

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
