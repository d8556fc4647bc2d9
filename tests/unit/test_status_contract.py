"""Every report follows the HyperFleet API's rules and the adapter framework's vocabulary (contract.md §2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pullsecret.declared import WORDS
from pullsecret.delivery.direct.reports import WORDING
from pullsecret.model import status


def _direct(*, changed: bool) -> dict[str, str]:
    """Direct mode's words for the platform source, as the reconcile passes them."""
    return {"applied": WORDING.applied(changed=changed), "available": WORDING.available(own_credentials=False)}


REPORTS = [
    status.provisioned(2, **_direct(changed=True), data={}),
    status.provisioned(2, **_direct(changed=False), data={}),
    status.preconditions_not_met(2, "waiting"),
    status.stale(2, 3, {}),
    status.terminal_failure(2, "InvalidPullSecret", "bad input", phase="resources", words=status.COMMON),
    status.terminal_failure(2, "PermissionDenied", "denied", phase=WORDS.phase_of("kubernetes"), words=status.COMMON),
    status.terminal_failure(2, "RequestRejected", "rejected", phase=WORDS.phase_of("hyperfleet"), words=status.COMMON),
    status.terminal_failure(2, "UnexpectedError", "bug", words=status.COMMON),
    status.finalized(2, "gone", {}),
    status.terminal_failure(
        2, "PermissionDenied", "delete secret s: denied", phase="resources", deleting=True, words=status.COMMON
    ),
    status.terminal_failure(2, "InvalidCluster", "bad id", deleting=True, words=status.COMMON),
    status.finalized(2, "gone", {}, unhealthy="ForbiddenSecretProject: Secret Manager not touched: p"),
]
FINALIZED_REASONS = {"NotDeleting", "CleanupInProgress", "CleanupConfirmed", "AdapterUnhealthy"}


def health_reason_ok(reason: str) -> bool:
    return reason in ("Healthy", "ResourcesSkipped") or (
        reason.startswith("ExecutionFailed:") and len(reason) > len("ExecutionFailed:")
    )


@pytest.mark.parametrize("report", REPORTS)
def test_reasons_come_from_the_framework_vocabulary(report: status.Report) -> None:
    conditions = {c.type: c for c in report.conditions}
    assert health_reason_ok(conditions["Health"].reason), conditions["Health"]
    if "Finalized" in conditions:
        assert conditions["Finalized"].reason in FINALIZED_REASONS
    assert conditions["Available"].status != "Unknown"  # kept by the server on a first report only


def test_runtime_failures_name_their_phase_and_keep_the_cause() -> None:
    denied = {c.type: c for c in REPORTS[5].conditions}
    assert denied["Health"].status == "False" and denied["Health"].reason == "ExecutionFailed:resources"
    assert denied["Available"].reason == "PermissionDenied" and "PermissionDenied" in denied["Health"].message
    rejected = {c.type: c for c in REPORTS[6].conditions}
    assert rejected["Health"].reason == "ExecutionFailed:preconditions"
    unexpected = {c.type: c for c in REPORTS[7].conditions}
    assert unexpected["Health"].reason == "ExecutionFailed:unknown"
    skipped = {c.type: c for c in REPORTS[2].conditions}
    assert skipped["Health"].status == "False" and skipped["Health"].reason == "ResourcesSkipped"


def test_a_terminal_failure_during_deletion_is_not_finalized_and_says_what_blocks_cleanup() -> None:
    # The API hard-deletes a soft-deleted cluster only once every required adapter reports Finalized=True.
    denied = {c.type: c for c in REPORTS[9].conditions}
    assert denied["Finalized"].status == "False" and denied["Finalized"].reason == "AdapterUnhealthy"
    assert "PermissionDenied" in denied["Finalized"].message and "delete secret s" in denied["Finalized"].message
    assert denied["Health"].reason == "ExecutionFailed:resources" and denied["Applied"].reason == "PermissionDenied"
    business = {c.type: c for c in REPORTS[10].conditions}
    assert business["Finalized"].reason == "AdapterUnhealthy" and business["Health"].status == "False"
    assert "Finalized" not in {c.type for c in REPORTS[5].conditions}  # not deleting: no Finalized at all


def test_observed_time_is_now_inside_the_server_window() -> None:
    before = datetime.now(UTC)
    body = REPORTS[0].body("pullsecret")
    observed = datetime.fromisoformat(body["observed_time"].replace("Z", "+00:00"))
    assert body["observed_time"].endswith("Z")
    assert before - timedelta(milliseconds=1) <= observed <= datetime.now(UTC)


@pytest.mark.parametrize("report", REPORTS)
def test_health_pairs_status_and_reason_as_the_framework_does(report: status.Report) -> None:
    # The framework's boilerplate: True only with Healthy; ResourcesSkipped and ExecutionFailed:* are False.
    health = next(c for c in report.conditions if c.type == "Health")
    assert (health.status == "True") == (health.reason == "Healthy"), health
