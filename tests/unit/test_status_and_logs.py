"""Status bodies (shape the server accepts) and structured log lines (format, trace, redaction)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from pullsecret.delivery.direct.reports import WORDING
from pullsecret.logs import Logger, event_context, parse_trace, protect
from pullsecret.model import status


def _direct(*, changed: bool) -> dict[str, str]:
    """Direct mode's words for the platform source, as the reconcile passes them."""
    return {"applied": WORDING.applied(changed=changed), "available": WORDING.available(own_credentials=False)}


def test_every_report_has_the_three_required_conditions_once() -> None:
    reports = [
        status.provisioned(2, **_direct(changed=True), data={"sm_version": "v"}),
        status.preconditions_not_met(2, "waiting"),
        status.terminal_failure(2, "InvalidPullSecret", "bad", words=status.COMMON),
        status.terminal_failure(2, "UnexpectedError", "bug", words=status.COMMON),
        status.stale(2, 3, {}),
        status.finalized(2, "gone", {}),
    ]
    for report in reports:
        body = report.body("pullsecret", now=datetime(2026, 11, 21, 10, 0, tzinfo=UTC))
        types = [c["type"] for c in body["conditions"]]
        assert len(types) == len(set(types))
        assert {"Applied", "Available", "Health"} <= set(types)
        assert all(c["status"] in ("True", "False", "Unknown") for c in body["conditions"])
        assert body["observed_generation"] == 2 and body["observed_time"] == "2026-11-21T10:00:00.000Z"


def test_not_met_follows_the_framework_health_condition() -> None:
    # hyperfleet-adapter docs/adapter-authoring-guide.md: Health is True only when nothing was skipped.
    conditions = {c.type: c for c in status.preconditions_not_met(1, "waiting for dns").conditions}
    assert conditions["Applied"].status == "False" and conditions["Applied"].reason == "PreconditionsNotMet"
    assert conditions["Available"].status == "False"
    assert (conditions["Health"].status, conditions["Health"].reason) == ("False", "ResourcesSkipped")
    assert conditions["Health"].message == "Resources skipped: waiting for dns" + status.WAITING
    stale = {c.type: c for c in status.stale(2, 3, {}).conditions}
    assert (stale["Health"].status, stale["Health"].reason) == ("False", "ResourcesSkipped")


def test_every_terminal_failure_is_unhealthy_with_its_phase() -> None:
    # ADR-0017 reports terminal errors as Health=False, bad input included.
    business = {
        c.type: c
        for c in status.terminal_failure(1, "InvalidPullSecret", "m", phase="resources", words=status.COMMON).conditions
    }
    runtime = {c.type: c for c in status.terminal_failure(1, "UnexpectedError", "m", words=status.COMMON).conditions}
    assert (business["Health"].status, business["Health"].reason) == ("False", "ExecutionFailed:resources")
    assert business["Available"].reason == "InvalidPullSecret" and "InvalidPullSecret" in business["Health"].message
    assert (runtime["Health"].status, runtime["Health"].reason) == ("False", "ExecutionFailed:unknown")


def test_log_line_format_trace_and_redaction() -> None:
    stream = io.StringIO()
    logger = Logger(stream, project_id="proj")
    trace = parse_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    with event_context(labels={"cluster_id": "c1", "event_id": "e1", "adapter": "pullsecret"}, trace=trace):
        protect(["robot:supersecret", "supersecret"])
        with logger.step("secretmanager.store"):
            pass
        logger.error('oops robot:supersecret and "supersecret"', reason="X")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines[0]["operation"] == "secretmanager.store" and "duration_ms" in lines[0]
    assert lines[1]["severity"] == "ERROR"
    assert lines[1]["logging.googleapis.com/trace"] == "projects/proj/traces/4bf92f3577b34da6a3ce929d0e0e4736"
    assert lines[1]["logging.googleapis.com/labels"] == {"cluster_id": "c1", "event_id": "e1", "adapter": "pullsecret"}
    assert "supersecret" not in stream.getvalue()


def test_a_step_line_says_what_the_step_did() -> None:
    stream = io.StringIO()
    logger = Logger(stream)
    for recorded in ({"written": False}, {"written": True, "writes": 2}, {"stale": True, "written": False}, {}):
        with logger.step("secretmanager.store") as fields:
            fields.update(recorded)
    with logger.step("hyperfleet.report_status") as fields:
        fields["http_status"] = 201
    messages = [json.loads(line)["message"] for line in stream.getvalue().splitlines()]
    assert messages == [
        "secretmanager.store: nothing written (already up to date)",
        "secretmanager.store: written (2 writes)",
        "secretmanager.store: nothing written (a newer generation is recorded)",
        "secretmanager.store: done",
        "hyperfleet.report_status: answered 201",
    ]


def test_exceptions_carry_an_error_reporting_stack_trace() -> None:
    stream = io.StringIO()
    logger = Logger(stream)
    try:
        raise ValueError("boom")
    except ValueError as exc:
        logger.log("ERROR", "unexpected", exc=exc)
    line = json.loads(stream.getvalue())
    assert line["@type"].endswith("ReportedErrorEvent")
    assert "Traceback" in line["stack_trace"] and "ValueError: boom" in line["message"]
