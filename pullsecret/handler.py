"""Event intake and the error policy around one reconcile: `Adapter`, the process object with its intake.

Transient → TransientError out of `handle` (main.py answers 503, Pub/Sub redelivers). Terminal → reported inside
the reconcile, logged, acknowledged. Unexpected exceptions that look like I/O are transient; anything else is a
bug: logged with its stack trace for Error Reporting, reported as Health=False, and acknowledged so it cannot loop
forever. Every event ends with exactly one `reconcile` line carrying `result` (and `reason`, `service` when it
did not succeed).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from pullsecret import declared, logs, publishing
from pullsecret.app import Application
from pullsecret.errors import TerminalError, TransientError, looks_like_io
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.logs import log
from pullsecret.model import events, preconditions, status
from pullsecret.reconcile import entry
from pullsecret.reconcile.outcome import Outcome
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings

# Severity of the final `reconcile` line per result: a person filtering on severity sees what needs a look.
_SEVERITY = {"terminal": "ERROR", "transient": "WARNING", "ignored": "WARNING", "expired": "WARNING"}
# The adapter framework's event statuses (hyperfleet-adapter 3f746a5 pkg/metrics/recorder.go
# RecordEventProcessed: success, failed, skipped; internal/executor/handler.go), for the log-based metrics named
# as the framework's (terraform/monitoring.tf): a fleet dashboard built for framework adapters shows this one too.
_FAILED = frozenset({"terminal", "transient", "malformed"})
_SKIPPED = frozenset({"skipped", "stale", "ignored", "expired"})


def framework_fields(result: str, service: str | None, seconds: float) -> dict[str, Any]:
    """`event_status`, `duration_s` and, for a failure, `error_type` (the framework's phase) of a reconcile line."""
    event_status = "failed" if result in _FAILED else "skipped" if result in _SKIPPED else "success"
    fields: dict[str, Any] = {"event_status": event_status, "duration_s": round(seconds, 4)}
    if event_status == "failed":
        fields["error_type"] = declared.WORDS.phase_of(service)
    return fields


class Adapter(Application):
    """The process object (pullsecret.app.Application: settings, identity, collaborators built on first use) with
    the event intake and the error policy on top; one per process (`adapter()`). Build with
    `Adapter.from_environment()`."""

    def __init__(self, settings: Settings, identity: RuntimeIdentity | None = None) -> None:
        super().__init__(settings, identity)
        log.configure(level=settings.log_level)
        if not settings.allowed_management_clusters:
            log.warning(
                "ALLOWED_MANAGEMENT_CLUSTERS is unset: the pull secret goes to whichever GKE cluster the placement "
                "status names, as far as the runtime identity can reach it (docs/trust.md)",
                operation="config",
            )
        if not settings.allowed_secret_projects and settings.secret_project_id is None:
            log.warning(
                "ALLOWED_SECRET_PROJECTS and SECRET_PROJECT_ID are unset: each cluster's secret is written in "
                "whichever GCP project its spec.platform.gcp.projectID names, as far as the runtime identity can "
                "reach it (docs/trust.md)",
                operation="config",
            )
        strange = preconditions.unknown_adapters(settings.precondition_adapters)
        if strange is not None:
            log.warning(strange, operation="config")

    def handle(
        self,
        attributes: Mapping[str, Any],
        data: Any,
        *,
        cloud_trace_context: str | None = None,
        traceparent: str | None = None,
    ) -> Outcome:
        """Handle one delivered CloudEvent; raises TransientError to have it redelivered.

        `traceparent` is the W3C HTTP header; a `traceparent` extension on the event itself wins over it.
        """
        if traceparent and not attributes.get("traceparent"):
            attributes = {**attributes, "traceparent": traceparent}
        parsed: events.ParsedEvent | events.SecretVersionAdded | None = events.parse_notification(
            attributes, data, cloud_trace_context=cloud_trace_context
        )
        if parsed is None:
            parsed = events.parse_event(attributes, data, cloud_trace_context=cloud_trace_context)
        labels = {"adapter": self.settings.adapter_name, "event_id": parsed.event_id[:128]}
        with logs.event_context(labels=labels, trace=parsed.trace):
            start = time.perf_counter()
            if isinstance(parsed, events.SkippedEvent):
                # Malformed, or not ours: acknowledged, but worth a look (a producer may be misconfigured).
                log.warning(
                    f"event acknowledged without action: {parsed.reason}",
                    operation="reconcile",
                    result="ignored",
                    reason="EventIgnored",
                    **framework_fields("ignored", None, time.perf_counter() - start),
                    event_type=parsed.event_type[:200],
                    delivery=parsed.transport,
                )
                return Outcome("ignored", reason="EventIgnored", detail=parsed.reason)
            if isinstance(parsed, events.SecretVersionAdded):
                return self._rotate(parsed)
            logs.bind(cluster_id=parsed.cluster_id)
            age = events.event_age_s(parsed)
            log.debug(
                f"event for cluster {parsed.cluster_id} parsed",
                operation="event",
                event_type=parsed.event_type[:200],
                delivery=parsed.transport,
                generation=parsed.generation,
                age_s=round(age, 3) if age is not None else None,
            )
            if parsed.unusable_generation is not None:
                log.warning(
                    f"the event's generation {parsed.unusable_generation} is not a positive integer; ignored "
                    "(the cluster's generation as the HyperFleet API holds it is used)",
                    operation="event",
                    delivery=parsed.transport,
                )
            if self.settings.max_event_age_s and age is not None and age > self.settings.max_event_age_s:
                log.warning(
                    f"event is {age:.0f} s old, over MAX_EVENT_AGE ({self.settings.max_event_age_s:.0f} s); "
                    "acknowledged without action (Sentinel sends a fresh one)",
                    operation="reconcile",
                    result="expired",
                    reason="EventExpired",
                    **framework_fields("expired", None, time.perf_counter() - start),
                    delivery=parsed.transport,
                )
                return Outcome("expired", reason="EventExpired")
            rekeyed = publishing.asks_rekeyed_read(attributes, data, self.settings.adapter_topic)
            if not rekeyed and publishing.carries_rekey_mark(data):
                log.warning(
                    "the event carries rekey's attribute but did not come from ADAPTER_TOPIC: the attribute is "
                    "ignored (only `rekey` publishes there; a forged or misrouted event asks nothing of the source)",
                    operation="event",
                    delivery=parsed.transport,
                    event_source=str(attributes.get("source", ""))[:200],
                )
            return self._run_and_log(parsed, start, rekeyed=rekeyed)

    def _rotate(self, notification: events.SecretVersionAdded) -> Outcome:
        """A Secret Manager notification: the configured source's to act on (pullsecret.source.base `notified`)."""
        try:
            notified = self.source.notified(
                notification, hyperfleet=self.hyperfleet, deadline=Deadline(self.settings.rotation_slice_s)
            )
        except TransientError as exc:
            # One structured line for the redelivered notification, as for a reconcile (main.py answers 503).
            log.warning(
                f"Secret Manager notification for {notification.secret[:200]}: transient ({exc.reason}): "
                f"{exc.message}; Pub/Sub redelivers the notification",
                operation="rotation",
                result="transient",
                reason=exc.reason,
                service=exc.service,
            )
            raise
        log.info(
            f"Secret Manager notification for {notification.secret[:200]}: {notified.result}",
            operation="rotation",
            result=notified.result,
            published=notified.published,
        )
        return Outcome(notified.result)

    def reconcile_cluster(self, cluster_id: str, *, event_id: str = "cli") -> Outcome:
        """One reconcile of `cluster_id` outside any event (the operator CLI); raises TransientError."""
        request = events.ReconcileRequest(
            cluster_id=cluster_id, generation=None, event_id=event_id, event_type="manual", transport="cli"
        )
        labels = {"adapter": self.settings.adapter_name, "event_id": event_id}
        with logs.event_context(labels=labels, trace=None):
            logs.bind(cluster_id=cluster_id)
            return self._run_and_log(request, time.perf_counter())

    def _run_and_log(self, request: events.ReconcileRequest, start: float, *, rekeyed: bool = False) -> Outcome:
        """Run one reconcile and write its final `reconcile` line (result, reason, service); re-raises transients.
        `rekeyed`: the event `rekey` published (pullsecret.publishing.REKEY_ATTRIBUTE): the source is asked again."""
        try:
            outcome = self._run(request, rekeyed=rekeyed)
        except TransientError as exc:
            self._forget(request.cluster_id)  # its redelivery asks the source again
            failed = Outcome("transient", reason=exc.reason, service=exc.service, detail=exc.message)
            self._log_final(request, start, failed)
            raise
        if outcome.report is None or not outcome.report.available:
            self._forget(request.cluster_id)  # not delivered and verified: the next event asks the source
        self._log_final(request, start, outcome)
        return outcome

    def _forget(self, cluster_id: str) -> None:
        """The source forgets what it keeps of the cluster; nothing is kept before the collaborators are built."""
        built = self._collaborators
        if built is not None:
            built.source.forget(cluster_id)

    def _log_final(self, request: events.ReconcileRequest, start: float, outcome: Outcome) -> None:
        reason, detail = outcome.reason, outcome.detail
        if reason is None and outcome.report is not None and not outcome.report.available:
            # Not done (skipped, stale, deleting): the Available condition says why.
            available = next((c for c in outcome.report.conditions if c.type == "Available"), None)
            if available is not None:
                reason, detail = available.reason, detail or available.message
        message = f"reconcile of cluster {request.cluster_id}: {outcome.result}"
        if reason is not None:
            message += f" ({reason}{' from ' + outcome.service if outcome.service else ''})"
        if detail:
            message += f": {detail}"
        if outcome.result == "transient":
            # Only an event is redelivered; the CLI's caller decides whether to try again.
            cli = request.transport == "cli"
            message += "; the CLI exits 3, try again" if cli else "; Pub/Sub redelivers the event"
        severity = _SEVERITY.get(outcome.result, "INFO")
        seconds = time.perf_counter() - start
        log.log(
            severity,
            message,
            operation="reconcile",
            result=outcome.result,
            reason=reason,
            service=outcome.service,
            duration_ms=round(seconds * 1000, 2),
            **framework_fields(outcome.result, outcome.service, seconds),
            generation=outcome.report.generation if outcome.report else None,
            delivery=request.transport,
        )

    def _run(self, request: events.ReconcileRequest, *, rekeyed: bool = False) -> Outcome:
        """One reconcile; TransientError propagates (the caller logs it), everything else becomes an Outcome."""
        deadline = Deadline(self.settings.retry_deadline_s)
        try:
            if rekeyed:
                self.source.forget(request.cluster_id, rekeyed=True)  # `rekey` published it: ask the source
            return entry.run(self, request.cluster_id, deadline, event_generation=request.generation)
        except TransientError as exc:
            if exc.reason == "Unauthenticated":
                self.identity.invalidate()
            raise
        except TerminalError as exc:
            # Terminal errors before a generation was known (e.g. the API's answer is unusable).
            return Outcome("terminal", reason=exc.reason, service=exc.service, detail=exc.message)
        except Exception as exc:  # noqa: BLE001 - a bug is reported and acknowledged, never crash-looped
            if looks_like_io(exc):
                raise TransientError(f"I/O failure: {type(exc).__name__}", reason="IOFailure") from None
            # The one line that reaches Error Reporting (its @type and stack trace); the final line follows.
            log.log(
                "ERROR",
                f"unexpected error reconciling cluster {request.cluster_id}",
                exc=exc,
                operation="reconcile",
                error_kind="unexpected",
            )
            self._report_unexpected(request.cluster_id, exc)
            return Outcome("terminal", reason="UnexpectedError", detail=f"internal error ({type(exc).__name__})")

    def _report_unexpected(self, cluster_id: str, exc: Exception) -> None:
        """The bug net's report (Health=False, terminal): best effort, and never raising itself, whatever fails in
        it (building the collaborators included: the bug may be that they cannot be built), so a bug is acknowledged
        once, never answered 500 on every delivery."""
        try:
            hyperfleet = self.hyperfleet
            cluster = hyperfleet.get_cluster(cluster_id)
            generation = cluster.get("generation") if cluster else None
            if isinstance(generation, int) and generation >= 1:
                report = status.terminal_failure(
                    generation,
                    "UnexpectedError",
                    f"internal error ({type(exc).__name__}); see the adapter's logs",
                    words=declared.WORDS,
                )
                hyperfleet.report_status(cluster_id, report.body(self.settings.adapter_name))
        except (TransientError, TerminalError) as report_exc:
            log.warning(f"could not report the unexpected error: {report_exc.message}", operation="reconcile")
        except Exception as report_exc:  # noqa: BLE001 - the bug net itself must not raise
            log.warning(
                f"could not report the unexpected error: {type(report_exc).__name__} while reporting",
                operation="reconcile",
            )


_adapter: Adapter | None = None
_adapter_lock = threading.Lock()


def adapter() -> Adapter:
    """The process-wide adapter, built from the environment on first call."""
    global _adapter  # noqa: PLW0603 - one per process, by design (warm invocations reuse clients)
    with _adapter_lock:
        if _adapter is None:
            _adapter = Adapter.from_environment()
        return _adapter
