"""Measurements with the handler in this process: calls per event, critical path, CPU per event, burst.

The process must already point at the stack (`env.apply_environment`) before anything here builds a
handler: google-auth reads the metadata host at import.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench.env import Emulators
from tests.support import eventarc_attributes, pubsub_envelope, sentinel_event

Handler = Callable[[Mapping[str, Any], Any], str]
SM_WRITES = ("CreateSecret", "UpdateSecret", "DeleteSecret", "AddSecretVersion", "DestroySecretVersion")


def product_handler(env: Mapping[str, str]) -> Handler:
    from pullsecret.handler import Adapter

    adapter = Adapter.from_environment(env)

    def handle(attributes: Mapping[str, Any], data: Any) -> str:
        return adapter.handle(attributes, data).result

    return handle


def seed_handler(env: Mapping[str, str]) -> Handler:
    from bench.seedflow import SeedFlow
    from pullsecret import configured

    return SeedFlow(configured.load(env)).handle


FACTORIES: dict[str, Callable[[Mapping[str, str]], Handler]] = {"product": product_handler, "seed": seed_handler}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The function's log lines go to /dev/null (still formatted and written: that is part of its CPU)."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def deliver(handler: Handler, cluster_id: str) -> str:
    return handler(eventarc_attributes(), pubsub_envelope(sentinel_event(cluster_id)))


def diff_calls(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, int]:
    """Calls made between two counter snapshots, as {"service.Method": n}."""
    out: dict[str, int] = {}
    for service, methods in after.items():
        for method, n in methods.items():
            delta = n - before.get(service, {}).get(method, 0)
            if delta:
                out[f"{service}.{method}"] = delta
    return dict(sorted(out.items()))


@dataclass
class PhaseFigures:
    calls_per_event: float
    by_method: dict[str, float]
    critical_path_L: float
    wall_ms: float


def run_phase(stack: Emulators, handler: Handler, clusters: list[str], latency_ms: float) -> PhaseFigures:
    """Deliver one event per cluster, sequentially; calls from the counters, wall time per event."""
    before = stack.calls()
    walls: list[float] = []
    for cluster_id in clusters:
        start = time.perf_counter()
        result = deliver(handler, cluster_id)
        walls.append(time.perf_counter() - start)
        assert result in ("applied", "unchanged"), f"{cluster_id}: {result}"
    calls = diff_calls(before, stack.calls())
    n = len(clusters)
    wall = sum(walls) / n
    return PhaseFigures(
        calls_per_event=round(sum(calls.values()) / n, 2),
        by_method={k: round(v / n, 2) for k, v in calls.items()},
        critical_path_L=round(wall * 1000 / latency_ms, 2) if latency_ms else 0.0,
        wall_ms=round(wall * 1000, 1),
    )


def calls_and_critical_path(
    stack: Emulators, handler: Handler, clusters: list[str], baseline: list[str], latency_ms: float
) -> dict[str, PhaseFigures]:
    """First provisioning, then steady state (content unchanged), then a change of each existing cluster (a
    new generation whose own pull secret adds a registry), each event alone, with latency L.

    The same three phases on `baseline` clusters with L = 0 give the local time per event (CPU and
    loopback), so "first_L0"/"steady_L0"/"change_L0" let (wall - wall at L = 0) / L count round trips alone.
    """
    with quiet():
        first_l0 = run_phase(stack, handler, baseline, 0)
        steady_l0 = run_phase(stack, handler, baseline, 0)
        stack.change_clusters(baseline)
        change_l0 = run_phase(stack, handler, baseline, 0)
    stack.latency(latency_ms)
    try:
        with quiet():
            first = run_phase(stack, handler, clusters, latency_ms)
            steady = run_phase(stack, handler, clusters, latency_ms)
    finally:
        stack.latency(0)
    stack.change_clusters(clusters)
    stack.latency(latency_ms)
    try:
        with quiet():
            change = run_phase(stack, handler, clusters, latency_ms)
    finally:
        stack.latency(0)
    return {
        "first": first,
        "steady": steady,
        "change": change,
        "first_L0": first_l0,
        "steady_L0": steady_l0,
        "change_L0": change_l0,
    }


def cpu_ms_per_event(handler: Handler, clusters: list[str], rounds: int) -> float:
    """Process CPU time per event (all threads), steady state, L = 0, events one at a time."""
    with quiet():
        for cluster_id in clusters[:5]:
            deliver(handler, cluster_id)
        start = time.process_time()
        for _ in range(rounds):
            for cluster_id in clusters:
                deliver(handler, cluster_id)
        spent = time.process_time() - start
    return round(spent * 1000 / (rounds * len(clusters)), 3)


def cpu_ms_first(handler: Handler, clusters: list[str]) -> float:
    """Process CPU time per first-provisioning event, L = 0."""
    with quiet():
        start = time.process_time()
        for cluster_id in clusters:
            deliver(handler, cluster_id)
        spent = time.process_time() - start
    return round(spent * 1000 / len(clusters), 3)


def provision(handler: Handler, clusters: list[str], workers: int = 32) -> None:
    """Bring clusters to steady state quickly (concurrently, L = 0), retrying transient failures."""

    def one(cluster_id: str) -> None:
        for _ in range(10):
            try:
                deliver(handler, cluster_id)
                return
            except Exception:  # noqa: BLE001 - setup: retry like a redelivery
                time.sleep(0.2)
        raise RuntimeError(f"could not provision {cluster_id}")

    with quiet(), ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, clusters))


# -- burst ---------------------------------------------------------------------------------------
@dataclass
class BurstTally:
    redeliveries: int = 0
    terminal: int = 0
    undelivered: int = 0
    past_deadline: int = 0  # attempts that ended after the event's RETRY_DEADLINE
    done_at: list[float] = field(default_factory=list)  # perf_counter() when each event was acknowledged
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)


def deliver_until_acked(
    handler: Handler,
    cluster_id: str,
    tally: BurstTally,
    deadline_s: float,
    max_attempts: int = 30,
    *,
    attributes: dict[str, str] | None = None,
    topic: str | None = None,
) -> None:
    """Deliver like a Pub/Sub push subscription: an exception is a nack, redelivered after a backoff. `attributes`:
    the message's own (a published rekey event's); `topic`: the one it was published on (Sentinel's by default)."""
    backoff = 0.25
    event = sentinel_event(cluster_id)
    for attempt in range(max_attempts):
        if attempt:
            tally.add(redeliveries=1)
        began = time.perf_counter()
        envelope = pubsub_envelope(event)
        envelope["message"]["attributes"].update(attributes or {})
        try:
            result = handler(eventarc_attributes(topic=topic) if topic else eventarc_attributes(), envelope)
        except Exception:  # noqa: BLE001 - any raise is a nack
            if time.perf_counter() - began > deadline_s:
                tally.add(past_deadline=1)
            time.sleep(backoff * random.uniform(0.5, 1.0))
            backoff = min(backoff * 2, 4.0)
            continue
        if time.perf_counter() - began > deadline_s:
            tally.add(past_deadline=1)
        if result == "terminal":
            tally.add(terminal=1)
        with tally.lock:
            tally.done_at.append(time.perf_counter())
        return
    tally.add(undelivered=1)


def duplicate_versions(stack: Emulators, clusters: list[str]) -> int:
    """Versions holding a payload another live version of the same secret already holds."""
    wanted = {f"hyperfleet-{cid}-pull-secret" for cid in clusters}
    extra = 0
    for secret in stack.admin.get("/secretmanager/secrets"):
        if secret["secret_id"] in wanted:
            payloads = [v["payload_b64"] for v in secret["versions"] if v.get("payload_b64")]
            extra += len(payloads) - len(set(payloads))
    return extra


def burst(
    stack: Emulators,
    handler: Handler,
    clusters: list[str],
    *,
    writes: int,
    window_s: float,
    concurrency: int,
    latency_ms: float,
    bound_writes_per_cluster: float,
    deadline_s: float,
) -> dict[str, Any]:
    """Every cluster needs a write at once; Secret Manager enforces `writes` per `window_s`.

    The bound is `bound_writes_per_cluster` writes per cluster at the quota's rate (the physical minimum:
    1 for a changed cluster, 2 for a new one). `timeline` samples acknowledged events per 0.5 s.
    """
    stack.latency(latency_ms)
    stack.quota(writes, window_s)
    before = stack.calls()
    tally = BurstTally()
    start = time.perf_counter()
    try:
        with quiet(), ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(lambda cid: deliver_until_acked(handler, cid, tally, deadline_s), clusters))
        seconds = time.perf_counter() - start
        rejected = int(stack.quota_state().get("rejected", 0))
    finally:
        stack.quota(None, 60.0)
        stack.latency(0)
    calls = diff_calls(before, stack.calls())
    write_calls = sum(n for k, n in calls.items() if k.split(".", 1)[1] in SM_WRITES and k.startswith("secretmanager"))
    accepted = write_calls - rejected
    rate = writes / window_s
    bound = len(clusters) * bound_writes_per_cluster / rate
    done = sorted(t - start for t in tally.done_at)
    timeline = [[round(t, 1), sum(1 for d in done if d <= t)] for t in _steps(seconds, 0.5)]
    return {
        "clusters": len(clusters),
        "seconds": round(seconds, 2),
        # The physical minimum: the writes each cluster must make, at the quota's rate.
        "quota_bound_seconds": round(bound, 2),
        "bound_writes_per_cluster": bound_writes_per_cluster,
        # The bound for the writes this flow chose to make (accepted writes at the quota's rate).
        "own_writes_bound_seconds": round(accepted / rate, 2),
        "ratio_to_bound": round(seconds / bound, 2),
        "terminal_failures": tally.terminal + tally.undelivered,
        "redeliveries": tally.redeliveries,
        "past_deadline": tally.past_deadline,
        "duplicate_versions": duplicate_versions(stack, clusters),
        "writes_accepted": accepted,
        "writes_per_cluster": round(accepted / len(clusters), 2),
        "writes_rejected": rejected,
        "quota": {"writes": writes, "window_s": window_s, "writes_per_s": rate},
        "concurrency": concurrency,
        "latency_ms": latency_ms,
        "deadline_s": deadline_s,
        "timeline": timeline,
        "calls": calls,
    }


