"""Service mode under the Pull Secret Service's published limits (DDR §3.5): the fleet re-keyed by `rekey
--compromise`, and the steady state's requests per ready cluster.

**Compromise re-key** (`measure`). The real command (`pullsecret.operator.rekey.run`, `--compromise --yes
--own-identity`: one `DELETE` per cluster on the command's own ServiceAccount, paced by its plan) from its start to
the moment the last cluster's event is acknowledged by the function after minting and writing that cluster's new
credentials (its generate-or-retrieve `POST` on the function's ServiceAccount, a Secret Manager version, the
Kubernetes Secret). The emulator enforces §3.5 per ServiceAccount; `speedup` scales every limit (and Secret
Manager's quota) by the same factor, so the ratio to the bound carries over and the seconds at the DDR's limits
are the measured ones times `speedup`. Only Pub/Sub is in process: each publish is accepted at once and its event
(with its attributes: the rekey's marks it) pushed to the function (in this process) on a pool of `concurrency`
deliveries, a raise being a nack redelivered after a backoff. Meanwhile `new_clusters` clusters are created at
even intervals over the expected run and provisioned by their own events (no waiting for the re-key): their time
to Ready (the event that applied them, from its first delivery) is reported. At the end every re-keyed cluster
must hold the service's current credentials created after the start, and every credential the clusters held
before it (their newest Secret Manager versions) must be refused by the registry emulator (HTTP Basic at quay's
host, at the sso for registry.redhat.io's).

Bound: the limits set it for the design's requests per cluster: one request per cluster on each identity, the
function's also spending its steady state's reads and the new clusters' first POSTs; the bound is the busier
identity's requests over its per-minute limit (2,000 clusters at 100/min: 20 min, plus what the function's other
requests add).

**Steady state** (`steady`). `clusters` ready clusters, each sent Sentinel's periodic event every `max_age_ready`
(30 min) for `hours` simulated hours, with PULL_SECRET_SERVICE_TTL at its default: time runs `compress` times faster
(the TTL and the interval divided alike), so the requests counted per cluster per simulated hour are the real
ones. One function instance (the cache is per instance). The largest fleet the default budget carries follows:
100 requests/min over the measured requests per cluster per hour (all of it, and half of it).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import requests

from bench import inproc
from bench.env import Emulators

TOPIC = "projects/hf-demo-project/topics/bench-adapter"
DDR_PER_MINUTE, DDR_BURST, DDR_ROTATIONS_PER_HOUR = 100.0, 20.0, 10.0  # DDR §3.5
SENTINEL_MAX_AGE_READY_S = 1800.0
DEFAULT_TTL_S = 21_600.0  # pullsecret.source.service.settings.DEFAULT_TTL_S
OPERATOR = "system:serviceaccount:hyperfleet:rekey-operator"


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

    def publish(self, topic: str, event: dict[str, Any], *, rekeyed: bool = False) -> Future[str]:
        from pullsecret.publishing import REKEY_ATTRIBUTE

        self.published += 1
        self.published_at[1:] = [time.perf_counter()]
        attributes = {REKEY_ATTRIBUTE: "1"} if rekeyed else {}
        self.deliveries.append(self.pool.submit(self._push, str(event["data"]["id"]), attributes, topic))
        accepted: Future[str] = Future()
        accepted.set_result(str(self.published))  # Pub/Sub's message id: the publish is accepted
        return accepted

    def _push(self, cluster_id: str, attributes: dict[str, str], topic: str) -> None:
        inproc.deliver_until_acked(
            self.handler, cluster_id, self.tally, self.deadline_s, attributes=attributes, topic=topic
        )

    def wait(self) -> None:
        for delivery in self.deliveries:
            delivery.result()
        self.pool.shutdown()


def _limits(stack: Emulators, speedup: float | None) -> None:
    """The emulator's §3.5 limits scaled by `speedup` (None: off, for setting up)."""
    if speedup is None:
        stack.admin.call("POST", "/pullsecretservice/limits", {"off": True})
        return
    stack.admin.call(
        "POST",
        "/pullsecretservice/limits",
        {
            "per_minute": DDR_PER_MINUTE * speedup,
            "burst_per_second": DDR_BURST * speedup,
            "rotations_per_hour": DDR_ROTATIONS_PER_HOUR * speedup,
        },
    )


