"""A provisioning, top to bottom: read, decide, store, apply, report.

1. read: the source's pull secret (merged with the cluster's own), the newest Secret Manager version and the
   delivery's live state, overlapped on the process's pool; registry handshakes start here. Every read comes
   before any write, so a terminal problem on one side leaves nothing written on the other.
2. decide: stale when the delivered copy records a newer generation (nothing written anywhere); enforce mode's
   refusal of a credential is terminal (nothing written).
3. store: the merged pull secret as the newest Secret Manager version, a write only if it differs (the write
   protocol and its invariants: pullsecret/secretstore/versions.py).
4. apply: the delivery (pullsecret.delivery), only after the Secret Manager write succeeded, while a new version's
   read-back and the cluster's generation re-read (A3) run alongside; then (L1 of reconcile/finalize.py) the
   cluster read again when anything was written, beside the report.
5. report: stale, applied or unchanged (sent by pullsecret.reconcile.outcome), with the status data
   (pullsecret.model.status_data): where it went, what was repaired, the lineage, the retention run after a
   write, each registry's answer.

The source (pullsecret.source) and the delivery (pullsecret.delivery) are seams: the steps call them and know
nothing of their kind. One event's state is a `Provisioning`; the process's collaborators are its `app`.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import wait
from dataclasses import dataclass
from typing import Any

from pullsecret import secretstore
from pullsecret.app import Application, settle
from pullsecret.delivery.base import Delivered, Desired, Probed
from pullsecret.errors import AdapterError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import bind, log
from pullsecret.model import lineage, preconditions, status, status_data
from pullsecret.model.dockerconfig import MergeResult
from pullsecret.model.names import secret_of
from pullsecret.reconcile import merge, outcome
from pullsecret.reconcile.finalize import Undone, read_again, undo_if_left
from pullsecret.reconcile.outcome import Outcome
from pullsecret.reconcile.target import Target, target_of
from pullsecret.registry import verification as registry_verification
from pullsecret.retrying import Deadline
from pullsecret.secretstore import sm_labels


def provision(
    app: Application,
    cluster_id: str,
    cluster: dict[str, Any],
    act: preconditions.Act,
    deadline: Deadline,
    *,
    own: dict[str, Any] | None = None,
) -> Outcome:
    """Provision one cluster in five steps, and report it (the Finalized report, or `gone`, when the cluster was
    deleted while this event wrote)."""
    goes_to = target_of(app.settings, cluster_id, cluster, act)
    bind(management_cluster=act.placement.management_cluster)
    reported = status_data.observed_generation(own)
    if reported > act.generation:
        # A status under our name claiming a generation the cluster has not reached is not believed: anyone
        # who may report statuses could otherwise hold the cluster "stale" forever. A genuinely stale read of
        # the cluster is still caught by the generations recorded in Secret Manager and on the Secret, which
        # only this adapter writes.
        log.warning(
            f"ignored our status: it claims generation {reported}, the cluster is at {act.generation}",
            operation="preconditions",
        )
        own = None
    try:
        return Provisioning(app, goes_to, act, own, deadline).run()
    except AdapterError:
        # L2: a failure after a write may have begun (the source's POST included) leaves nothing of a cluster
        # deleted meanwhile; a live cluster's failure goes on as it was (redelivered or reported).
        undone = undo_if_left(app, cluster_id, act, deadline)
        if undone is None:
            raise
        return _undone(app, cluster_id, undone)


def _undone(app: Application, cluster_id: str, undone: Undone) -> Outcome:
    """An event's own undo (L1/L2 of pullsecret.reconcile.finalize): the Finalized report when the cluster is deleted,
    `gone` when it no longer exists."""
    if undone.report is None:
        return Outcome("gone", detail=undone.message)
    return outcome.report(app, cluster_id, "finalized", undone.report)


@dataclass(frozen=True)
class _Reads:
    """What the read step learned: the merged pull secret, the registry checks it started, the newest
    Secret Manager version, and the live state the delivery probed (with its handle to write there)."""

    merged: MergeResult
    checks: registry_verification.Pending | None
    latest: secretstore.Latest
    probed: Probed
    source_data: status_data.OwnData
    source_wrote: bool = False  # the source created something for this event (the service's POST)


@dataclass(frozen=True)
class Provisioning:
    """One event's provisioning of one cluster: the process (`app`), where it goes, what the preconditions
    decided, our last status (`own`, None when not believed) and the event's deadline."""

    app: Application
    target: Target
    act: preconditions.Act
    own: dict[str, Any] | None
    deadline: Deadline

    def run(self) -> Outcome:
        """Read, decide, store, apply; then (L1) the cluster read again when anything was written; report."""
        reads = self.read()
        stale = self.decide(reads)
        if stale is not None:
            return outcome.report(self.app, self.target.cluster_id, "stale", stale)
        stored = self.store(reads)
        data = status_data.provisioned_data(
            sm_name=self.target.secret_name,
            sm_version=stored.version_name,
            placement=self.act.placement,
            kubernetes_name=self.target.kube_name,
            merged=reads.merged,
        )
        desired, recorded = self.desired(reads, stored)
        if stored.repaired:
            log.warning(
                f"the newest Secret Manager version of {self.target.secret_id} had been disabled or destroyed; "
                "wrote a fresh one",
                operation="secretmanager.store",
            )
            data["repaired"] = "secret_manager_version"
        applied = self.apply(reads, desired, stored)
        if not (stored.written or applied.written or reads.source_wrote):
            return self.report(reads, stored, applied, recorded, data)
        # L1, overlapped with the report: the read starts after the last write, and the event answers only
        # once it has (a Finalized report, when the cluster was deleted meanwhile, goes after this one).
        read = self.app.submit(read_again, self.app, self.target.cluster_id)
        try:
            reported = self.report(reads, stored, applied, recorded, data)
        except BaseException:
            settle([read], self.deadline)  # no work outlives its event; provision's L2 reads again
            raise
        undone = undo_if_left(self.app, self.target.cluster_id, self.act, self.deadline, read=read)
        if undone is not None:
            return _undone(self.app, self.target.cluster_id, undone)
        return reported

    # -- 1. read ----------------------------------------------------------------------------------------
    def read(self) -> _Reads:
        """The pull secret, the newest Secret Manager version and the delivery's live state, overlapped.

        When the source needs no call (most events: the platform pull secret in the cache), the newest-version
        read runs on this thread while the pool probes: the same two calls overlap, with one hand-off to the
        pool instead of two. Otherwise the source's read overlaps both, as the pool runs them.
        """
        app, target, deadline = self.app, self.target, self.deadline
        fetch = app.source.start(target.cluster_id, deadline, first=status_data.first_provisioning(self.own))
        live_future = app.submit(app.delivery.probe, target.where, deadline)
        latest_future = None if fetch.ready else app.submit(app.store.reads.latest, target.secret_name, deadline)
        try:
            newest = None if latest_future is None else latest_future.result
            pulled = fetch.pull_secret(self.act, deadline, newest=newest)
            merged, own_registries = merge.merged(pulled, self.act, app.settings)
            checks = app.registries.start(merged.secret, deadline, own=own_registries)
            latest = (
                app.store.reads.latest(target.secret_name, deadline)
                if latest_future is None
                else latest_future.result()
            )
            probed = live_future.result()
        except BaseException:
            settle([f for f in (live_future, latest_future) if f is not None], deadline)
            raise
        return _Reads(merged, checks, latest, probed, fetch.status_data(), source_wrote=fetch.wrote)

    # -- 2. decide --------------------------------------------------------------------------------------
    def decide(self, reads: _Reads) -> status.Report | None:
        """A stale report when the live copy records a newer generation (write nothing anywhere); raises
        RegistryRejected when enforce mode refuses a credential (terminal, nothing written)."""
        if reads.probed.recorded_generation > self.act.generation:
            return status.stale(
                self.act.generation,
                reads.probed.recorded_generation,
                {
                    "management_cluster": self.act.placement.management_cluster,
                    "kubernetes_name": self.target.kube_name,
                },
            )
        if reads.checks is not None and reads.checks.mode == "enforce":
            reads.checks.result().enforce()
        return None

    # -- 3. store ---------------------------------------------------------------------------------------
    def store(self, reads: _Reads) -> secretstore.StoreResult:
        """The merged pull secret as the newest Secret Manager version (a write only if it differs)."""
        app, target, act = self.app, self.target, self.act
        with log.step("secretmanager.store", secret_id=target.secret_id, project=act.project_id) as fields:
            stored = app.store.versions.store(
                project=act.project_id,
                secret_id=target.secret_id,
                secret=reads.merged.secret,
                generation=act.generation,
                labels=sm_labels(
                    adapter=app.settings.adapter_name,
                    cluster_id=target.cluster_id,
                    cluster_name=target.cluster_name,
                    deployment=app.settings.deployment_id,
                ),
                deadline=self.deadline,
                latest=reads.latest,
                current_generation=lambda: current_generation(app.hyperfleet, target.cluster_id),
                owned=status_data.still_ours(self.own, target.secret_name, reads.latest.name, reads.latest.data),
            )
            fields.update(written=stored.written, writes=stored.writes)
        return stored

    # -- 4. apply ---------------------------------------------------------------------------------------
    def desired(self, reads: _Reads, stored: secretstore.StoreResult) -> tuple[Desired, dict[str, Any]]:
        """What to deliver (the stored version, where, what the delivered object records), carrying the lineage
        of the version it points at; and that lineage."""
        desired = desired_secret(self.app, self.target, self.act, merged=reads.merged, version=stored.version_name)
        recorded = lineage.chosen(
            previous=lineage.from_report(((self.own or {}).get("data") or {}).get("lineage")),
            live=lineage.decode(reads.probed.recorded_lineage),
            fingerprints=reads.merged.secret.registry_fingerprints(),
            version_name=stored.version_name,
            created=lambda: self._created_at(stored),
        )
        if recorded:
            desired = dataclasses.replace(desired, lineage=lineage.encode(recorded))
        return desired, recorded

    def _created_at(self, stored: secretstore.StoreResult) -> int:
        """The stored version's creation time: "since" of a lineage advanced to it (every delivery pointing at
        it computes the same object, so the delivered copy is written once)."""
        if stored.created_at is not None:
            return stored.created_at
        return self.app.store.reads.created_at(stored.version_name, self.deadline) or int(time.time())

    def apply(self, reads: _Reads, desired: Desired, stored: secretstore.StoreResult) -> Delivered:
        """The delivery (direct: the Kubernetes Secret; external-secrets: the secret's access), while a new
        version's read-back and the cluster's generation re-read (A3 of secretstore/versions.py) run alongside;
        all must succeed before a report.

        The apply starts only after the Secret Manager write succeeded, so Kubernetes never holds a version
        Secret Manager refused. What fails beside it (the read-back, the generation moved on) fails the
        delivery transiently; Kubernetes then holds the stored version and its redelivery converges.
        """
        confirmed = self.app.submit(stored.confirm) if stored.confirm is not None else None
        verified = self.app.submit(stored.verify) if stored.verify is not None else None
        try:
            applied = reads.probed.apply(desired, self.deadline)  # each delivery logs its own step
        finally:
            wait([f for f in (confirmed, verified) if f is not None])  # none outlives the event, none cancelled
            if confirmed is not None:
                confirmed.result()
            if verified is not None:
                with log.step("secretmanager.verify_version", version=stored.version_name):
                    verified.result()
        return applied

    # -- 5. report --------------------------------------------------------------------------------------
    def report(
        self,
        reads: _Reads,
        stored: secretstore.StoreResult,
        applied: Delivered,
        recorded: dict[str, Any],
        data: status_data.StatusData,
    ) -> Outcome:
        """Stale, applied or unchanged, with what was repaired, the lineage and the retention; sent."""
        app, act = self.app, self.act
        status_data.add_own(data, app.delivery.status_data(self.target.where, applied, stored_written=stored.written))
        status_data.add_own(data, reads.source_data)
        if applied.stale:
            stale = status.stale(act.generation, applied.recorded_generation, data)
            return outcome.report(app, self.target.cluster_id, "stale", with_registries(stale, reads.checks))
        present = reads.probed.present
        if applied.written and not stored.written and present:
            data.setdefault("repaired", "kubernetes_secret")
        elif applied.written and not present and not stored.written:
            data.setdefault("repaired", "kubernetes_secret_recreated")
        data["lineage"] = lineage.report(
            recorded, sm_version=stored.version_name, kubernetes_resource_version=applied.revision
        )
        if stored.written:
            # Now: the delivery points at the new version, which is never destroyed whatever its age.
            data["retention"] = self.retention(stored.version_name)
        changed = stored.written or applied.written
        provisioned = status.provisioned(
            act.generation,
            applied=app.delivery.wording.applied(changed=changed),
            available=app.delivery.wording.available(own_credentials=app.source.own_credentials),
            data=data,
        )
        result = "applied" if changed else "unchanged"
        return outcome.report(app, self.target.cluster_id, result, with_registries(provisioned, reads.checks))

    def retention(self, version_name: str) -> status_data.Retention:
        """Old versions destroyed, best effort after a successful write: failures are logged, the next write
        tries again. Runs after the apply succeeded, so the delivery points at `version_name` now."""
        settings = self.app.settings
        newest = lineage.version_id(version_name)
        if newest.isdigit() and int(newest) <= settings.retain_versions:
            return {"keep": settings.retain_versions, "destroyed": []}  # nothing can be older: no list call
        try:
            with log.step("secretmanager.retention", keep=settings.retain_versions) as fields:
                result = self.app.store.retention.apply_retention(
                    secret_of(version_name),
                    keep=settings.retain_versions,
                    protected={version_name},
                    deadline=Deadline(min(10.0, settings.retry_deadline_s)),
                )
                fields["destroyed"] = len(result.destroyed)
        except AdapterError as exc:
            log.warning(f"version retention skipped: {exc.message}", operation="secretmanager.retention")
            return {"keep": settings.retain_versions, "error": exc.reason}
        return {"keep": settings.retain_versions, "destroyed": list(result.destroyed)}


