"""`reconcile --dry-run`: what one reconcile would write where, found by the reconcile's reads alone; writes nothing.

It reads as the reconcile does (the cluster and its statuses, the preconditions, the source, read only (credentials
the Pull Secret Service does not hold yet are only asked for with a GET, and "would be minted"), the newest Secret
Manager version, the delivery's probe) and then stops: no Secret Manager version, no Kubernetes or IAM write, no
status report, no registry handshake. What it prints names the secret, the version it would add (or the one that
already holds the content), what the delivery would do (`Probed.dry_run`: each mode says it), fingerprints
(SHA-256, 12 hex digits: never a credential), and which registries' entries would change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pullsecret.model import dockerconfig, preconditions, status_data
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.reconcile import merge, provisioning
from pullsecret.reconcile.target import target_of
from pullsecret.retrying import Deadline
from pullsecret.secretstore.reads import Latest
from pullsecret.source.base import WouldCreate

if TYPE_CHECKING:
    from pullsecret.app import Application


@dataclass(frozen=True)
class Plan:
    """What a reconcile would do; `lines` say it to a person."""

    result: str  # would-write, unchanged, skipped, finalize, gone
    lines: list[str] = field(default_factory=list)


def registry_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Each registry whose entry would change, as `host (added|changed|removed)`, by per-registry fingerprint."""
    changes = [f"{r} (added)" for r in sorted(set(after) - set(before))]
    changes += [f"{r} (changed)" for r in sorted(set(after) & set(before)) if after[r] != before[r]]
    changes += [f"{r} (removed)" for r in sorted(set(before) - set(after))]
    return changes


def _stored_lines(latest: Latest, secret_name: str, secret: PullSecret, lines: list[str]) -> tuple[str, bool]:
    """(the version the Secret would name, whether Secret Manager would get a version); adds what it found."""
    holding = latest.holding(secret.canonical)
    before: dict[str, str] = {}
    if latest.state == "enabled" and latest.data is not None:
        before = dockerconfig.parse(latest.data, source="Secret Manager").registry_fingerprints()
    if holding is not None:
        lines.append(f"Secret Manager: {holding} already holds it; no new version")
        version = holding
    else:
        now = {"enabled": f"newest {latest.name}", "unusable": f"newest {latest.name} unusable"}.get(
            latest.state, "no version yet"
        )
        lines.append(f"Secret Manager: would add a version to {secret_name} ({now})")
        version = f"{secret_name}/versions/(next)"
    changes = registry_changes(before, secret.registry_fingerprints())
    lines.append("registries that would change: " + (", ".join(changes) if changes else "none"))
    return version, holding is None


def plan(app: Application, cluster_id: str) -> Plan:
    """The reads of one reconcile and what they say it would write; raises what those reads raise."""
    settings = app.settings
    deadline = Deadline(settings.retry_deadline_s)
    cluster = app.hyperfleet.get_cluster(cluster_id)
    if cluster is None:
        return Plan("gone", ["the HyperFleet API does not know this cluster: the reconcile would do nothing"])
    statuses = app.hyperfleet.list_statuses(cluster_id)
    generation = preconditions.cluster_generation(cluster)
    decision = preconditions.evaluate(cluster, statuses, settings, cluster_id=cluster_id)
    if isinstance(decision, preconditions.NotMet):
        return Plan("skipped", [f"preconditions not met ({decision.message}): it would only report that"])
    if isinstance(decision, preconditions.Deleting):
        return Plan(
            "finalize", ["the cluster is being deleted: the reconcile would finalize it (run it without --dry-run)"]
        )
    target = target_of(settings, cluster_id, cluster, decision)
    own = preconditions.statuses_by_adapter(statuses).get(settings.adapter_name)
    # As the reconcile starts it (h41's first provisioning included); create=False keeps every path to a GET.
    fetch = app.source.start(cluster_id, deadline, first=status_data.first_provisioning(own))
    try:
        merged, _own = merge.merged(fetch.pull_secret(decision, deadline, create=False), decision, settings)
    except WouldCreate as exc:
        return Plan(
            "would-write",
            [
                f"cluster {cluster_id} generation {generation}: {exc}; they would be minted, then stored in "
                f"{target.secret_name} and delivered",
                "status: would report applied",
            ],
        )
    latest = app.store.reads.latest(target.secret_name, deadline)
    probed = app.delivery.probe(target.where, deadline)
    secret = merged.secret
    lines = [f"cluster {cluster_id} generation {generation}, pull secret fingerprint {secret.short_fingerprint}"]
    version, sm_writes = _stored_lines(latest, target.secret_name, secret, lines)
    desired = provisioning.desired_secret(app, target, decision, merged=merged, version=version)
    would = probed.dry_run(desired, store_writes=sm_writes)  # each delivery says what it would do, and where
    lines += would.lines
    unless = "" if would.writes else would.unless
    lines.append("status: would report " + ("applied" if would.writes else "unchanged") + unless)
    return Plan("would-write" if would.writes else "unchanged", lines)