def _delivered_auths(stack: Emulators, clusters: list[str]) -> list[tuple[str, str]]:
    """(registry host, `auth`) of every credential the clusters' newest Secret Manager versions hold."""
    wanted = {f"hyperfleet-{cid}-pull-secret" for cid in clusters}
    found = []
    for secret in stack.admin.get("/secretmanager/secrets"):
        if secret["secret_id"] in wanted:
            newest = [v for v in secret["versions"] if v.get("payload_b64") and v.get("state") == "ENABLED"][-1]
            document = json.loads(base64.b64decode(newest["payload_b64"]))
            found += [(host, entry["auth"]) for host, entry in document["auths"].items()]
    return found


def _accepted(stack: Emulators, auths: list[tuple[str, str]]) -> int:
    """How many of `auths` the registry emulator still accepts: Basic at quay's host, at the sso for rhit's."""
    from emulators.registry import SERVICE

    hosts = stack.admin.get("/registry/state")["hosts"]
    ca = stack.endpoints["env"]["REGISTRY_CA_BUNDLE"]
    session = requests.Session()
    session.trust_env = False

    def accepted(item: tuple[str, str]) -> bool:
        host, auth = item
        headers = {"Authorization": f"Basic {auth}"}
        if host == hosts["basic"]:
            return session.get(f"https://{host}/v2/", headers=headers, verify=ca, timeout=10).status_code == 200
        url = f"https://{hosts['sso']}/auth"
        return session.get(url, params={"service": SERVICE}, headers=headers, verify=ca, timeout=10).status_code == 200

    with ThreadPoolExecutor(max_workers=16) as pool:
        return sum(pool.map(accepted, auths))


