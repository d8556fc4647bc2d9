"""`rekey --dry-run` (what a run would do and the time its limits make) and `rekey --watch` (the clusters followed
until each holds its source's current credentials)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pullsecret.model import preconditions
from pullsecret.operator import convergence
from pullsecret.operator.rekey.listing import selected
from pullsecret.operator.rekey.request import (
    EXIT_FAILED,
    EXIT_NOTHING_DONE,
    EXIT_OK,
    NODES_WARNING,
    REPORT_EVERY_S,
    UNKNOWN,
    Out,
    Request,
    plan,
    rfc3339,
)
from pullsecret.source.base import Rekeying

if TYPE_CHECKING:
    from pullsecret.app import Application


def dry_run(app: Application, request: Request, rekeying: Rekeying, out: Out) -> int:
    """What a run would do, per cluster, and the limit that binds it; writing, rotating and asking nothing."""
    cutoff = request.cutoff(time.time())
    count = 0
    unknown = 0
    for cluster in selected(app, request, ""):
        cluster_id = str(cluster["id"])
        count += 1
        if cluster.get("_gone"):
            unknown += 1
            out(f"  {cluster_id}: {UNKNOWN}")
            continue
        if cluster.get("deleted_time"):
            out(f"  {cluster_id}: skipped (being deleted: its deletion revokes)")
            continue
        out(f"  {cluster_id}: {rekeying.preview(cluster_id, cutoff=cutoff, compromise=request.compromise)}")
    if request.compromise:
        out(NODES_WARNING)
    schedule = plan(app, request, rekeying, count - unknown)
    out(f"dry run: {count} cluster(s), credentials created before {rfc3339(cutoff)}; the limits:")
    for line in schedule.lines():
        out(line)
    if not app.settings.adapter_topic:
        out("note: ADAPTER_TOPIC is not set: a run would refuse (exit 5); set it to the adapter's own topic")
    out("nothing was rotated, revoked or published")
    return EXIT_NOTHING_DONE if unknown and unknown == count else EXIT_OK


def watch(app: Application, request: Request, out: Out, sleep: Callable[[float], None]) -> int:
    """Follow the selected clusters until each holds the source's current credentials; name the stragglers. A source
    of each cluster's own credentials is asked once per cluster per pass, at convergence.Asking's pace (half of
    `--service-limits`' per-minute budget, each 429 waited out), the rest left to re-keys."""
    began = time.monotonic()
    while True:
        behind: dict[str, str] = {}
        total = 0
        asking = convergence.Asking.of(app, request.limits, sleep)  # each pass starts from a full bucket's share
        for cluster in selected(app, request, ""):
            if cluster.get("_gone") or cluster.get("deleted_time"):
                continue
            total += 1
            cluster_id = str(cluster["id"])
            statuses = app.hyperfleet.list_statuses(cluster_id)
            ours = preconditions.statuses_by_adapter(statuses).get(app.settings.adapter_name) or {}
            state = asking.held(cluster_id, ours)
            if state.state not in ("current", "none", "-"):
                behind[cluster_id] = f"{state.state}: {state.why}"
        out(f"watch: {total - len(behind)} of {total} hold the current credentials, {len(behind)} behind")
        if not behind:
            return EXIT_OK
        if time.monotonic() - began >= request.watch_timeout_s:
            for cluster_id, why in list(behind.items())[:50]:
                out(f"  straggler {cluster_id}: {why}")
            return EXIT_FAILED
        sleep(REPORT_EVERY_S)
