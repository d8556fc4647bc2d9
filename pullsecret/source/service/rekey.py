"""The Pull Secret Service's part of `rekey` and `fleet`'s CREDS: rotate a cluster's credentials, compare its own.

Rotate: the service's credentials are read (`GET`, with metadata); when they were created before the run's cutoff,
the service is asked to rotate them (`POST .../rotations`, DDR §3.2.3: a compromise sends reason `compromise` with
`force_immediate`, which revokes the old set at once; otherwise reason `manual`, which keeps the dual-credential
period until the cluster confirms). A cluster re-keyed after the cutoff (by an interrupted run, or since) is current.

Held: what a cluster holds is what our last status says it delivered (`data.minted`: per registry a fingerprint of
the credential's username, never a token); what is current is what the service serves now (`GET`, with
metadata). Equal fingerprint sets: `current`; otherwise `behind`, with why (our status's Available condition when
it is not True: the cluster's reconcile is failing or waiting, not just not yet run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pullsecret.errors import AdapterError, TerminalError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.model import events
from pullsecret.publishing import Publisher
from pullsecret.source.base import Held, Out, Rekeyed
from pullsecret.source.service.api import PullSecretServiceClient, ServiceAnswer


def created_before(answer: ServiceAnswer, cutoff: float) -> bool:
    """Any of the service's credentials created before `cutoff` (unknown times count as before)."""
    for credential in answer.credentials or ():
        created = events.parse_time(credential.created_at)
        if created is None or created.timestamp() < cutoff:
            return True
    return not answer.credentials


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


class ServiceRekeying:
    """`rekey` and CREDS through the Pull Secret Service's client."""

    def __init__(self, client: PullSecretServiceClient) -> None:
        self.client = client

    def refusal(self, *, created_before: bool, compromise: bool) -> str | None:
        return None  # both apply: the service's credentials are each cluster's own

    def rotate(self, cluster_id: str, *, cutoff: float, compromise: bool) -> Rekeyed:
        """Raises TransientError when the service is unavailable."""
        answer = self.client.get(cluster_id)
        if answer is None:
            return Rekeyed("current")  # nothing held: its first provisioning mints fresh credentials
        if not created_before(answer, cutoff):
            return Rekeyed("current")  # re-keyed after the cutoff (by this run before an interruption, or since)
        reason = "compromise" if compromise else "manual"
        try:
            started = self.client.rotate(cluster_id, reason=reason, force_immediate=compromise)
        except TerminalError as exc:
            return Rekeyed(None, f"the service refused the rotation: {exc.message}")
        if "open" in started and compromise:
            return Rekeyed(
                None,
                f"rotation {started['open']} was already {started['status']} at the service: its old credentials "
                "stay valid until the service completes it; its event is published anyway",
            )
        return Rekeyed("rotated")

    def preview(self, cluster_id: str, *, cutoff: float, compromise: bool) -> str:
        try:
            answer = self.client.get(cluster_id)
        except AdapterError as exc:
            return f"the service did not answer ({exc.reason})"
        if answer is None or not created_before(answer, cutoff):
            return f"nothing to rotate ({'none held' if answer is None else 'newer than the cutoff'})"
        how = "compromise rotation, old credentials revoked at once" if compromise else "rotation"
        return f"{how}, then its reconcile event (one Secret Manager version, one delivery write)"

    def whole_fleet(
        self,
        hyperfleet: HyperFleetClient,
        publisher: Publisher,
        *,
        out: Out,
        sleep: Callable[[float], None],
        watch_s: float | None,
    ) -> int | None:
        return None  # cluster by cluster, with the command's record

    def held(self, cluster_id: str, ours: dict[str, Any]) -> Held:
        """One GET; never raises for the service."""
        try:
            answer = self.client.get(cluster_id)
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
