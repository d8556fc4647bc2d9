"""Deletion: the delivery's cleanup first, then the Secret Manager secret per DELETION_POLICY, then the source's
revocation; what it did, as the status `data` and the sentence of the Finalized report.

The revocation comes last: while a copy of the credentials is still on the management cluster or in Secret
Manager, the service keeps them valid, so a failure half-way leaves nothing that holds a revoked credential.
A failed revocation is transient (no Finalized=True until the source confirmed).

Idempotent: what is already gone counts as done, so a repeat reports Finalized=True again. Objects that are not
ours (neither hyperfleet.io/managed-by nor managed-by=hyperfleet) are left in place and named in `data`.

Invariants of the lifecycle (a deletion against provisioning, rotation and repair events on any number of
instances; tests/protocol/test_lifecycle_protocol.py checks them over every interleaving of up to three actors,
tests/reliability/test_revocation_race.py across two function processes):

  L1. An event that wrote anything (the source's POST, a Secret Manager version or secret, the delivery's write)
      reads the cluster again after its last write and before it answers (`provisioning.Provisioning.run`; the
      read runs beside the status report, which is no such write: a Finalized report is sent after it). Gone
      or deleted: it runs this finalizer itself over where it wrote (`left_behind`), and answers with the
      Finalized report (deleted) or `gone`. Still live: the deletion comes after that read, so the deletion's
      own finalizer runs after every write of this event and removes them.
  L2. An event that fails after its writes may have begun (transient or terminal, the source's POST included)
      does the same check before the failure goes on: a deleted cluster's leftovers are not left to a retry.
  L3. An event for a cluster the API no longer knows (404 NTF-001) revokes its credentials at their source
      (idempotent DELETE; none for the shared platform secret): a POST that landed after everything else is
      revoked by the next event that finds the cluster gone.
  L4. A3 of pullsecret/secretstore/versions.py counts a cluster gone as a failed write (ClusterGone): nothing
      reports a version applied for a cluster that no longer exists.
  Hence after quiescence, once Finalized=True is stored and the cluster is gone, no credential remains at the
  service, no enabled version (DELETION_POLICY DELETE or DISABLE), no Kubernetes Secret and no accessor binding.
  Beyond a client's reach: a write whose answer was lost and that the service applies after its sender gave up
  (no fence exists at the service); L3 revokes it at the next event for the gone cluster, and `fleet --fix`
  (which revokes for every gone cluster it finds) sweeps what no event will come for.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from pullsecret.app import Application
from pullsecret.delivery.base import Leaving
from pullsecret.errors import OwnershipConflict
from pullsecret.logs import log
from pullsecret.model import preconditions, status
from pullsecret.model.names import secret_name
from pullsecret.model.status_data import StatusData, add_own
from pullsecret.reconcile.target import names
from pullsecret.retrying import Deadline


def finalize(
    app: Application, cluster_id: str, deleting: preconditions.Deleting, deadline: Deadline
) -> tuple[str, StatusData]:
    """Clean up a deleted cluster's pull secret everywhere; (the report's message, its `data`)."""
    settings = app.settings
    secret_id, kube_name = names(settings, cluster_id)
    project = deleting.project_id
    data: StatusData = {"deletion_policy": settings.deletion_policy}
    leaving = Leaving(
        secret_name=secret_name(project, secret_id) if project is not None else None,
        placement=deleting.placement,
        kube_name=kube_name,
    )
    cleaned = app.delivery.cleanup(leaving, deadline)
    add_own(data, cleaned.data)
    if deleting.project_refused is not None:
        # The spec names a project the function may not use: nothing was written there by this adapter while it is
        # refused, and a deletion must not steer a Secret Manager call into it either (docs/trust.md).
        data["sm_cleanup"] = f"not touched ({deleting.project_refused.reason}): {deleting.project_refused.message}"
        log.warning(
            f"deletion: Secret Manager left alone: {deleting.project_refused.message}",
            operation="secretmanager.delete_secret",
            reason=deleting.project_refused.reason,
        )
    elif project is None:
        data["sm_cleanup"] = "no GCP project known; nothing to delete"
    else:
        data["sm_name"] = secret_name(project, secret_id)
        data["sm_cleanup"] = _delete_secret(app, project, secret_id, deadline)
    revoked = app.source.revoke(cluster_id, deadline)
    add_own(data, revoked)
    message = (
        f"cleanup confirmed: {cleaned.said}; "
        f"Secret Manager secret {data['sm_cleanup']} (DELETION_POLICY={settings.deletion_policy})"
        + (f"; its own credentials revoked at their source ({revoked['revoked']})" if "revoked" in revoked else "")
    )
    return message, data


@dataclass(frozen=True)
class Undone:
    """What an event's own undo did (L1/L2): its sentence, and the Finalized report (None: the cluster is gone)."""

    message: str
    report: status.Report | None


