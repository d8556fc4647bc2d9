"""The one place that knows the order of the steps of a cluster reconcile.

read cluster ‖ statuses → preconditions → pull secret → (Secret Manager ‖ management-cluster client, admission
policy check and dry-run probe of our Secret) → Kubernetes apply → status report. Independent calls overlap on
a shared thread pool. The pull secret's source (pullsecret.source) and its delivery (pullsecret.delivery) are
seams: the steps call them and know nothing of their kind; deletion is pullsecret.finalize, the pieces of a
provisioning that decide nothing about order are pullsecret.provision.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from pullsecret import merge, provision, secretstore
from pullsecret.config import Settings
from pullsecret.delivery.base import Delivered, Delivery, Desired, Probed
from pullsecret.errors import AdapterError, TerminalError, TransientError
from pullsecret.finalize import Finalizer, finalized_report
from pullsecret.hyperfleet.answers import UnparseableCluster
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import bind, log
from pullsecret.model import preconditions, status
from pullsecret.model.dockerconfig import MergeResult
from pullsecret.provision import Target
from pullsecret.registry import verification as registry_verification
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore, sm_labels
from pullsecret.source.base import Source

T = TypeVar("T")


def _settle(futures: list[Future[Any]], deadline: Deadline) -> None:
    """Cancel work not started yet and wait for work already running, bounded by the deadline.

    No work outlives its event: Cloud Run gives an instance no CPU after the response, so a call left
    running would stall half-way and land (or not) during some later request.
    """
    for future in futures:
        future.cancel()
    wait(futures, timeout=deadline.remaining() + 1.0)


@dataclass(frozen=True)
class Outcome:
    """What one reconcile did: `result` is the metric label (applied, unchanged, skipped, stale, gone, terminal)."""

    result: str
    report: status.Report | None = None
    report_code: int | None = None
    reason: str | None = None  # why, for terminal and transient outcomes (also the status reason)
    service: str | None = None  # the system at fault, when one is
    detail: str | None = None  # a person's sentence for the final log line (never secret material)


@dataclass(frozen=True)
class _Reads:
    """What the read step learned: the merged pull secret, the registry checks it started, the newest
    Secret Manager version, and the live state the delivery probed (with its handle to write there)."""

    merged: MergeResult
    checks: registry_verification.Pending | None
    latest: secretstore.Latest
    probed: Probed
    source_data: dict[str, Any]
    source_wrote: bool = False  # the source created something for this event (the service's POST)


class Reconciler:
    """Runs one reconcile with the per-process collaborators; `run` is safe to call from many threads at once."""

    def __init__(
        self,
        settings: Settings,
        *,
        hyperfleet: HyperFleetClient,
        store: SecretStore,
        delivery: Delivery,
        source: Source,
        registries: registry_verification.RegistryVerifier,
        pool: ThreadPoolExecutor,
        created_by: str,
    ) -> None:
        self.settings = settings
        self.hyperfleet = hyperfleet
        self.store = store
        self.delivery = delivery
        self.source = source
        self.registries = registries
        self.pool = pool
        self.created_by = created_by  # the Secret's hyperfleet.io/created-by: the runtime identity
        self.finalizer = Finalizer(settings, store, delivery, source)

    def _submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run on the shared pool with this event's log context (labels, trace, redaction)."""
        context = contextvars.copy_context()
        return self.pool.submit(context.run, fn, *args)

    # -- entry -----------------------------------------------------------------------------
    def run(self, cluster_id: str, deadline: Deadline, *, event_generation: int | None = None) -> Outcome:
        """Reconcile one cluster; raises TransientError for redelivery, reports terminal failures itself."""
        statuses_future = self._submit(self.hyperfleet.list_statuses, cluster_id)
        try:
            with log.step("hyperfleet.get_cluster"):
                cluster = self.hyperfleet.get_cluster(cluster_id)
        except UnparseableCluster as exc:
            _settle([statuses_future], deadline)
            generation = exc.generation if exc.generation is not None else event_generation
            if generation is None or generation < 1:
                return Outcome("terminal", reason=exc.reason, detail=f"{exc.message}; cannot report a status")
            outcome = self._report(cluster_id, "terminal", _terminal_report(generation, None, exc))
            return dataclasses.replace(outcome, reason=exc.reason, service=exc.service, detail=exc.message)
        except BaseException:
            _settle([statuses_future], deadline)
            raise
        if cluster is None:
            _settle([statuses_future], deadline)
            return Outcome("gone", detail=self.finalizer.gone(cluster_id, deadline))
        statuses = statuses_future.result()
        if isinstance(cluster.get("name"), str):
            bind(cluster_name=str(cluster["name"])[:63])
        try:
            generation = preconditions.cluster_generation(cluster)
        except TerminalError as exc:
            # Without a generation no status can be reported (observed_generation >= 1).
            return Outcome("terminal", reason=exc.reason, detail=f"{exc.message}; cannot report a status")
        decision: preconditions.Decision | None = None
        try:
            decision = preconditions.evaluate(cluster, statuses, self.settings, cluster_id=cluster_id)
            return self._act(cluster_id, cluster, statuses, decision, generation=generation, deadline=deadline)
        except TerminalError as exc:
            # The handler's final `reconcile` line logs it (error level, reason, service): one line per outcome.
            outcome = self._report(cluster_id, "terminal", _terminal_report(generation, decision, exc))
            return dataclasses.replace(outcome, reason=exc.reason, service=exc.service, detail=exc.message)

    def _act(
        self,
        cluster_id: str,
        cluster: dict[str, Any],
        statuses: list[dict[str, Any]],
        decision: preconditions.Decision,
        *,
        generation: int,
        deadline: Deadline,
    ) -> Outcome:
        """What the preconditions decided: wait (report why), finalize a deletion, or provision."""
        placed = getattr(decision, "placement", None)
        log.debug(
            f"preconditions decided: {type(decision).__name__}",
            operation="preconditions",
            generation=generation,
            project=getattr(decision, "project_id", None),
            management_cluster=placed.management_cluster if placed is not None else None,
            namespace=placed.namespace if placed is not None else None,
        )
        if isinstance(decision, preconditions.NotMet):
            log.info(f"preconditions not met: {decision.message}", operation="preconditions")
            return self._report(cluster_id, "skipped", status.preconditions_not_met(generation, decision.message))
        try:
            if isinstance(decision, preconditions.Deleting):
                return self._finalize(cluster_id, decision, deadline)
            own = preconditions.statuses_by_adapter(statuses).get(self.settings.adapter_name)
            return self._provision(cluster_id, cluster, decision, deadline, own)
        except TransientError as exc:
            if decision.placement is not None:
                self.delivery.after_transient(decision.placement, exc)  # e.g. a cached client gone stale
            raise

    def _undo_if_left(self, target: Target, act: preconditions.Act, deadline: Deadline) -> Outcome | None:
        """L1/L2 of pullsecret.finalize; the Finalized report when the cluster is deleted (not gone)."""
        undone = self.finalizer.undo_if_left(self.hyperfleet, target.cluster_id, act, deadline)
        if undone is None or undone.report is None:
            return None if undone is None else Outcome("gone", detail=undone.message)
        return self._report(target.cluster_id, "finalized", undone.report)

    def _finalize(self, cluster_id: str, deleting: preconditions.Deleting, deadline: Deadline) -> Outcome:
        """Deletion (pullsecret.finalize), then its Finalized report."""
        message, data = self.finalizer.run(cluster_id, deleting, deadline)
        return self._report(cluster_id, "finalized", finalized_report(deleting, message, data))

    # -- steps ------------------------------------------------------------------------------
    def _report(self, cluster_id: str, result: str, report: status.Report) -> Outcome:
        with log.step("hyperfleet.report_status", available=report.available) as fields:
            code = self.hyperfleet.report_status(cluster_id, report.body(self.settings.adapter_name))
            fields["http_status"] = code
        if code == 204:
            log.info(
                "the API discarded the status as older than the one it holds",
                operation="hyperfleet.report_status",
            )
        return Outcome(result, report, code)

    def _provision(
        self,
        cluster_id: str,
        cluster: dict[str, Any],
        act: preconditions.Act,
        deadline: Deadline,
        own: dict[str, Any] | None = None,
    ) -> Outcome:
        """Provision one cluster in five steps: read, decide, store, apply, report."""
        target = provision.target(self.settings, cluster_id, cluster, act)
        bind(management_cluster=act.placement.management_cluster)
        reported = provision.observed_generation(own)
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
            return self._write(target, act, own, deadline)
        except AdapterError:
            # L2: a failure after a write may have begun (the source's POST included) leaves nothing of a cluster
            # deleted meanwhile; a live cluster's failure goes on as it was (redelivered or reported).
            undone = self._undo_if_left(target, act, deadline)
            if undone is None:
                raise
            return undone

    def _write(self, target: Target, act: preconditions.Act, own: dict[str, Any] | None, deadline: Deadline) -> Outcome:
        """Read, decide, store, apply; then (L1) the cluster read again when anything was written."""
        reads = self._read(target, act, deadline, first=provision.first_provisioning(own))
        stale = _decide(target, act, reads)
        if stale is not None:
            return self._report(target.cluster_id, "stale", stale)
        stored = self._store(target, act, reads, own, deadline)
        data = provision.provisioned_data(target, reads.merged, stored)
        desired = provision.desired_secret(
            self.settings, target, act, merged=reads.merged, version=stored.version_name, created_by=self.created_by
        )
        desired, recorded = provision.with_lineage(
            desired, self.store, stored=stored, own=own, probed=reads.probed, merged=reads.merged, deadline=deadline
        )
        if stored.repaired:
            log.warning(
                f"the newest Secret Manager version of {target.secret_id} had been disabled or destroyed; "
                "wrote a fresh one",
                operation="secretmanager.store",
            )
            data["repaired"] = "secret_manager_version"
        applied = self._apply(reads, desired, stored, deadline)
        if stored.written or applied.written or reads.source_wrote:
            undone = self._undo_if_left(target, act, deadline)
            if undone is not None:
                return undone
        return self._report_provisioned(
            target, act, reads=reads, stored=stored, applied=applied, recorded=recorded, data=data
        )

    def _read(self, target: Target, act: preconditions.Act, deadline: Deadline, *, first: bool = False) -> _Reads:
        """Step 1, read: the pull secret, the newest Secret Manager version and the delivery's live state, overlapped.

        Every read comes before any write, so that a terminal problem on one side leaves nothing written on
        the other. Registry handshakes (new fingerprints only) start here and overlap the rest.

        When the source needs no call (most events: the platform pull secret in the cache), the newest-version
        read runs on this thread while the pool probes: the same two calls overlap, with one hand-off to the
        pool instead of two. Otherwise the source's read overlaps both, as the pool runs them.
        """
        fetch = self.source.start(target.cluster_id, deadline, first=first)
        live_future = self._submit(self.delivery.probe, target.where, deadline)
        latest_future = None if fetch.ready else self._submit(self.store.latest, target.secret_name, deadline)
        try:
            merged, own_registries = merge.merged(fetch.pull_secret(act, deadline), act, self.settings)
            checks = self.registries.start(merged.secret, deadline, own=own_registries)
            if latest_future is None:
                latest = self.store.latest(target.secret_name, deadline)
            else:
                latest = latest_future.result()
            probed = live_future.result()
        except BaseException:
            _settle([f for f in (live_future, latest_future) if f is not None], deadline)
            raise
        return _Reads(merged, checks, latest, probed, fetch.status_data(), source_wrote=fetch.wrote)

    def _store(
        self,
        target: Target,
        act: preconditions.Act,
        reads: _Reads,
        own: dict[str, Any] | None,
        deadline: Deadline,
    ) -> secretstore.StoreResult:
        """Step 3, store: the merged pull secret as the newest Secret Manager version (a write only if it differs)."""
        with log.step("secretmanager.store", secret_id=target.secret_id, project=act.project_id) as fields:
            stored = self.store.store(
                project=act.project_id,
                secret_id=target.secret_id,
                secret=reads.merged.secret,
                generation=act.generation,
                labels=sm_labels(
                    adapter=self.settings.adapter_name,
                    cluster_id=target.cluster_id,
                    cluster_name=target.cluster_name,
                    deployment=self.settings.deployment_id,
                ),
                deadline=deadline,
                latest=reads.latest,
                current_generation=lambda: current_generation(self.hyperfleet, target.cluster_id),
                owned=provision.still_ours(own, target.secret_name, reads.latest),
            )
            fields.update(written=stored.written, writes=stored.writes)
        return stored

    def _apply(self, reads: _Reads, desired: Desired, stored: secretstore.StoreResult, deadline: Deadline) -> Delivered:
        """Step 4, apply: the delivery (direct: the Kubernetes Secret; external-secrets: the secret's access), while
        a new version's read-back and the cluster's generation re-read (A3 of secretstore/versions.py) run
        alongside; all must succeed before a report.

        The apply starts only after the Secret Manager write succeeded, so Kubernetes never holds a version
        Secret Manager refused. What fails beside it (the read-back, the generation moved on) fails the
        delivery transiently; Kubernetes then holds the stored version and its redelivery converges.
        """
        confirmed = self._submit(stored.confirm) if stored.confirm is not None else None
        verified = self._submit(stored.verify) if stored.verify is not None else None
        try:
            applied = reads.probed.apply(desired, deadline)  # each delivery logs its own step
        finally:
            wait([f for f in (confirmed, verified) if f is not None])  # none outlives the event, none cancelled
            if confirmed is not None:
                confirmed.result()
            if verified is not None:
                with log.step("secretmanager.verify_version", version=stored.version_name):
                    verified.result()
        return applied

    def _report_provisioned(
        self,
        target: Target,
        act: preconditions.Act,
        *,
        reads: _Reads,
        stored: secretstore.StoreResult,
        applied: Delivered,
        recorded: dict[str, Any],
        data: dict[str, Any],
    ) -> Outcome:
        """Step 5, report: stale, applied or unchanged, with what was repaired, the lineage and the retention."""
        data.update(self.delivery.status_data(target.where, applied, stored_written=stored.written))
        data.update(reads.source_data)
        if applied.stale:
            report = status.stale(act.generation, applied.recorded_generation, data)
            return self._report(target.cluster_id, "stale", provision.with_registries(report, reads.checks))
        present = reads.probed.present
        provision.add_applied(
            data, self.settings, self.store, present=present, stored=stored, applied=applied, recorded=recorded
        )
        changed = stored.written or applied.written
        return self._report(
            target.cluster_id,
            "applied" if changed else "unchanged",
            provision.with_registries(
                status.provisioned(
                    act.generation,
                    applied=self.delivery.wording.applied(changed=changed),
                    available=self.delivery.wording.available(own_credentials=self.source.own_credentials),
                    data=data,
                ),
                reads.checks,
            ),
        )