def measure(
    stack: Emulators,
    service_env: dict[str, str],
    clusters: list[str],
    *,
    speedup: float,
    latency_ms: float,
    concurrency: int,
    new_clusters: int = 50,
) -> dict[str, Any]:
    """Provision `clusters` in service mode, then re-key them all with `rekey --compromise`; the figures."""
    from pullsecret.handler import Adapter
    from pullsecret.model import events
    from pullsecret.operator import convergence, rekey
    from pullsecret.source.base import RateLimits

    quota_per_min = 600.0 * speedup
    env = {
        **service_env,
        "ADAPTER_TOPIC": TOPIC,
        "SECRET_PROJECT_ID": "hf-demo-project",
        "SECRET_WRITE_QUOTA": f"{quota_per_min:g}",
    }
    stack.seed_clusters(clusters)
    _limits(stack, None)
    adapter = Adapter.from_environment(env)

    def handler(attributes: Mapping[str, Any], data: Any) -> str:
        return adapter.handle(attributes, data).result

    with inproc.quiet():
        inproc.provision(handler, clusters)  # each holds its first credentials (no limits, no quota, L = 0)
    old = _delivered_auths(stack, clusters)
    assert _accepted(stack, old) == len(old), "the registry must accept the clusters' credentials before the re-key"
    # The command's own ServiceAccount at the service (`--own-identity`): a token of its own, in a file.
    token = "rekey-" + secrets.token_urlsafe(24)
    stack.admin.call("POST", "/pullsecretservice/tokens", {"token": token, "identity": OPERATOR})
    with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as fh:
        fh.write(token)
    command_env = {**env, "PULL_SECRET_SERVICE_AUTH": "token-file", "PULL_SECRET_SERVICE_TOKEN_FILE": fh.name}
    command = Adapter.from_environment(command_env)
    deadline_s = float(env.get("RETRY_DEADLINE", "60"))
    push = PushedInProcess(handler, concurrency, deadline_s)
    lines: list[str] = []
    writes_per_s = quota_per_min / 60.0
    per_minute = DDR_PER_MINUTE * speedup
    bound = len(clusters) / (per_minute / 60.0)
    fresh = [f"new-{i:04d}-{secrets.token_hex(3)}" for i in range(new_clusters)]
    ready_s: list[float] = []
    stop = threading.Event()

    def create_new() -> None:
        """The new clusters, at even intervals over the bound, each provisioned by its own event."""
        tally = inproc.BurstTally()
        for cluster_id in fresh:
            if stop.wait(bound / max(new_clusters, 1)):
                return
            stack.seed_clusters([cluster_id], workers=1)
            began = time.perf_counter()
            inproc.deliver_until_acked(handler, cluster_id, tally, deadline_s)
            ready_s.append(time.perf_counter() - began)

    stack.latency(latency_ms / speedup)
    stack.quota(int(writes_per_s * 2), 2.0)
    _limits(stack, speedup)
    creator = threading.Thread(target=create_new, name="new-clusters", daemon=True)
    try:
        began = time.perf_counter()
        began_wall = int(time.time())  # the service's credential times are RFC 3339 to the second
        creator.start()
        request = rekey.Request(
            ids=tuple(clusters),
            compromise=True,
            yes=True,
            own_identity=True,
            limits=RateLimits(per_minute, DDR_ROTATIONS_PER_HOUR * speedup),
        )
        with inproc.quiet():
            code = rekey.run(command, request, publisher=push, out=lines.append)  # type: ignore[arg-type]
            command_s = time.perf_counter() - began
            push.wait()
            creator.join()  # the new clusters' events log too
        refused = dict(stack.admin.get("/pullsecretservice/limits").get("refused", {}))
        rejected = int(stack.quota_state().get("rejected", 0))
    finally:
        stop.set()
        _limits(stack, None)
        stack.quota(None, 60.0)
        stack.latency(0)
        os.unlink(fh.name)
    last = max(push.tally.done_at, default=began)
    seconds = last - began
    # The function's identity also spends its steady state (one read per cluster per TTL) and the new clusters.
    function_requests = len(clusters) + new_clusters + len(clusters) * (seconds / DEFAULT_TTL_S)
    busier_bound = max(bound, function_requests / (per_minute / 60.0))

    def current(cluster_id: str) -> bool:
        statuses = adapter.hyperfleet.list_statuses(cluster_id)
        ours = next((s for s in statuses if s.get("adapter") == adapter.settings.adapter_name), {})
        held = convergence.held(adapter, cluster_id, ours)
        created = events.parse_time(held.created_at)
        return held.state == "current" and created is not None and created.timestamp() >= began_wall

    with ThreadPoolExecutor(max_workers=16) as pool:
        holding = sum(pool.map(current, clusters))
    still_accepted = _accepted(stack, old)
    plan = [line.strip() for line in lines if line.startswith("  binding: ")]
    ok = code == 0 and holding == len(clusters) and still_accepted == 0
    return {
        "clusters": len(clusters),
        "exit_code": code,
        "speedup": speedup,
        "limits": f"DDR §3.5 x{speedup:g}: {per_minute:g}/min, burst {DDR_BURST * speedup:g}/s, "
        f"/rotations {DDR_ROTATIONS_PER_HOUR * speedup:g}/h per ServiceAccount",
        "latency_ms": latency_ms / speedup,
        "seconds": round(seconds, 1),
        "command_seconds": round(command_s, 1),
        "seconds_at_ddr_limits": round(seconds * speedup, 1),
        "bound_seconds": round(bound, 1),
        "bound_seconds_at_ddr_limits": round(bound * speedup, 1),
        "bound_with_function_load_seconds": round(busier_bound, 1),
        "ratio_to_bound": round(seconds / bound, 3) if ok else None,
        "ratio_to_bound_with_function_load": round(seconds / busier_bound, 3) if ok else None,
        "plan": plan[0] if plan else "",
        "holding_new_credentials": holding,
        "old_credentials_still_accepted": still_accepted,
        "answered_429": refused,
        "redeliveries": push.tally.redeliveries,
        "terminal_failures": push.tally.terminal + push.tally.undelivered,
        "writes_rejected": rejected,
        "new_clusters": len(ready_s),
        "new_clusters_ready_s_max": round(max(ready_s), 2) if ready_s else None,
        "new_clusters_ready_s_median": round(sorted(ready_s)[len(ready_s) // 2], 2) if ready_s else None,
        "routine_rekey_hours_at_ddr_limits": round(len(clusters) / DDR_ROTATIONS_PER_HOUR, 1),
        "summary": next((line for line in reversed(lines) if line.startswith("rekey finished")), ""),
    }


def steady(
    stack: Emulators, service_env: dict[str, str], clusters: list[str], *, hours: float, compress: float
) -> dict[str, Any]:
    """Ready clusters' Sentinel events for `hours` simulated hours at PULL_SECRET_SERVICE_TTL's default, time
    `compress` times faster: service requests per cluster per hour, and the fleet the budget carries."""
    from pullsecret.handler import Adapter

    ttl_s = DEFAULT_TTL_S / compress
    interval_s = SENTINEL_MAX_AGE_READY_S / compress
    stack.seed_clusters(clusters)
    _limits(stack, None)
    adapter = Adapter.from_environment({**service_env, "PULL_SECRET_SERVICE_TTL": f"{ttl_s:g}"})

    def handler(attributes: Mapping[str, Any], data: Any) -> str:
        return adapter.handle(attributes, data).result

    with inproc.quiet():
        inproc.provision(handler, clusters)
    before = stack.calls().get("pullsecretservice", {})
    rounds = int(hours * 3600.0 / SENTINEL_MAX_AGE_READY_S)
    tally = inproc.BurstTally()
    began = time.perf_counter()
    with inproc.quiet(), ThreadPoolExecutor(max_workers=16) as pool:
        for n in range(rounds):
            # Each cluster's periodic event, spread over the interval as Sentinel's polls spread them.
            slot = began + n * interval_s
            list(pool.map(lambda cid: inproc.deliver_until_acked(handler, cid, tally, 60.0), clusters))
            time.sleep(max(0.0, slot + interval_s - time.perf_counter()))
    elapsed_h = (time.perf_counter() - began) * compress / 3600.0
    after = stack.calls().get("pullsecretservice", {})
    asked = sum(after.get(m, 0) - before.get(m, 0) for m in ("get", "post"))
    per_cluster_hour = asked / len(clusters) / elapsed_h
    return {
        "clusters": len(clusters),
        "simulated_hours": round(elapsed_h, 2),
        "compress": compress,
        "ttl_s": DEFAULT_TTL_S,
        "events": rounds * len(clusters),
        "service_requests": asked,
        "requests_per_ready_cluster_per_hour": round(per_cluster_hour, 3),
        "every_event_asking_per_cluster_per_hour": 3600.0 / SENTINEL_MAX_AGE_READY_S,
        "largest_fleet_full_budget": int(DDR_PER_MINUTE * 60 / per_cluster_hour) if per_cluster_hour else None,
        "largest_fleet_half_budget": int(DDR_PER_MINUTE * 30 / per_cluster_hour) if per_cluster_hour else None,
        "budget_share_at_10000": round(10_000 * per_cluster_hour / 60.0 / DDR_PER_MINUTE, 3),
        "transient_redeliveries": tally.redeliveries,
        "limits": f"DDR §3.5 {DDR_PER_MINUTE:g}/min per ServiceAccount; one function instance",
    }
