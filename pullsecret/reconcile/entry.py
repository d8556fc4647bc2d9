"""A cluster reconcile's entry: read the cluster and its statuses, judge the preconditions, then wait, finalize a
deletion or provision.

read cluster ‖ statuses → preconditions → wait (report why) | finalize (pullsecret.reconcile.finalize) | provision
(pullsecret.reconcile.provisioning: read → decide → store → apply → report) → the one status report of the event. Every
report is sent by pullsecret.reconcile.outcome; what each says is decided by the step that found it. The process's
collaborators
come from its `Application` (pullsecret.app); nothing here holds state between events.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pullsecret import declared
from pullsecret.app import Application, settle
from pullsecret.errors import TerminalError, TransientError
from pullsecret.hyperfleet.answers import UnparseableCluster
from pullsecret.logs import bind, log
from pullsecret.model import preconditions, status
from pullsecret.reconcile import finalize
from pullsecret.reconcile.outcome import Outcome, report
from pullsecret.reconcile.provisioning import provision
from pullsecret.retrying import Deadline


def run(app: Application, cluster_id: str, deadline: Deadline, *, event_generation: int | None = None) -> Outcome:
    """Reconcile one cluster; raises TransientError for redelivery, reports terminal failures itself. Safe to call
    from many threads at once."""
    statuses_future = app.submit(app.hyperfleet.list_statuses, cluster_id)
    try:
        with log.step("hyperfleet.get_cluster"):
            cluster = app.hyperfleet.get_cluster(cluster_id)
    except UnparseableCluster as exc:
        settle([statuses_future], deadline)
        generation = exc.generation if exc.generation is not None else event_generation
        if generation is None or generation < 1:
            return Outcome("terminal", reason=exc.reason, detail=f"{exc.message}; cannot report a status")
        outcome = report(app, cluster_id, "terminal", _terminal_report(generation, None, exc))
        return dataclasses.replace(outcome, reason=exc.reason, service=exc.service, detail=exc.message)
    except BaseException:
        settle([statuses_future], deadline)
        raise
    if cluster is None:
        settle([statuses_future], deadline)
        return Outcome("gone", detail=finalize.gone(app, cluster_id, deadline))
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
        decision = preconditions.evaluate(cluster, statuses, app.settings, cluster_id=cluster_id)
        return _act(app, cluster_id, cluster, statuses, decision, generation=generation, deadline=deadline)
    except TerminalError as exc:
        # The handler's final `reconcile` line logs it (error level, reason, service): one line per outcome.
        outcome = report(app, cluster_id, "terminal", _terminal_report(generation, decision, exc))
        return dataclasses.replace(outcome, reason=exc.reason, service=exc.service, detail=exc.message)


def _act(
    app: Application,
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
        return report(app, cluster_id, "skipped", status.preconditions_not_met(generation, decision.message))
    try:
        if isinstance(decision, preconditions.Deleting):
            message, data = finalize.finalize(app, cluster_id, decision, deadline)
            return report(app, cluster_id, "finalized", finalize.finalized_report(decision, message, data))
        own = preconditions.statuses_by_adapter(statuses).get(app.settings.adapter_name)
        return provision(app, cluster_id, cluster, decision, deadline, own=own)
    except TransientError as exc:
        if decision.placement is not None:
            app.delivery.after_transient(decision.placement, exc)  # e.g. a cached client gone stale
        raise


def _terminal_report(generation: int, decision: preconditions.Decision | None, exc: TerminalError) -> status.Report:
    """The status of a terminal failure: its reason and message, and the phase it was found in."""
    data = getattr(exc, "data", None)  # registry_verification.RegistryRejected names each registry's answer
    # The API hard-deletes a soft-deleted cluster only after Finalized=True: say what blocks cleanup.
    deleting = isinstance(decision, preconditions.Deleting)
    # Bad input names no service: its phase is where it was found (judging the cluster, or acting).
    phase = (
        declared.WORDS.phase_of(exc.service)
        if exc.service
        else (status.PHASE_PRECONDITIONS if decision is None else status.PHASE_RESOURCES)
    )
    return status.terminal_failure(
        generation, exc.reason, exc.message, data, words=declared.WORDS, phase=phase, deleting=deleting
    )