def _decide(target: Target, act: preconditions.Act, reads: _Reads) -> status.Report | None:
    """Step 2, decide: a stale report when the live Secret records a newer generation (write nothing
    anywhere); raises RegistryRejected when enforce mode refuses a credential (terminal, nothing written)."""
    if reads.probed.recorded_generation > act.generation:
        return status.stale(
            act.generation,
            reads.probed.recorded_generation,
            {"management_cluster": act.placement.management_cluster, "kubernetes_name": target.kube_name},
        )
    if reads.checks is not None and reads.checks.mode == "enforce":
        reads.checks.result().enforce()
    return None


def _terminal_report(generation: int, decision: preconditions.Decision | None, exc: TerminalError) -> status.Report:
    """The status of a terminal failure: its reason and message, and the phase it was found in."""
    data = getattr(exc, "data", None)  # registry_verification.RegistryRejected names each registry's answer
    # The API hard-deletes a soft-deleted cluster only after Finalized=True: say what blocks cleanup.
    deleting = isinstance(decision, preconditions.Deleting)
    # Bad input names no service: its phase is where it was found (judging the cluster, or acting).
    phase = (
        status.phase_of(exc.service)
        if exc.service
        else (status.PHASE_PRECONDITIONS if decision is None else status.PHASE_RESOURCES)
    )
    return status.terminal_failure(generation, exc.reason, exc.message, data, phase=phase, deleting=deleting)


def current_generation(hyperfleet: HyperFleetClient, cluster_id: str) -> int | None:
    """The cluster's generation as the API holds it now (asked after each Secret Manager write, A3)."""
    cluster = hyperfleet.get_cluster(cluster_id)
    generation = (cluster or {}).get("generation")
    return generation if isinstance(generation, int) else None
