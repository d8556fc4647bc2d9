"""Event intake and the error policy around one reconcile.

Transient → raise (Pub/Sub redelivers). Terminal → reported inside the reconcile, logged, acknowledged.
Unexpected exceptions that look like I/O are transient; anything else is a bug: logged with its stack
trace for Error Reporting, reported as Health=False, and acknowledged so it cannot loop forever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pullsecret import config, events, logs, rotation, status
from pullsecret.clients import RuntimeIdentity, cluster_manager_client, secret_manager_client
from pullsecret.config import Settings
from pullsecret.errors import TerminalError, TransientError, looks_like_io
from pullsecret.hyperfleet import HyperFleetClient
from pullsecret.kubesecret import KubeSecrets
from pullsecret.logs import log
from pullsecret.management import ManagementClusters
from pullsecret.reconcile import Outcome, Reconciler
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore

POOL_WORKERS = 128


class Adapter:
    """Per-process state: settings, clients, pool. Build with `Adapter.from_environment()`."""

    def __init__(self, settings: Settings, identity: RuntimeIdentity | None = None) -> None:
        self.settings = settings
        log.configure(level=settings.log_level)
        self.identity = identity or RuntimeIdentity()
        self._lock = threading.Lock()
        self._reconciler: Reconciler | None = None
        self._publisher: rotation.Publisher | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Adapter:
        return cls(config.load(env))

    def reconciler(self) -> Reconciler:
        """Clients are built on first use (not at import: cold start stays short), once, under a lock."""
        with self._lock:
            if self._reconciler is None:
                settings = self.settings
                identity = self.identity
                log.configure(project_id=identity.project_id)
                pool = ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix="pullsecret")
                self._reconciler = Reconciler(
                    settings,
                    hyperfleet=HyperFleetClient(settings),
                    store=SecretStore(
                        secret_manager_client(identity, settings.secret_manager_emulator_host),
                        replication_locations=settings.secret_replication_locations,
                        kms_key=settings.secret_kms_key,
                        source_ttl_s=settings.pull_secret_source_ttl_s,
                    ),
                    clusters=ManagementClusters(
                        cluster_manager_client(identity, settings.gke_emulator_host),
                        identity,
                        endpoint=settings.management_endpoint,
                        vpc_egress=settings.vpc_egress,
                    ),
                    kube=KubeSecrets(settings.field_manager, identity_email=identity.email),
                    pool=pool,
                    identity_email=identity.email,
                )
            return self._reconciler

    def handle(self, attributes: Mapping[str, Any], data: Any, *, cloud_trace_context: str | None = None) -> Outcome:
        """Handle one delivered CloudEvent; raises TransientError to have it redelivered."""
        parsed: events.ParsedEvent | events.SecretVersionAdded | None = events.parse_notification(
            attributes, data, cloud_trace_context=cloud_trace_context
        )
        if parsed is None:
            parsed = events.parse_event(attributes, data, cloud_trace_context=cloud_trace_context)
        labels = {"adapter": self.settings.adapter_name, "event_id": parsed.event_id[:128]}
        with logs.event_context(labels=labels, trace=parsed.trace):
            start = time.perf_counter()
            if isinstance(parsed, events.SkippedEvent):
                log.info(
                    f"event acknowledged without action: {parsed.reason}",
                    operation="reconcile",
                    result="ignored",
                    event_type=parsed.event_type[:200],
                    delivery=parsed.delivery,
                )
                return Outcome("ignored")
            if isinstance(parsed, events.SecretVersionAdded):
                return self._rotate(parsed)
            logs.bind(cluster_id=parsed.cluster_id)
            age = events.event_age_s(parsed)
            if self.settings.max_event_age_s and age is not None and age > self.settings.max_event_age_s:
                log.warning(
                    f"event is {age:.0f} s old, over MAX_EVENT_AGE ({self.settings.max_event_age_s:.0f} s); "
                    "acknowledged without action (Sentinel sends a fresh one)",
                    operation="reconcile",
                    result="expired",
                )
                return Outcome("expired")
            outcome = self._run(parsed)
            log.info(
                f"reconcile of cluster {parsed.cluster_id}: {outcome.result}",
                operation="reconcile",
                result=outcome.result,
                duration_ms=round((time.perf_counter() - start) * 1000, 2),
                generation=outcome.report.generation if outcome.report else None,
                delivery=parsed.delivery,
            )
            return outcome

    def _rotate(self, notification: events.SecretVersionAdded) -> Outcome:
        """A new platform pull secret version: fan out reconcile events (pullsecret.rotation)."""
        reconciler = self.reconciler()
        with self._lock:
            if self._publisher is None:
                self._publisher = rotation.Publisher(self.identity.credentials)
        result, published = rotation.fan_out(
            self.settings,
            notification,
            hyperfleet=reconciler.hyperfleet,
            store=reconciler.store,
            publisher=self._publisher,
            deadline=Deadline(max(self.settings.retry_deadline_s, 300.0)),
        )
        log.info(
            f"Secret Manager notification for {notification.secret[:200]}: {result}",
            operation="rotation",
            result=result,
            published=published,
        )
        return Outcome(result)

    def reconcile_cluster(self, cluster_id: str, *, event_id: str = "cli") -> Outcome:
        """One reconcile of `cluster_id` outside any event (the operator CLI); raises TransientError."""
        request = events.ReconcileRequest(
            cluster_id=cluster_id, generation=None, event_id=event_id, event_type="manual", delivery="cli"
        )
        labels = {"adapter": self.settings.adapter_name, "event_id": event_id}
        with logs.event_context(labels=labels, trace=None):
            logs.bind(cluster_id=cluster_id)
            start = time.perf_counter()
            outcome = self._run(request)
            log.info(
                f"reconcile of cluster {cluster_id}: {outcome.result}",
                operation="reconcile",
                result=outcome.result,
                duration_ms=round((time.perf_counter() - start) * 1000, 2),
                generation=outcome.report.generation if outcome.report else None,
                delivery="cli",
            )
            return outcome

    def _run(self, request: events.ReconcileRequest) -> Outcome:
        deadline = Deadline(self.settings.retry_deadline_s)
        try:
            return self.reconciler().run(request.cluster_id, deadline)
        except TransientError as exc:
            if exc.reason == "Unauthenticated":
                self.identity.invalidate()
            log.warning(
                f"transient failure, the event will be redelivered: {exc.message}",
                operation="reconcile",
                result="transient",
                error_kind="transient",
                reason=exc.reason,
                service=exc.service,
            )
            raise
        except TerminalError as exc:
            # Terminal errors before a generation was known (e.g. the API's answer is unusable).
            log.error(
                f"terminal failure: {exc.message}",
                operation="reconcile",
                result="terminal",
                error_kind="terminal",
                reason=exc.reason,
                service=exc.service,
            )
            return Outcome("terminal")
        except Exception as exc:  # noqa: BLE001 - a bug is reported and acknowledged, never crash-looped
            if looks_like_io(exc):
                log.warning(
                    f"I/O failure ({type(exc).__name__}), the event will be redelivered",
                    operation="reconcile",
                    result="transient",
                    error_kind="transient",
                )
                raise TransientError(f"I/O failure: {type(exc).__name__}") from None
            log.log(
                "ERROR",
                f"unexpected error reconciling cluster {request.cluster_id}",
                exc=exc,
                operation="reconcile",
                result="terminal",
                error_kind="unexpected",
            )
            self._report_unexpected(request.cluster_id, exc)
            return Outcome("terminal")

    def _report_unexpected(self, cluster_id: str, exc: Exception) -> None:
        reconciler = self.reconciler()
        try:
            cluster = reconciler.hyperfleet.get_cluster(cluster_id)
            generation = cluster.get("generation") if cluster else None
            if isinstance(generation, int) and generation >= 1:
                report = status.terminal_failure(
                    generation,
                    "UnexpectedError",
                    f"internal error ({type(exc).__name__}); see the adapter's logs",
                )
                reconciler.hyperfleet.report_status(cluster_id, report.body(self.settings.adapter_name))
        except (TransientError, TerminalError) as report_exc:
            log.warning(f"could not report the unexpected error: {report_exc.message}", operation="reconcile")


_adapter: Adapter | None = None
_adapter_lock = threading.Lock()


def adapter() -> Adapter:
    """The process-wide adapter, built from the environment on first call."""
    global _adapter  # noqa: PLW0603 - one per process, by design (warm invocations reuse clients)
    with _adapter_lock:
        if _adapter is None:
            _adapter = Adapter.from_environment()
        return _adapter