def read_again(app: Application, cluster_id: str) -> dict[str, Any] | None:
    """L1/L2's read: the cluster as the API holds it after this event's writes (None: it no longer exists)."""
    with log.step("hyperfleet.get_cluster", why="after writing"):
        return app.hyperfleet.get_cluster(cluster_id)


def undo_if_left(
    app: Application,
    cluster_id: str,
    act: preconditions.Act,
    deadline: Deadline,
    *,
    read: Future[dict[str, Any] | None] | None = None,
) -> Undone | None:
    """L1/L2: the cluster read again after a provisioning's writes (`read`: that read, already started by the
    caller after its last write); gone or deleted, the finalizer runs where the provisioning wrote. None: the
    cluster is live."""
    cluster = read.result() if read is not None else read_again(app, cluster_id)
    deleting = left_behind(act, cluster)
    if deleting is None:
        return None
    log.warning(
        "the cluster was deleted while this event wrote; removing what it wrote (the finalizer)",
        operation="finalize",
        generation=deleting.generation,
    )
    message, data = finalize(app, cluster_id, deleting, deadline)
    if cluster is None:
        return Undone(f"the cluster was deleted while this event wrote; {message}", None)
    return Undone(message, finalized_report(deleting, message, data))


def gone(app: Application, cluster_id: str, deadline: Deadline) -> str:
    """L3: a cluster the API no longer knows: its own credentials revoked at their source (idempotent; no
    call for the shared platform secret). The sentence for the event's final log line."""
    revoked = app.source.revoke(cluster_id, deadline)
    held = f"; its credentials at their source: {revoked['revoked']}" if "revoked" in revoked else ""
    log.info(f"cluster {cluster_id} no longer exists{held}", operation="hyperfleet.get_cluster")
    return f"the cluster no longer exists{held}"


def left_behind(act: preconditions.Act, cluster: dict[str, Any] | None) -> preconditions.Deleting | None:
    """L1/L2: the deletion to run over where a provisioning wrote (`act`), when the cluster read again after its
    writes (`cluster`) is gone (None) or deleted; None while it is live."""
    if cluster is not None and not cluster.get("deleted_time"):
        return None
    generation = (cluster or {}).get("generation")
    return preconditions.Deleting(
        generation=generation if isinstance(generation, int) and generation >= act.generation else act.generation,
        project_id=act.project_id,
        placement=act.placement,
    )


def _delete_secret(app: Application, project: str, secret_id: str, deadline: Deadline) -> str:
    settings = app.settings
    with log.step("secretmanager.delete_secret", secret_id=secret_id, policy=settings.deletion_policy) as fields:
        try:
            result = app.store.retention.delete_secret(
                project=project,
                secret_id=secret_id,
                policy=settings.deletion_policy,
                deadline=deadline,
            )
        except OwnershipConflict as exc:
            log.warning(exc.message, operation="secretmanager.delete_secret")
            result = "not managed by hyperfleet; left in place"
        fields["result"] = result
    return result


def finalized_report(deleting: preconditions.Deleting, message: str, data: StatusData) -> status.Report:
    """The Finalized report of a cleanup; Health False when the cluster's project was refused (left untouched)."""
    refused = deleting.project_refused
    unhealthy = None if refused is None else f"{refused.reason}: Secret Manager not touched: {refused.message}"
    return status.finalized(deleting.generation, message, data, unhealthy=unhealthy)
