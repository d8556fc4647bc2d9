"""The fleet re-keyed: `python -m pullsecret rekey` over many clusters in service mode, against the quota bound.

What is measured: the real command (`pullsecret.operator.rekey.run`: the service's credentials read and rotated
per cluster over HTTP, the events paced at `Settings.publish_rate()`, the progress record saved in Secret Manager
after every page) from its start to the moment the last cluster's event is acknowledged by the function after
writing that cluster's new credentials (Secret Manager version, Kubernetes Secret). Only Pub/Sub is in process:
each publish is accepted at once and its event pushed to the function (in this process) on a pool of
`concurrency` deliveries, a raise being a nack redelivered after a backoff (`inproc.deliver_until_acked`), as the
function's trigger would. Afterwards every cluster is checked to hold the service's current credentials
(`pullsecret.operator.convergence`, what `rekey --watch` reads).

Scale: as the bursts (bench/README.md), the Secret Manager quota can be scaled by `speedup` (x4: 40 writes/s for
10/s); the command's sequential calls (the service's GET and rotation POST per cluster) must then fit in a publish
slot `speedup` times shorter, so L is divided by the same factor and the ratio to the bound carries over; the
seconds at the real quota are the measured ones times `speedup`. By default (`speedup` 1, L = 25 ms) the run is at
the real quota: the command's loop is sequential, so under a scaled quota on a loaded machine its own CPU, not the
pacing, would set the pace.

Bounds: one Secret Manager write per cluster at the quota's rate (2,000 clusters at 600/min: 200 s); Sentinel's
periodic events alone re-key a cluster at its next `max_age_ready` event, so the last of a fleet after up to
`max_age_ready` (30 min: 1,800 s), computed, not run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bench import inproc
from bench.env import Emulators

SENTINEL_MAX_AGE_READY_S = 1800.0  # Sentinel's default max_age_ready (docs/lifecycle.md)
TOPIC = "projects/hf-demo-project/topics/bench-adapter"


class PushedInProcess:
    """A Publisher whose publishes are accepted at once and pushed to the function on a pool of deliveries."""

    def __init__(self, handler: inproc.Handler, concurrency: int, deadline_s: float) -> None:
        self.handler = handler
        self.deadline_s = deadline_s
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="push")
        self.tally = inproc.BurstTally()
        self.deliveries: list[Future[None]] = []
        self.published = 0
        self.published_at: list[float] = []  # perf_counter of the first and the last publish

    def publish(self, topic: str, event: dict[str, Any]) -> Future[str]:
        self.published += 1
        self.published_at[1:] = [time.perf_counter()]
        self.deliveries.append(self.pool.submit(self._push, event))
        accepted: Future[str] = Future()
        accepted.set_result(str(self.published))  # Pub/Sub's message id: the publish is accepted
        return accepted

    def _push(self, event: dict[str, Any]) -> None:
        # The same Sentinel-shaped event for the cluster (inproc builds it from the id, as rekey did).
        inproc.deliver_until_acked(self.handler, str(event["data"]["id"]), self.tally, self.deadline_s)

    def wait(self) -> None:
        for delivery in self.deliveries:
            delivery.result()
        self.pool.shutdown()


def measure(
    stack: Emulators,
    service_env: dict[str, str],
    clusters: list[str],
    *,
    speedup: float,
    latency_ms: float,
    concurrency: int,
) -> dict[str, Any]:
    """Provision `clusters` in service mode, then re-key them all with the real command; the figures.

    The command is given `clusters` by id: in a full run the HyperFleet emulator still holds the bursts' clusters
    (platform mode, nothing to rotate), and a rekey of every cluster would publish their events too (4,001 in one
    run, against the 2,000-cluster bound)."""
    from pullsecret.handler import Adapter
    from pullsecret.model import events
    from pullsecret.operator import convergence, rekey
    from pullsecret.operator.rekey import Request

    quota_per_min = 600.0 * speedup
    env = {
        **service_env,
        "ADAPTER_TOPIC": TOPIC,
        "SECRET_PROJECT_ID": "hf-demo-project",
        "SECRET_WRITE_QUOTA": f"{quota_per_min:g}",
    }
    stack.seed_clusters(clusters)
    adapter = Adapter.from_environment(env)

    def handler(attributes: Mapping[str, Any], data: Any) -> str:
        return adapter.handle(attributes, data).result

    with inproc.quiet():
        inproc.provision(handler, clusters)  # each holds its first credentials (no quota, L = 0)
    app = adapter
    deadline_s = float(env.get("RETRY_DEADLINE", "60"))
    push = PushedInProcess(handler, concurrency, deadline_s)
    lines: list[str] = []
    writes_per_s = quota_per_min / 60.0
    stack.latency(latency_ms / speedup)
    stack.quota(int(writes_per_s * 2), 2.0)
    try:
        began = time.perf_counter()
        began_wall = int(time.time())  # the service's credential times are RFC 3339 to the second
        with inproc.quiet():
            code = rekey.run(app, Request(ids=tuple(clusters)), publisher=push, out=lines.append)  # type: ignore[arg-type]
            command_s = time.perf_counter() - began
            push.wait()
        rejected = int(stack.quota_state().get("rejected", 0))
    finally:
        stack.quota(None, 60.0)
        stack.latency(0)
    last = max(push.tally.done_at, default=began)
    seconds = last - began
    bound = len(clusters) / writes_per_s

    def current(cluster_id: str) -> bool:
        statuses = app.hyperfleet.list_statuses(cluster_id)
        ours = next((s for s in statuses if s.get("adapter") == app.settings.adapter_name), {})
        # Re-keyed by this run: the cluster holds the service's current credentials, and those were created after
        # the command started (a cluster the run never reached holds current but old ones).
        held = convergence.held(app, cluster_id, ours)
        created = events.parse_time(held.created_at)
        return held.state == "current" and created is not None and created.timestamp() >= began_wall

    with ThreadPoolExecutor(max_workers=16) as pool:
        holding = sum(pool.map(current, clusters))
    return {
        "clusters": len(clusters),
        "exit_code": code,
        "speedup": speedup,
        "latency_ms": latency_ms / speedup,
        "publish_rate_per_s": app.settings.publish_rate(),
        "seconds": round(seconds, 2),
        "command_seconds": round(command_s, 2),
        "seconds_at_real_quota": round(seconds * speedup, 1),
        "quota_bound_seconds": round(bound, 2),
        "quota_bound_seconds_at_real_quota": round(bound * speedup, 1),
        # No ratio for a run that did not finish: a stopped command re-keyed part of the fleet, in less time.
        "ratio_to_bound": round(seconds / bound, 2) if code == 0 and holding == len(clusters) else None,
        # Where the time goes: the command's start-up to its first publish, the publishes' span (N - 1 slots at
        # the publish rate), and the tail from the last publish to the last cluster's acknowledged event.
        "first_publish_after_s": round(push.published_at[0] - began, 3) if push.published_at else None,
        "publishing_s": round(push.published_at[-1] - push.published_at[0], 2) if push.published_at else None,
        "tail_s": round(last - push.published_at[-1], 3) if push.published_at else None,
        "publish_slots_floor_s": round((len(clusters) - 1) / app.settings.publish_rate(), 2),
        "sentinel_alone_seconds": SENTINEL_MAX_AGE_READY_S,
        "sentinel_alone_ratio_to_bound": round(SENTINEL_MAX_AGE_READY_S / (bound * speedup), 2),
        "holding_new_credentials": holding,
        "published": push.published,
        "redeliveries": push.tally.redeliveries,
        "terminal_failures": push.tally.terminal + push.tally.undelivered,
        "writes_rejected": rejected,
        "summary": lines[-1] if lines else "",
    }
