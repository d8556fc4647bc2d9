"""Which credentials a cluster holds against the Pull Secret Service's current ones (`fleet`'s CREDS, `rekey --watch`).

What a cluster holds is what our last status says it delivered (`data.minted`: per registry a fingerprint of the
credential's username, never a token); what is current is what the service serves now (`GET`, with metadata).
Equal fingerprint sets: `current`; otherwise `behind`, with why (our status's Available condition when it is
not True: the cluster's reconcile is failing or waiting, not just not yet run). In platform mode every cluster
shares one secret and there is no per-cluster credential: `-`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pullsecret.errors import AdapterError
from pullsecret.source.service.source import ServiceSource

if TYPE_CHECKING:
    from pullsecret.app import Application


@dataclass(frozen=True)
class Held:
    """One cluster's credentials against the service's: `state` is current, behind, none, ? or -."""

    state: str
    why: str = ""
    created_at: str | None = None  # the newest current credential's creation time, as the service says it


def held_fingerprints(ours: dict[str, Any]) -> frozenset[str]:
    """The username fingerprints our status says the cluster's delivered pull secret holds."""
    data = ours.get("data")
    minted = data.get("minted") if isinstance(data, dict) else None
    if not isinstance(minted, list):
        return frozenset()
    return frozenset(str(m.get("username_fingerprint")) for m in minted if isinstance(m, dict))


def _not_available(ours: dict[str, Any]) -> str | None:
    for condition in ours.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Available" and condition.get("status") != "True":
            reason = str(condition.get("reason") or "")[:40]
            message = "".join(c for c in str(condition.get("message") or "")[:120] if c.isprintable())
            return f"Available={condition.get('status')} {reason}: {message}".rstrip(": ")
    return None


def held(app: Application, cluster_id: str, ours: dict[str, Any]) -> Held:
    """The cluster's credentials against the service's current ones (one GET); never raises for the service."""
    source = app.source
    if not isinstance(source, ServiceSource):
        return Held("-", "platform mode: one shared pull secret")
    try:
        answer = source.client.get(cluster_id)
    except AdapterError as exc:
        return Held("?", f"the service did not answer: {exc.reason}")
    if answer is None:
        return Held("none", "the service holds no credentials for it")
    now = frozenset(c.username_fingerprint for c in answer.credentials)
    newest = max((c.created_at for c in answer.credentials if c.created_at), default=None)
    if not now:
        return Held("?", "the service answered no credential metadata", newest)
    if held_fingerprints(ours) == now:
        return Held("current", "", newest)
    why = _not_available(ours) or (
        "no delivery recorded in our status" if not ours else "its last reconcile delivered older credentials"
    )
    return Held("behind", why, newest)
