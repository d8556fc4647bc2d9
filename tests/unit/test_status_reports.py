"""Each status report, whole: its conditions (type, status, reason, message), its data and its body."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pullsecret.declared import WORDS
from pullsecret.delivery.direct.reports import WORDING
from pullsecret.delivery.external_secrets import mode as external_secrets_mode
from pullsecret.model import status


def _direct(*, changed: bool) -> dict[str, str]:
    """Direct mode's words for the platform source, as the reconcile passes them."""
    return {"applied": WORDING.applied(changed=changed), "available": WORDING.available(own_credentials=False)}


NOW = datetime(2026, 11, 23, 14, 5, 6, 789123, tzinfo=UTC)
UP_TO_DATE = "pull secret already up to date in Secret Manager and on the management cluster"
DATA = {"sm_version": "projects/p/secrets/s/versions/4", "kubernetes_namespace": "ns", "kubernetes_name": "n"}


def conditions(report: status.Report) -> list[tuple[str, str, str, str]]:
    return [(c.type, c.status, c.reason, c.message) for c in report.conditions]


def test_the_body_carries_generation_time_conditions_and_data() -> None:
    report = status.provisioned(7, **_direct(changed=True), data=dict(DATA))
    body = report.body("pullsecret", now=NOW.astimezone(timezone(timedelta(hours=2))))
    assert body == {
        "adapter": "pullsecret",
        "observed_generation": 7,
        "observed_time": "2026-11-23T14:05:06.789Z",  # UTC, milliseconds
        "conditions": [c.to_json() for c in report.conditions],
        "data": DATA,
    }
    assert body["conditions"][0] == {
        "type": "Applied",
        "status": "True",
        "reason": "SecretsApplied",
        "message": "pull secret stored in Secret Manager and applied to the management cluster",
    }


def test_the_body_is_in_utc_whatever_the_hosts_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        assert status.stale(1, 2, {}).body("a", now=NOW)["observed_time"] == "2026-11-23T14:05:06.789Z"
        assert status.stale(1, 2, {}).body("a")["observed_time"].endswith("Z")
    finally:
        monkeypatch.undo()
        time.tzset()


def test_the_body_without_a_time_is_stamped_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamped = status.stale(1, 2, {}).body("a")["observed_time"]
    assert stamped.endswith("Z")
    assert datetime.fromisoformat(stamped.replace("Z", "+00:00")) >= before


def test_messages_are_cut_at_the_limit() -> None:
    long = status.Condition("Applied", "False", "R", "m" * (status.MAX_MESSAGE + 5)).to_json()
    assert long["message"] == "m" * status.MAX_MESSAGE


def test_provisioned() -> None:
    report = status.provisioned(7, **_direct(changed=False), data=dict(DATA))
    assert report.generation == 7
    assert report.data == DATA
    assert report.available
    assert conditions(report) == [
        (
            "Applied",
            "True",
            "SecretsApplied",
            "pull secret already up to date in Secret Manager and on the management cluster",
        ),
        (
            "Available",
            "True",
            "PullSecretAvailable",
            "Pull secret ready: stored and delivered where this cluster's control plane runs.",
        ),
        ("Health", "True", "Healthy", "all operations completed"),
    ]


def test_in_external_secrets_mode_nothing_says_a_kubernetes_secret_was_applied_or_matches() -> None:
    """Issue 31: no Kubernetes Secret is written in external-secrets mode; the status says what the mode did."""
    words = external_secrets_mode.worded("1h30m")
    for changed in (True, False):
        for own in (False, True):  # the platform source, the Pull Secret Service
            report = status.provisioned(
                7,
                applied=words.applied(changed=changed),
                available=words.available(own_credentials=own),
                data=dict(DATA),
            )
            text = " ".join(c.message for c in report.conditions)
            assert "applied to the management cluster" not in text and "Kubernetes Secret" not in text
            assert "matches" not in text and "on the management cluster" not in text
            assert report.conditions[1].message.endswith("within 1 h 30 min.")
            assert ("own registry credentials" in report.conditions[1].message) == own


def test_preconditions_not_met() -> None:
    report = status.preconditions_not_met(2, "waiting for adapters: dns (no status)")
    assert not report.available
    assert report.data == {}
    assert conditions(report) == [
        ("Applied", "False", "PreconditionsNotMet", "waiting for adapters: dns (no status)"),
        (
            "Available",
            "False",
            "PreconditionsNotMet",
            "Waiting for the cluster's other setup steps: waiting for adapters: dns (no status). No action needed yet.",
        ),
        (
            "Health",
            "False",
            "ResourcesSkipped",
            "Resources skipped: waiting for adapters: dns (no status)" + status.WAITING,
        ),
    ]