def desired_secret(
    app: Application, target: Target, act: preconditions.Act, *, merged: MergeResult, version: str
) -> Desired:
    """What to deliver: the stored content (`version`), where, and what the delivered object records."""
    return Desired(
        cluster_id=target.cluster_id,
        cluster_name=target.cluster_name,
        adapter=app.settings.adapter_name,
        namespace=act.placement.namespace,
        name=target.kube_name,
        content=merged.secret.canonical,
        fingerprint=merged.secret.fingerprint,
        generation=act.generation,
        source_version=version,
        created_by=app.created_by,
    )


def with_registries(report: status.Report, checks: registry_verification.Pending | None) -> status.Report:
    """Add each registry's answer to `data`; a refused credential that did not stop the write (report mode, or
    a platform entry in enforce mode) turns Health False in either mode."""
    if checks is None:
        return report
    verification = checks.result()
    report.data.update(verification.data())
    if verification.rejected:
        return status.registry_rejected(report, verification.rejected)
    return report


def current_generation(hyperfleet: HyperFleetClient, cluster_id: str) -> int | None:
    """The cluster's generation as the API holds it now (asked after each Secret Manager write, A3)."""
    cluster = hyperfleet.get_cluster(cluster_id)
    generation = (cluster or {}).get("generation")
    return generation if isinstance(generation, int) else None
