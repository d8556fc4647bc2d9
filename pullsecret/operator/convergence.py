"""Which credentials a cluster holds against its source's current ones (`fleet`'s CREDS, `rekey --watch`).

The configured source answers (its `Rekeying.held`, pullsecret.source.base): a source that holds each cluster's own
credentials compares them with what our last status says the cluster was delivered (`current`, `behind` with why,
`none`, `?`); one whose pull secret every cluster shares answers `-`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pullsecret.source.base import Held

if TYPE_CHECKING:
    from pullsecret.app import Application

__all__ = ["Held", "held"]


def held(app: Application, cluster_id: str, ours: dict[str, Any]) -> Held:
    """The cluster's credentials against the source's current ones (at most one call); never raises for the source."""
    return app.source.rekeying().held(cluster_id, ours)