def _steps(until: float, step: float) -> list[float]:
    count = int(until / step) + 1
    return [round(i * step, 3) for i in range(count + 1)]


def duplicates(stack: Emulators, handler: Handler, cluster_id: str, count: int) -> dict[str, Any]:
    """`count` deliveries of one new cluster's event at once: versions kept, writes made, Kubernetes writes."""
    stack.seed_clusters([cluster_id])
    revision = int(stack.admin.get("/kubernetes/state")["resourceVersion"])
    before = stack.calls()
    barrier = threading.Barrier(count)

    def one(_: int) -> str:
        barrier.wait()
        return deliver(handler, cluster_id)

    with quiet(), ThreadPoolExecutor(max_workers=count) as pool:
        results = list(pool.map(one, range(count)))
    calls = diff_calls(before, stack.calls())
    secret = stack.admin.get(f"/secretmanager/projects/hf-demo-project/secrets/hyperfleet-{cluster_id}-pull-secret")
    return {
        "deliveries": count,
        "results": {r: results.count(r) for r in sorted(set(results))},
        "versions": sum(1 for v in secret["versions"] if v.get("payload_b64")),
        "secretmanager_writes": sum(n for k, n in calls.items() if k.split(".", 1)[1] in SM_WRITES),
        "kubernetes_writes": int(stack.admin.get("/kubernetes/state")["resourceVersion"]) - revision,
    }


