"""The one place that knows the order of the steps of a cluster reconcile.

read cluster ‖ statuses → preconditions → pull secret → (Secret Manager ‖ management-cluster client, admission
policy check and dry-run probe of our Secret) → Kubernetes apply → status report. Independent calls overlap on
a shared thread pool.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from pullsecret import secretstore
from pullsecret.config import Settings
from pullsecret.delivery import kubesecret
from pullsecret.delivery.external_secrets import ExternalSecretsDelivery
from pullsecret.delivery.kubesecret import DesiredSecret, KubeSecrets
from pullsecret.delivery.management_clusters import ManagementClusters
from pullsecret.errors import AdapterError, TerminalError, TransientError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import bind, log, protect
from pullsecret.model import dockerconfig, lineage, preconditions, status
from pullsecret.model.dockerconfig import MergeResult, PullSecret
from pullsecret.registry import verification as registry_verification
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore, secret_labels

T = TypeVar("T")

_SECRET_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
class _Target:
    """Where one cluster's pull secret goes: its Secret Manager secret and its Kubernetes Secret's name."""

    cluster_id: str
    cluster_name: str
    secret_id: str
    secret_name: str  # projects/P/secrets/ID
    kube_name: str


@dataclass(frozen=True)
class _Reads:
    """What the read step learned: the merged pull secret, the registry checks it started, the newest
    Secret Manager version, and our live Kubernetes Secret with the API that serves it."""

    merged: MergeResult
    checks: registry_verification.Pending | None
    latest: secretstore.Latest
    api: Any
    probed: kubesecret.Probed


class Reconciler:
    """Holds the per-process clients; `run` is safe to call from many threads at once."""

    def __init__(
        self,
        settings: Settings,
        *,
        hyperfleet: HyperFleetClient,
        store: SecretStore,
        clusters: ManagementClusters,
        kube: KubeSecrets,
        pool: ThreadPoolExecutor,
        identity_email: str | None,
        registries: registry_verification.RegistryVerifier | None = None,
        delivery: ExternalSecretsDelivery | None = None,
    ) -> None:
        self.settings = settings
        self.hyperfleet = hyperfleet
        self.store = store
        self.clusters = clusters
        self.kube = kube
        self.pool = pool
        self.identity_email = identity_email
        self._platform: tuple[bytes, PullSecret] | None = None
        self.registries = registries or registry_verification.RegistryVerifier(settings)
        # KUBERNETES_DELIVERY: None is `direct` (our Kubernetes Secret, through `clusters` and `kube`); else the
        # external-secrets delivery, which probes, applies and cleans up on Google APIs only.
        self.delivery = delivery

    def _submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run on the shared pool with this event's log context (labels, trace, redaction)."""
        context = contextvars.copy_context()
        return self.pool.submit(context.run, fn, *args)

    # -- entry -----------------------------------------------------------------------------
    def run(self, cluster_id: str, deadline: Deadline) -> Outcome:
        """Reconcile one cluster; raises TransientError for redelivery, reports terminal failures itself."""
        statuses_future = self._submit(self.hyperfleet.list_statuses, cluster_id)
        try:
            with log.step("hyperfleet.get_cluster"):
                cluster = self.hyperfleet.get_cluster(cluster_id)
        except BaseException:
            _settle([statuses_future], deadline)
            raise
        if cluster is None:
            _settle([statuses_future], deadline)
            log.info(f"cluster {cluster_id} no longer exists; nothing to do", operation="hyperfleet.get_cluster")
            return Outcome("gone")
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
            placement = decision.placement
            try:
                if isinstance(decision, preconditions.Deleting):
                    return self._finalize(cluster_id, decision, deadline)
                own = preconditions.statuses_by_adapter(statuses).get(self.settings.adapter_name)
                return self._provision(cluster_id, cluster, decision, deadline, own)
            except TransientError as exc:
                if placement is not None and exc.service == "kubernetes" and exc.reason == "Unreachable":
                    # Its endpoint or CA may have changed: the redelivery asks GKE again.
                    self.clusters.invalidate(placement.management_cluster)
                raise
        except TerminalError as exc:
            # The handler's final `reconcile` line logs it (error level, reason, service): one line per outcome.
            data = getattr(exc, "data", None)  # registry_verification.RegistryRejected names each registry's answer
            # The API hard-deletes a soft-deleted cluster only after Finalized=True: say what blocks cleanup.
            deleting = isinstance(decision, preconditions.Deleting)
            # Bad input names no service: its phase is where it was found (judging the cluster, or acting).
            phase = (
                status.phase_of(exc.service)
                if exc.service
                else (status.PHASE_PRECONDITIONS if decision is None else status.PHASE_RESOURCES)
            )
            report = status.terminal_failure(generation, exc.reason, exc.message, data, phase=phase, deleting=deleting)
            outcome = self._report(cluster_id, "terminal", report)
            return dataclasses.replace(outcome, reason=exc.reason, service=exc.service, detail=exc.message)

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

    def _platform_secret(self, raw: bytes) -> PullSecret:
        """The platform pull secret, parsed once per distinct content (the bytes are cached for a TTL)."""
        parsed = self._platform
        if parsed is None or parsed[0] != raw:
            parsed = (raw, dockerconfig.parse(raw, source="PULL_SECRET_SOURCE"))
            self._platform = parsed  # one assignment: concurrent events see the old or the new pair
        return parsed[1]

    def _pull_secret(
        self, act: preconditions.Act, deadline: Deadline, source: bytes | None = None
    ) -> tuple[MergeResult, frozenset[str]]:
        """The merged pull secret, and the registries whose merged entry is the cluster's own.

        `source`: the platform pull secret's bytes when the caller already holds them (the cache), else read.
        """
        platform: PullSecret | None = None
        if self.settings.pull_secret_source:
            raw = source
            if raw is None:
                with log.step("secretmanager.read_source"):
                    raw = self.store.read_source(self.settings.pull_secret_source, deadline)
            try:
                platform = self._platform_secret(raw)
            except dockerconfig.InvalidPullSecret:
                protect(dockerconfig.sensitive_strings_of(raw))
                raise
            protect(platform.sensitive_strings())
        own: PullSecret | None = None
        if act.cluster_pull_secret is not None:
            value = act.cluster_pull_secret
            protect(dockerconfig.sensitive_strings_of(value))  # before validation: a refused one stays unprinted
            if not isinstance(value, (str, dict)):
                raise dockerconfig.InvalidPullSecret("spec.pullSecret.data must be a JSON object or a JSON string")
            own = dockerconfig.parse(value, source="spec.pullSecret.data")
            protect(own.sensitive_strings())
        merged = dockerconfig.merge(
            platform,
            own,
            precedence=self.settings.merge_precedence,
            canonical_keys=self.settings.merge_canonical_registries,
        )
        if merged.shadowed:
            log.warning(
                "registry keys that fold to the same registry (the first kept, the others ignored): "
                + ", ".join(f"{d['shadowed']} -> {d['registry']} ({d['source']})" for d in merged.shadowed[:20]),
                operation="dockerconfig.merge",
            )
        if merged.conflicts:
            log.warning(
                f"registries defined by both sources; the {self.settings.merge_precedence} entry wins: "
                + ", ".join(merged.conflicts[:20]),
                operation="dockerconfig.merge",
            )
        return merged, _own_registries(merged.secret, own)

    def names(self, cluster_id: str) -> tuple[str, str]:
        """(Secret Manager secret id, Kubernetes Secret name) of a cluster; raises InvalidCluster."""
        settings = self.settings
        secret_id = settings.secret_id_template.format(cluster_id=cluster_id)
        if not _SECRET_ID.match(secret_id):
            raise preconditions.InvalidCluster(
                f"cluster id {cluster_id[:80]!r} cannot form a Secret Manager secret id ([A-Za-z0-9_-], 255 max)"
            )
        kube_name = settings.kubernetes_secret_template.format(cluster_id=cluster_id)
        if len(kube_name) > 253 or not _DNS_SUBDOMAIN.match(kube_name):
            raise preconditions.InvalidCluster(
                f"cluster id {cluster_id[:80]!r} cannot form a Kubernetes Secret name (lowercase DNS subdomain)"
            )
        if kubesecret.label_value(cluster_id) != cluster_id:
            # The admission policy admits only the Secret named after its cluster-id label's value.
            raise preconditions.InvalidCluster(
                f"cluster id {cluster_id[:80]!r} is not a Kubernetes label value (63 characters, alphanumeric ends)"
            )
        return secret_id, kube_name

    def _finalize(self, cluster_id: str, deleting: preconditions.Deleting, deadline: Deadline) -> Outcome:
        """Deletion: our Kubernetes Secret first, then the Secret Manager secret per DELETION_POLICY.

        Idempotent: what is already gone counts as done, so a repeat reports Finalized=True again.
        Objects that are not ours (neither hyperfleet.io/managed-by nor managed-by=hyperfleet) are left in place
        and named in `data`.
        """
        settings = self.settings
        secret_id, kube_name = self.names(cluster_id)
        data: dict[str, Any] = {"deletion_policy": settings.deletion_policy}
        placement = deleting.placement
        if self.delivery is not None:
            data.update(self.delivery.cleanup(deleting.project_id, secret_id, deadline))
        elif placement is None:
            data["kubernetes_cleanup"] = "placement unknown; nothing to delete"
        else:
            bind(management_cluster=placement.management_cluster)
            data.update(
                management_cluster=placement.management_cluster,
                kubernetes_namespace=placement.namespace,
                kubernetes_name=kube_name,
            )
            api = self.clusters.api_for(placement.management_cluster, deadline)
            self.kube.ensure_guarded(api, deadline)  # the delete relies on the policy to spare foreign Secrets
            with log.step("kubernetes.delete_secret", namespace=placement.namespace, name=kube_name) as fields:
                try:
                    deleted = self.kube.delete(api, placement.namespace, kube_name, deadline)
                    data["kubernetes_cleanup"] = "deleted" if deleted else "absent"
                except kubesecret.OwnershipConflict as exc:
                    log.warning(exc.message, operation="kubernetes.delete_secret")
                    data["kubernetes_cleanup"] = "not managed by hyperfleet; left in place"
                fields["result"] = data["kubernetes_cleanup"]
        if deleting.project_id is None:
            data["sm_cleanup"] = "no GCP project known; nothing to delete"
        else:
            data["sm_name"] = f"projects/{deleting.project_id}/secrets/{secret_id}"
            with log.step("secretmanager.delete_secret", secret_id=secret_id, policy=settings.deletion_policy) as f:
                try:
                    data["sm_cleanup"] = self.store.delete_secret(
                        project=deleting.project_id,
                        secret_id=secret_id,
                        policy=settings.deletion_policy,
                        deadline=deadline,
                    )
                except secretstore.OwnershipConflict as exc:
                    log.warning(exc.message, operation="secretmanager.delete_secret")
                    data["sm_cleanup"] = "not managed by hyperfleet; left in place"
                f["result"] = data["sm_cleanup"]
        message = (
            f"cleanup confirmed: Kubernetes Secret {data['kubernetes_cleanup']}; "
            f"Secret Manager secret {data['sm_cleanup']} (DELETION_POLICY={settings.deletion_policy})"
        )
        return self._report(cluster_id, "finalized", status.finalized(deleting.generation, message, data))

    def _provision(
        self,
        cluster_id: str,
        cluster: dict[str, Any],
        act: preconditions.Act,
        deadline: Deadline,
        own: dict[str, Any] | None = None,
    ) -> Outcome:
        """Provision one cluster in five steps: read, decide, store, apply, report."""
        secret_id, kube_name = self.names(cluster_id)
        target = _Target(
            cluster_id=cluster_id,
            cluster_name=str(cluster.get("name") or cluster_id),
            secret_id=secret_id,
            secret_name=f"projects/{act.project_id}/secrets/{secret_id}",
            kube_name=kube_name,
        )
        bind(management_cluster=act.placement.management_cluster)
        reported = _observed_generation(own)
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
        reads = self._read(target, act, deadline)
        stale = self._decide(target, act, reads)
        if stale is not None:
            return self._report(cluster_id, "stale", stale)
        stored = self._store(target, act, reads, own, deadline)
        data = _provisioned_data(target, act.placement, reads.merged, stored)
        desired, recorded = self._desired(target, act, reads=reads, stored=stored, own=own, deadline=deadline)
        if stored.repaired:
            log.warning(
                f"the newest Secret Manager version of {secret_id} had been disabled or destroyed; wrote a fresh one",
                operation="secretmanager.store",
            )
            data["repaired"] = "secret_manager_version"
        applied = self._apply(reads, desired, stored, deadline)
        return self._report_provisioned(
            target, act, reads=reads, stored=stored, applied=applied, recorded=recorded, data=data
        )

    def _read(self, target: _Target, act: preconditions.Act, deadline: Deadline) -> _Reads:
        """Step 1, read: the pull secret, the newest Secret Manager version and our live Secret, overlapped.

        Every read comes before any write, so that a terminal problem on one side leaves nothing written on
        the other. Registry handshakes (new fingerprints only) start here and overlap the rest.

        When the platform pull secret is in the cache (most events: no call to build the merged secret), the
        newest-version read runs on this thread while the pool probes: the same two calls overlap, with one
        hand-off to the pool instead of two. Otherwise the source read overlaps both, as the pool runs them.
        """
        placement = act.placement
        source_name = self.settings.pull_secret_source
        source = self.store.cached_source(source_name) if source_name else None
        # No call before the waits below when the merged secret needs no read: the newest version is this thread's.
        latest_here = not source_name or source is not None

        def probe_live() -> tuple[Any, kubesecret.Probed]:
            api = self.clusters.api_for(placement.management_cluster, deadline)
            self.kube.ensure_guarded(api, deadline)
            with log.step("kubernetes.probe_secret"):
                return api, self.kube.probe(api, placement.namespace, target.kube_name, deadline)

        live_future: Future[tuple[Any, kubesecret.Probed]] = (
            self._submit(probe_live) if self.delivery is None else self._submit(self.delivery.probe, target.secret_name)
        )
        latest_future = None if latest_here else self._submit(self.store.latest, target.secret_name, deadline)
        try:
            merged, own_registries = self._pull_secret(act, deadline, source)
            checks = self.registries.start(merged.secret, deadline, own=own_registries)
            if latest_future is None:
                latest = self.store.latest(target.secret_name, deadline)
            else:
                latest = latest_future.result()
            api, probed = live_future.result()
        except BaseException:
            _settle([f for f in (live_future, latest_future) if f is not None], deadline)
            raise
        return _Reads(merged=merged, checks=checks, latest=latest, api=api, probed=probed)

    def _decide(self, target: _Target, act: preconditions.Act, reads: _Reads) -> status.Report | None:
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

    def _store(
        self,
        target: _Target,
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
                labels=secret_labels(
                    adapter=self.settings.adapter_name,
                    cluster_id=target.cluster_id,
                    cluster_name=target.cluster_name,
                ),
                deadline=deadline,
                latest=reads.latest,
                current_generation=lambda: self._current_generation(target.cluster_id),
                owned=_still_ours(own, target.secret_name, reads.latest),
            )
            fields.update(written=stored.written, writes=stored.writes)
        return stored

    def _desired(
        self,
        target: _Target,
        act: preconditions.Act,
        *,
        reads: _Reads,
        stored: secretstore.StoreResult,
        own: dict[str, Any] | None,
        deadline: Deadline,
    ) -> tuple[DesiredSecret, dict[str, Any]]:
        """The Kubernetes Secret to apply (the stored content, its labels) and the lineage it records."""
        settings = self.settings
        merged = reads.merged
        desired = DesiredSecret(
            namespace=act.placement.namespace,
            name=target.kube_name,
            content=merged.secret.canonical,
            fingerprint=merged.secret.fingerprint,
            generation=act.generation,
            source_version=stored.version_name,
            labels=kubesecret.secret_labels(
                adapter=settings.adapter_name, cluster_id=target.cluster_id, cluster_name=target.cluster_name
            ),
            created_by=self.identity_email or f"hyperfleet-{settings.adapter_name}-adapter",
        )
        live_annotations = ((reads.probed.live or {}).get("metadata") or {}).get("annotations") or {}
        recorded = self._lineage(
            stored,
            previous=lineage.from_report(((own or {}).get("data") or {}).get("lineage")),
            live=lineage.decode(live_annotations.get(kubesecret.A_LINEAGE)),
            fingerprints=merged.secret.registry_fingerprints(),
            deadline=deadline,
        )
        if recorded:
            desired = dataclasses.replace(desired, lineage=lineage.encode(recorded))
        return desired, recorded

    def _apply(
        self, reads: _Reads, desired: DesiredSecret, stored: secretstore.StoreResult, deadline: Deadline
    ) -> kubesecret.ApplyResult:
        """Step 4, apply: the Kubernetes Secret (external-secrets: the secret's access), while a new version's
        read-back and the cluster's generation re-read (A3 of secretstore/versions.py) run alongside; all must
        succeed before a report.

        The apply starts only after the Secret Manager write succeeded, so Kubernetes never holds a version
        Secret Manager refused. What fails beside it (the read-back, the generation moved on) fails the
        delivery transiently; Kubernetes then holds the stored version and its redelivery converges.
        """
        confirmed = self._submit(stored.confirm) if stored.confirm is not None else None
        verified = self._submit(stored.verify) if stored.verify is not None else None
        try:
            if self.delivery is None:
                with log.step("kubernetes.apply_secret", namespace=desired.namespace, name=desired.name) as fields:
                    applied = self.kube.apply(reads.api, desired, deadline, reads.probed)
                    fields.update(written=applied.written, stale=applied.stale)
            else:  # writes no Secret: its own step says what it does (secretmanager.grant_access)
                applied = self.delivery.apply(reads.api, desired, deadline, reads.probed)
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
        target: _Target,
        act: preconditions.Act,
        *,
        reads: _Reads,
        stored: secretstore.StoreResult,
        applied: kubesecret.ApplyResult,
        recorded: dict[str, Any],
        data: dict[str, Any],
    ) -> Outcome:
        """Step 5, report: stale, applied or unchanged, with what was repaired, the lineage and the retention."""
        if self.delivery is None:
            data["kubernetes_resource_version"] = applied.resource_version
        else:
            data.update(self.delivery.status_data(act.placement.namespace, applied, stored_written=stored.written))
        if applied.stale:
            report = status.stale(act.generation, applied.recorded_generation, data)
            return self._report(target.cluster_id, "stale", _with_registries(report, reads.checks))
        live = reads.probed.live
        if applied.written and not stored.written and live is not None:
            data.setdefault("repaired", "kubernetes_secret")
        elif applied.written and live is None and not stored.written:
            data.setdefault("repaired", "kubernetes_secret_recreated")
        data["lineage"] = lineage.report(
            recorded, sm_version=stored.version_name, kubernetes_resource_version=applied.resource_version
        )
        if stored.written:
            data["retention"] = self._retention(stored.version_name, kubernetes_points_at=stored.version_name)
        changed = stored.written or applied.written
        return self._report(
            target.cluster_id,
            "applied" if changed else "unchanged",
            _with_registries(status.provisioned(act.generation, changed=changed, data=data), reads.checks),
        )

    def _current_generation(self, cluster_id: str) -> int | None:
        """The cluster's generation as the API holds it now (asked after each Secret Manager write)."""
        cluster = self.hyperfleet.get_cluster(cluster_id)
        generation = (cluster or {}).get("generation")
        return generation if isinstance(generation, int) else None

    def _lineage(
        self,
        stored: secretstore.StoreResult,
        *,
        previous: dict[str, Any],
        live: dict[str, Any],
        fingerprints: dict[str, str],
        deadline: Deadline,
    ) -> dict[str, Any]:
        """The lineage of the version the Secret points at: from our last status, else the live Secret,
        else advanced from the last status to this version ("since" = the version's creation time, so
        every delivery pointing at it computes the same object and the Kubernetes Secret is written once)."""
        version = lineage.version_id(stored.version_name)
        for known in (previous, live):
            if known and known.get("version") == version:
                return known
        created = stored.created_at
        if created is None:
            created = self.store.created_at(stored.version_name, deadline) or int(time.time())
        return lineage.advance(
            previous or live,
            fingerprints=fingerprints,
            version_name=stored.version_name,
            previous_version=(previous or live).get("version"),
            now=created,
        )

    def _retention(self, version_name: str, kubernetes_points_at: str) -> dict[str, Any]:
        """Best effort after a successful write: failures are logged, the next write tries again.

        Runs after the Kubernetes apply succeeded, so the Secret points at `kubernetes_points_at` now;
        that version is never destroyed, whatever its age.
        """
        protected = {version_name, kubernetes_points_at}
        secret_name = version_name.rsplit("/versions/", 1)[0]
        newest = lineage.version_id(version_name)
        if newest.isdigit() and int(newest) <= self.settings.retain_versions:
            return {"keep": self.settings.retain_versions, "destroyed": []}  # nothing can be older: no list call
        try:
            with log.step("secretmanager.retention", keep=self.settings.retain_versions) as fields:
                result = self.store.apply_retention(
                    secret_name,
                    keep=self.settings.retain_versions,
                    protected=protected,
                    deadline=Deadline(min(10.0, self.settings.retry_deadline_s)),
                )
                fields["destroyed"] = len(result.destroyed)
        except AdapterError as exc:
            log.warning(f"version retention skipped: {exc.message}", operation="secretmanager.retention")
            return {"keep": self.settings.retain_versions, "error": exc.reason}
        return {"keep": self.settings.retain_versions, "destroyed": list(result.destroyed)}