def test_stale_carries_its_data() -> None:
    report = status.stale(3, 5, {"sm_name": "projects/p/secrets/s"})
    message = "generation 3 is older than generation 5 already applied; nothing changed"
    assert report.data == {"sm_name": "projects/p/secrets/s"}
    assert conditions(report) == [
        ("Applied", "False", "StaleGeneration", message),
        ("Available", "False", "StaleGeneration", status.AVAILABLE_MESSAGES["StaleGeneration"]),
        ("Health", "False", "ResourcesSkipped", f"Resources skipped: {message} (out-of-order delivery)"),
    ]


@pytest.mark.parametrize("reason", ["UnexpectedError", "PermissionDenied", "RequestRejected"])
def test_a_runtime_failure_turns_health_false_with_its_phase(reason: str) -> None:
    report = status.terminal_failure(
        4, reason, "it broke", {"k": "v"}, phase=status.PHASE_RESOURCES, words=status.COMMON
    )
    assert report.data == {"k": "v"}
    assert conditions(report) == [
        ("Applied", "False", reason, "it broke"),
        ("Available", "False", reason, status.AVAILABLE_MESSAGES[reason]),
        ("Health", "False", "ExecutionFailed:resources", f"Adapter failed at phase [resources]: {reason}: it broke"),
    ]


def test_a_business_failure_turns_health_false_and_reports_finalized_false_when_deleting() -> None:
    # ADR-0017: terminal errors, bad input included, are Health=False.
    report = status.terminal_failure(
        4, "InvalidPullSecret", "bad input", phase=status.PHASE_RESOURCES, deleting=True, words=status.COMMON
    )
    assert report.data == {}
    assert conditions(report) == [
        ("Applied", "False", "InvalidPullSecret", "bad input"),
        (
            "Available",
            "False",
            "InvalidPullSecret",
            "The pull secret in this cluster's settings is invalid: bad input. Correct it and save again.",
        ),
        (
            "Health",
            "False",
            "ExecutionFailed:resources",
            "Adapter failed at phase [resources]: InvalidPullSecret: bad input",
        ),
        ("Finalized", "False", "AdapterUnhealthy", "cleanup blocked (InvalidPullSecret): bad input"),
    ]


def test_finalized() -> None:
    done = status.finalized(6, "cleanup confirmed", {"sm_cleanup": "deleted"})
    assert done.data == {"sm_cleanup": "deleted"}
    assert conditions(done) == [
        ("Applied", "False", "ResourcesDeleted", "cleanup confirmed"),
        ("Available", "False", "ResourcesDeleted", "Pull secret removed: the cluster is being deleted."),
        ("Health", "True", "Healthy", "cleanup completed"),
        ("Finalized", "True", "CleanupConfirmed", "cleanup confirmed"),
    ]


def test_finalized_with_something_left_alone_on_purpose_turns_only_health_false() -> None:
    done = status.finalized(6, "cleanup confirmed", {}, unhealthy="ForbiddenSecretProject: Secret Manager not touched")
    assert conditions(done) == [
        ("Applied", "False", "ResourcesDeleted", "cleanup confirmed"),
        ("Available", "False", "ResourcesDeleted", "Pull secret removed: the cluster is being deleted."),
        ("Health", "False", "ExecutionFailed:preconditions", "ForbiddenSecretProject: Secret Manager not touched"),
        ("Finalized", "True", "CleanupConfirmed", "cleanup confirmed"),
    ]


def test_registry_rejected_turns_only_health_false() -> None:
    applied = status.provisioned(7, **_direct(changed=True), data=dict(DATA))
    report = status.registry_rejected(applied, ["quay.io", "gcr.io"])
    assert report.data == DATA
    assert conditions(report)[:2] == conditions(applied)[:2]
    assert conditions(report)[2] == (
        "Health",
        "False",
        "ExecutionFailed:registry",
        "the registry refused the pull secret's credential for quay.io, gcr.io; the pull secret was applied "
        "anyway (only the cluster's own entries stop a write, in REGISTRY_VERIFICATION=enforce); "
        "see data.registry_checks",
    )
    many = status.registry_rejected(applied, [f"r{i}.io" for i in range(12)])
    assert "for r0.io, r1.io, r2.io, r3.io, r4.io, r5.io, r6.io, r7.io, r8.io, r9.io and 2 more;" in (
        many.conditions[2].message
    )
    eleven = status.registry_rejected(applied, [f"r{i}.io" for i in range(11)])
    assert "r9.io and 1 more;" in eleven.conditions[2].message
    ten = status.registry_rejected(applied, [f"r{i}.io" for i in range(10)])
    assert "r9.io; the pull secret" in ten.conditions[2].message


@pytest.mark.parametrize(
    ("service", "phase"),
    [
        ("hyperfleet", "preconditions"),
        ("secretmanager", "resources"),
        ("gke", "resources"),
        ("kubernetes", "resources"),
        ("metadata", "resources"),
        ("pullsecretservice", "resources"),
        ("registry", "registry"),  # REGISTRY_VERIFICATION=enforce: a refused credential
        (None, "unknown"),
        ("dns", "unknown"),
    ],
)
def test_phase_of_each_service(service: str | None, phase: str) -> None:
    assert WORDS.phase_of(service) == phase
