"""The Pull Secret Service's part of `rekey` and `fleet`'s CREDS: rotate or revoke a cluster's credentials, compare.

The DDR's limits (§3.5, per authenticated ServiceAccount: 100 requests a minute on every endpoint, 10 an hour on
`/rotations`) set the pace, so each kind of re-key spends as few requests per cluster as the DDR allows:

- **Compromise** (`--compromise`): one `DELETE .../pull-secrets` (§3.2.6: every credential revoked at the
  registries at once, an open rotation cancelled), no read first; the cluster's event (published with
  pullsecret.publishing.REKEY_ATTRIBUTE) then has the function ask the generate-or-retrieve `POST` (§3.2.1), which
  mints the new set: one request on the command's identity and one on the function's per cluster, neither on the
  hourly-limited `/rotations`. Only where the run cannot know that the credentials predate its cutoff (`check`: the
  clusters after a resume's saved place, which an interrupted run may have re-keyed) is the service read first
  (`GET`), so that no cluster is re-keyed twice. A service that refuses to revoke while a rotation is open (409
  `HYPERFLEET-CNF-002`, §3.2.6's alternative) is named as a failure with what to do.
- **Routine**: the service's credentials are read (`GET`, with metadata); when they were created before the cutoff
  the service rotates them (`POST .../rotations`, reason `manual`, §3.2.3), keeping the old set valid through the
  dual-credential period. Its hourly limit makes a fleet re-key a campaign of days (`budgets` says how long before
  it starts); the command's record makes it resumable.

A cluster re-keyed after the cutoff (by an interrupted run, or since) is current.

Held: what a cluster holds is what our last status says it delivered (`data.minted`: per registry a fingerprint of
the credential's username, never a token); what is current is what the service serves now (`GET`, with
metadata). Equal fingerprint sets: `current`; otherwise `behind`, with why (our status's Available condition when
it is not True: the cluster's reconcile is failing or waiting, not just not yet run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pullsecret.errors import AdapterError, RateLimited, TerminalError, TransientError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import answer_text
from pullsecret.model import events
from pullsecret.publishing import Publisher
from pullsecret.source.base import Budget, Held, Out, RateLimits, Rekeyed
from pullsecret.source.service.api import ROTATION_OPEN, PullSecretServiceClient, ServiceAnswer

# The share of a per-minute limit a rekey run spends. §3.5's buckets start full (100 requests): over a run of
# minutes that capacity absorbs the slots' jitter and the other requests the share leaves out (new clusters'
# first POSTs), so that a 429 stays the exception; the function's steady state is subtracted as it is known.
SHARE = 0.98
SENTINEL_INTERVAL_S = 1800.0  # a ready cluster's event (Sentinel's max_age_ready): one read each with TTL 0


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
            reason = answer_text(str(condition.get("reason") or ""), 40)
            message = answer_text(str(condition.get("message") or ""), 120)
            return f"Available={condition.get('status')} {reason}: {message}".rstrip(": ")
    return None


class ServiceRekeying:
    """`rekey` and CREDS through the Pull Secret Service's client."""

    def __init__(self, client: PullSecretServiceClient, *, ttl_s: float = 0.0) -> None:
        self.client = client
        self.ttl_s = ttl_s  # the function's PULL_SECRET_SERVICE_TTL: what its steady state spends

    def refusal(self, *, created_before: bool, compromise: bool) -> str | None:
        return None  # both apply: the service's credentials are each cluster's own

    def budgets(self, *, compromise: bool, clusters: int, own_identity: bool, limits: RateLimits) -> list[Budget]:
        """DDR §3.5's limits as this run spends them: per identity, its requests per cluster and its share."""
        minute = f"{limits.per_minute:g} requests/min per ServiceAccount (DDR §3.5)"
        share = SHARE * limits.per_minute / 60.0
        # The function's steady state: one read per cluster per TTL (per Sentinel event with TTL 0).
        steady = clusters / (self.ttl_s if self.ttl_s > 0 else SENTINEL_INTERVAL_S)
        function = "the function's ServiceAccount (its generate-or-retrieve POST, beside its steady state)"
        if not compromise:
            return [
                Budget(
                    f"{limits.rotations_per_hour:g} requests/h on /rotations (DDR §3.5)",
                    "the command's ServiceAccount (POST .../rotations)",
                    1,
                    limits.rotations_per_hour / 3600.0,
                ),
                Budget(minute, "the command's ServiceAccount (GET, POST .../rotations)", 2, share),
                Budget(minute, function, 1, share - steady),
            ]
        if own_identity:
            return [
                Budget(minute, "the command's own ServiceAccount (DELETE)", 1, share),
                Budget(minute, function, 1, share - steady),
            ]
        return [
            Budget(minute, "the ServiceAccount the command shares with the function (DELETE, POST)", 2, share - steady)
        ]

    def rotate(self, cluster_id: str, *, cutoff: float, compromise: bool, check: bool = True) -> Rekeyed:
        """Raises TransientError when the service is unavailable (a 429 with its `retry_after_s`)."""
        if compromise and not check:
            return self._revoke(cluster_id)
        answer = self.client.get(cluster_id)
        if answer is None:
            return Rekeyed("current")  # nothing held: its first provisioning mints fresh credentials
        if not created_before(answer, cutoff):
            return Rekeyed("current")  # re-keyed after the cutoff (by this run before an interruption, or since)
        if compromise:
            return self._revoke(cluster_id)
        try:
            self.client.rotate(cluster_id, reason="manual", force_immediate=False)
        except TerminalError as exc:
            return Rekeyed(None, f"the service refused the rotation: {exc.message}")
        return Rekeyed("rotated")  # or one already open (409 CNF-002): it serves the new set all the same

    def _revoke(self, cluster_id: str) -> Rekeyed:
        """DELETE (§3.2.6): every credential revoked at the registries, an open rotation cancelled."""
        try:
            self.client.delete(cluster_id)
        except TerminalError as exc:
            return Rekeyed(None, f"the service refused the revocation: {exc.message}")
        except TransientError as exc:
            if ROTATION_OPEN not in exc.message:
                raise
            return Rekeyed(
                None,
                "the service refuses to revoke while a rotation is open (409 HYPERFLEET-CNF-002): the old "
                "credentials stay valid; complete or cancel that rotation at the service, then run "
                f"rekey --compromise {cluster_id}",
            )
        return Rekeyed("rotated")

    def preview(self, cluster_id: str, *, cutoff: float, compromise: bool) -> str:
        """No request: a dry run of the fleet must not spend the budget the run will need (§3.5)."""
        if compromise:
            return (
                "revoke (DELETE: every credential refused at the registries at once), then its reconcile event "
                "(the function mints the new set: one Secret Manager version, one delivery write)"
            )
        return (
            "rotation when its credentials predate the cutoff (GET, POST .../rotations), then its reconcile event "
            "(one Secret Manager version, one delivery write)"
        )

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
        """One GET; never raises for the service (a 429 is `?` with the wait it asks for)."""
        try:
            answer = self.client.get(cluster_id)
        except RateLimited as exc:
            return Held("?", "the service answered 429 (its rate limit)", retry_after_s=exc.retry_after_s)
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