def _with_registries(report: status.Report, checks: registry_verification.Pending | None) -> status.Report:
    """Add each registry's answer to `data`; a refused credential that did not stop the write (report mode, or
    a platform entry in enforce mode) turns Health False in either mode."""
    if checks is None:
        return report
    verification = checks.result()
    report.data.update(verification.data())
    if verification.rejected:
        return status.registry_rejected(report, verification.rejected)
    return report


def _own_registries(merged: PullSecret, own: PullSecret | None) -> frozenset[str]:
    """The merged registries whose entry is exactly one of the cluster's own pull secret's entries."""
    if own is None:
        return frozenset()
    theirs = {dockerconfig.canonical_bytes(entry) for entry in own.document()["auths"].values()}
    return frozenset(r for r, e in merged.document()["auths"].items() if dockerconfig.canonical_bytes(e) in theirs)


def _provisioned_data(
    target: _Target, placement: preconditions.Placement, merged: MergeResult, stored: secretstore.StoreResult
) -> dict[str, Any]:
    """The status `data` of a provisioned pull secret: where it went, what it holds (names and fingerprints)."""
    data: dict[str, Any] = {
        "sm_name": target.secret_name,
        "sm_version": stored.version_name,
        "management_cluster": placement.management_cluster,
        "kubernetes_namespace": placement.namespace,
        "kubernetes_name": target.kube_name,
        "fingerprint": merged.secret.short_fingerprint,
        "registries": list(merged.secret.registries),
    }
    if merged.conflicts:
        data["conflicts"] = list(merged.conflicts)
        data["conflict_details"] = [dict(d) for d in merged.conflict_details[:50]]
    if merged.shadowed:
        data["shadowed"] = [dict(d) for d in merged.shadowed[:50]]
    return data


def _observed_generation(own: dict[str, Any] | None) -> int:
    value = (own or {}).get("observed_generation")
    return value if isinstance(value, int) else 0


def _still_ours(own: dict[str, Any] | None, secret_name: str, latest: secretstore.Latest) -> bool:
    """Our last status names this secret, and its newest version is still the one we pointed at, with the
    content we reported (a secret deleted and created again numbers its versions from 1 again).

    Then nobody else wrote to it since we did, and its ownership was checked when we first wrote it.
    """
    data = (own or {}).get("data") or {}
    if latest.data is None or data.get("sm_name") != secret_name or data.get("sm_version") != latest.name:
        return False
    return bool(data.get("fingerprint")) and hashlib.sha256(latest.data).hexdigest()[:12] == data.get("fingerprint")
