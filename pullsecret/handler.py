"""Event intake and the error policy around one reconcile.

Transient → TransientError out of `handle` (main.py answers 503, Pub/Sub redelivers). Terminal → reported inside
the reconcile, logged, acknowledged. Unexpected exceptions that look like I/O are transient; anything else is a
bug: logged with its stack trace for Error Reporting, reported as Health=False, and acknowledged so it cannot loop
forever. Every event ends with exactly one `reconcile` line carrying `result` (and `reason`, `service` when it
did not succeed).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import werkzeug.exceptions

from pullsecret import config, logs
from pullsecret.clients import RuntimeIdentity, cluster_manager_client, secret_manager_client
from pullsecret.config import Settings
from pullsecret.delivery import admission_policy
from pullsecret.delivery.external_secrets import ExternalSecretsDelivery
from pullsecret.delivery.kubesecret import KubeSecrets
from pullsecret.delivery.management_clusters import ManagementClusters
from pullsecret.errors import ConfigError, TerminalError, TransientError, looks_like_io
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import log
from pullsecret.model import events, status
from pullsecret.reconcile import Outcome, Reconciler
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.source import rotation

POOL_WORKERS = 128
# Severity of the final `reconcile` line per result: a person filtering on severity sees what needs a look.
_SEVERITY = {"terminal": "ERROR", "transient": "WARNING", "ignored": "WARNING", "expired": "WARNING"}


class Adapter:
    """Per-process state: settings, clients, pool. Build with `Adapter.from_environment()`."""

    def __init__(self, settings: Settings, identity: RuntimeIdentity | None = None) -> None:
        self.settings = settings
        log.configure(level=settings.log_level)
        if not settings.allowed_management_clusters:
            log.warning(
                "ALLOWED_MANAGEMENT_CLUSTERS is unset: the pull secret goes to whichever GKE cluster the placement "
                "status names, as far as the runtime identity can reach it (docs/trust.md)",
                operation="config",
            )
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
                secrets = secret_manager_client(identity, settings.secret_manager_emulator_host)
                self._reconciler = Reconciler(
                    settings,
                    hyperfleet=HyperFleetClient(settings),
                    store=SecretStore(
                        secrets,
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
                    kube=KubeSecrets(
                        settings.field_manager,
                        admission_policy.expected(
                            identity_email=identity.email,
                            namespace_pattern=settings.management_namespace_pattern.pattern,
                            adapter_name=settings.adapter_name,
                            secret_template=settings.kubernetes_secret_template,
                        ),
                    ),
                    pool=pool,
                    identity_email=identity.email,
                    delivery=_delivery(settings, secrets),
                )
            return self._reconciler

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
                    event_type=parsed.event_type[:200],
                    delivery=parsed.delivery,
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
                delivery=parsed.delivery,
                generation=parsed.generation,
                age_s=round(age, 3) if age is not None else None,
            )
            if parsed.unusable_generation is not None:
                log.warning(
                    f"the event's generation {parsed.unusable_generation} is not a positive integer; ignored "
                    "(the cluster's generation as the HyperFleet API holds it is used)",
                    operation="event",
                    delivery=parsed.delivery,
                )
            if self.settings.max_event_age_s and age is not None and age > self.settings.max_event_age_s:
                log.warning(
                    f"event is {age:.0f} s old, over MAX_EVENT_AGE ({self.settings.max_event_age_s:.0f} s); "
                    "acknowledged without action (Sentinel sends a fresh one)",
                    operation="reconcile",
                    result="expired",
                    reason="EventExpired",
                    delivery=parsed.delivery,
                )
                return Outcome("expired", reason="EventExpired")
            return self._run_and_log(parsed, start)

    def _rotate(self, notification: events.SecretVersionAdded) -> Outcome:
        """A new platform pull secret version: fan out reconcile events (pullsecret.source.rotation)."""
        reconciler = self.reconciler()
        with self._lock:
            if self._publisher is None:
                self._publisher = rotation.Publisher(self.identity.credentials)
        try:
            result, published = rotation.fan_out(
                self.settings,
                notification,
                hyperfleet=reconciler.hyperfleet,
                store=reconciler.store,
                publisher=self._publisher,
                deadline=Deadline(self.settings.rotation_slice_s),
                state_project=self.identity.project_id,
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
            return self._run_and_log(request, time.perf_counter())

    def _run_and_log(self, request: events.ReconcileRequest, start: float) -> Outcome:
        """Run one reconcile and write its final `reconcile` line (result, reason, service); re-raises transients."""
        try:
            outcome = self._run(request)
        except TransientError as exc:
            failed = Outcome("transient", reason=exc.reason, service=exc.service, detail=exc.message)
            self._log_final(request, start, failed)
            raise
        self._log_final(request, start, outcome)
        return outcome

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
            message += "; the CLI exits 3, try again" if request.delivery == "cli" else "; Pub/Sub redelivers the event"
        severity = _SEVERITY.get(outcome.result, "INFO")
        log.log(
            severity,
            message,
            operation="reconcile",
            result=outcome.result,
            reason=reason,
            service=outcome.service,
            duration_ms=round((time.perf_counter() - start) * 1000, 2),
            generation=outcome.report.generation if outcome.report else None,
            delivery=request.delivery,
        )

    def _run(self, request: events.ReconcileRequest) -> Outcome:
        """One reconcile; TransientError propagates (the caller logs it), everything else becomes an Outcome."""
        deadline = Deadline(self.settings.retry_deadline_s)
        try:
            return self.reconciler().run(request.cluster_id, deadline)
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


def _delivery(settings: Settings, secrets: Any) -> ExternalSecretsDelivery | None:
    """KUBERNETES_DELIVERY's delivery: None for direct (the reconcile's own Kubernetes steps)."""
    if settings.kubernetes_delivery != "external-secrets" or settings.external_secrets_principal_template is None:
        return None
    return ExternalSecretsDelivery(
        secrets,
        principal_template=settings.external_secrets_principal_template,
        namespace_pattern=settings.management_namespace_pattern,
    )


class Redeliver(werkzeug.exceptions.ServiceUnavailable):
    """A transient failure, answered 503 so that Pub/Sub redelivers.

    Flask renders an HTTPException raised by a view as its response and logs nothing, whereas any other
    exception is printed to stderr as a raw traceback (outside the JSON logger and the redactor, and into
    Error Reporting on every redelivery). The structured warning line has already been written.
    """

    def __init__(self, error: TransientError) -> None:
        super().__init__(f"transient failure ({error.reason}); Pub/Sub redelivers the event")


def log_malformed_delivery(content_type: str | None, body: bytes) -> str:
    """Log a request that is neither a CloudEvent nor a Pub/Sub push envelope; returns the answer's text.

    functions-framework rejects it (400) before the function runs and logs nothing; its HTML answer echoes
    the request's headers and body. The line names the body's top-level keys only: never its values.
    """
    keys: list[str] = []
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        keys = [str(key)[:40] for key in list(parsed)[:10]]
    shape = f"top-level keys {keys}" if keys else "no JSON object"
    reason = (
        "neither a CloudEvent nor a Pub/Sub push envelope (which needs `subscription` and a `message` with "
        f"`data` and `messageId`): {shape}, Content-Type {str(content_type or '-')[:60]}, {len(body)} bytes"
    )
    log.warning(
        f"delivery rejected (400) without action: {reason}",
        operation="reconcile",
        result="malformed",
        reason="MalformedDelivery",
    )
    return f"malformed delivery: {reason}\n"


def effective_configuration(settings: Settings) -> dict[str, Any]:
    """The settings as one log line shows them: every field, no secret (the API URL loses any user:password)."""
    shown: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, re.Pattern):
            value = value.pattern
        elif isinstance(value, tuple):
            value = list(value)
        shown[item.name] = value
    url = urlsplit(settings.hyperfleet_api_url)
    if url.username or url.password:
        host = (url.hostname or "") + (f":{url.port}" if url.port else "")
        shown["hyperfleet_api_url"] = urlunsplit(url._replace(netloc=host))
    return shown


def start() -> Adapter:
    """Cold start of the function: build the adapter, log the effective configuration in one line.

    A configuration error is one structured ERROR line naming the variable and the reason, then the process
    exits (status 1): the instance fails to start instead of failing every event, and no traceback is printed.
    """
    try:
        built = adapter()
    except ConfigError as exc:
        log.error(
            f"configuration error: {exc}",
            operation="startup",
            variable=exc.variable,
            reason=str(exc),
        )
        raise SystemExit(1) from None
    log.info(
        "adapter configured",
        operation="startup",
        configuration=effective_configuration(built.settings),
    )
    return built


_adapter: Adapter | None = None
_adapter_lock = threading.Lock()


def adapter() -> Adapter:
    """The process-wide adapter, built from the environment on first call."""
    global _adapter  # noqa: PLW0603 - one per process, by design (warm invocations reuse clients)
    with _adapter_lock:
        if _adapter is None:
            _adapter = Adapter.from_environment()
        return _adapter