def local_time(env: Mapping[str, str], cluster_id: str, n: int = 50) -> dict[str, dict[str, float]]:
    """Where a steady event's time goes at L = 0 (the part of the critical path that is not round trips).

    The whole event (process CPU, all threads), then each of its calls alone, `n` times: the function's CPU
    on the calling thread and the wall. A call's wall less its CPU is the emulator's service time and the
    loopback; the event's wall less its CPU is that of its calls on the path (they overlap in pairs).
    The status report is not timed alone (its body is built by the event); the event's figure holds it.
    """
    from pullsecret.delivery.direct.mode import DirectDelivery
    from pullsecret.handler import Adapter
    from pullsecret.model.preconditions import Act, evaluate
    from pullsecret.reconcile.target import names
    from pullsecret.retrying import Deadline

    adapter = Adapter.from_environment(env)

    def handle(attributes: Mapping[str, Any], data: Any) -> str:
        return adapter.handle(attributes, data).result

    with quiet():
        for _ in range(3):
            deliver(handle, cluster_id)
    app = adapter
    act = evaluate(
        app.hyperfleet.get_cluster(cluster_id) or {},
        app.hyperfleet.list_statuses(cluster_id),
        app.settings,
        cluster_id=cluster_id,
    )
    assert isinstance(act, Act), act
    delivery = app.delivery
    assert isinstance(delivery, DirectDelivery), delivery
    secret_id, kube_name = names(app.settings, cluster_id)
    api = delivery.clusters.api_for(act.placement.management_cluster, Deadline(8))
    calls: dict[str, Callable[[], Any]] = {
        "hyperfleet get_cluster": lambda: app.hyperfleet.get_cluster(cluster_id),
        "hyperfleet list_statuses": lambda: app.hyperfleet.list_statuses(cluster_id),
        "secretmanager newest version": lambda: app.store.reads.latest(
            f"projects/{act.project_id}/secrets/{secret_id}", Deadline(8)
        ),
        "kubernetes probe (dry-run apply)": lambda: delivery.kube.probe(
            api, act.placement.namespace, kube_name, Deadline(8)
        ),
    }
    out: dict[str, dict[str, float]] = {}
    with quiet():
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(n):
            deliver(handle, cluster_id)
        out["steady event (process CPU)"] = _per_call(cpu, wall, time.process_time(), time.perf_counter(), n)
        for name, call in calls.items():
            cpu, wall = time.thread_time(), time.perf_counter()
            for _ in range(n):
                call()
            out[name] = _per_call(cpu, wall, time.thread_time(), time.perf_counter(), n)
    return out


def _per_call(cpu0: float, wall0: float, cpu1: float, wall1: float, n: int) -> dict[str, float]:
    return {"cpu_ms": round((cpu1 - cpu0) * 1000 / n, 3), "wall_ms": round((wall1 - wall0) * 1000 / n, 3)}
