"""What one reconcile did (`Outcome`), and the status report that ends it: the one place a report is sent."""

from __future__ import annotations

from dataclasses import dataclass

from pullsecret.app import Application
from pullsecret.logs import log
from pullsecret.model import status


@dataclass(frozen=True)
class Outcome:
    """What one reconcile did: `result` is the metric label (applied, unchanged, skipped, stale, gone, terminal)."""

    result: str
    report: status.Report | None = None
    report_code: int | None = None
    reason: str | None = None  # why, for terminal and transient outcomes (also the status reason)
    service: str | None = None  # the system at fault, when one is
    detail: str | None = None  # a person's sentence for the final log line (never secret material)


def report(app: Application, cluster_id: str, result: str, sent: status.Report) -> Outcome:
    """Send the event's status report (`sent`); the Outcome `result` with it and the API's answer."""
    with log.step("hyperfleet.report_status", available=sent.available) as fields:
        code = app.hyperfleet.report_status(cluster_id, sent.body(app.settings.adapter_name))
        fields["http_status"] = code
    if code == 204:
        log.info(
            "the API discarded the status as older than the one it holds",
            operation="hyperfleet.report_status",
        )
    return Outcome(result, sent, code)
