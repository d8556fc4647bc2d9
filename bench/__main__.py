"""`make bench`: every performance figure of the adapter and of the seed design, side by side, in one run.

Prints a table and writes bench/results/latest.json (the tracked figures) and its plots. A `--quick` or `--only`
run writes to bench/results/quick/ instead (untracked), so trying the bench out never overwrites them.
See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import hostile, inproc, instructions, plots, profile, rekey, report, server
from bench.env import ROOT, ROTATED_SOURCE_SECRET, Emulators, apply_environment, source_version

RESULTS = ROOT / "bench" / "results" / "latest.json"
READMES = (ROOT / "bench" / "README.md",)  # the figures live beside the bench; README.md links to them
QUICK_RESULTS = ROOT / "bench" / "results" / "quick" / "latest.json"
FLOWS = ("product", "seed")
CONCURRENCY = (1, 8, 32, 80)


@dataclass(frozen=True)
class Plan:
    latency_ms: float = 25.0
    path_events: int = 10
    cpu_first_events: int = 100
    cpu_clusters: int = 50
    cpu_rounds: int = 4
    throughput_clusters: int = 200
    throughput_seconds: float = 4.0
    burst_clusters: int = 2000
    burst_writes: int = 80  # per window: 40 writes/s, Secret Manager's 600/min scaled x4
    burst_window_s: float = 2.0
    burst_concurrency: int = 64
    instruction_clusters: int = 4  # per callgrind run (bench/instructions.py; ~50x slower than the CPU)
    instruction_rounds: int = 3
    instruction_first: int = 4


QUICK = Plan(
    path_events=4,
    cpu_first_events=20,
    cpu_clusters=20,
    cpu_rounds=2,
    throughput_clusters=40,
    throughput_seconds=1.5,
    burst_clusters=200,
    burst_writes=40,
    burst_concurrency=32,
    instruction_clusters=2,
    instruction_rounds=2,
    instruction_first=2,
)


def machine() -> dict[str, Any]:
    cpu_model = ""
    mem_kib = 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu_model,
        "cpus": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg": os.getloadavg(),
    }


def names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{i:04d}" for i in range(n)]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def measure_flow(stack: Emulators, env: dict[str, str], flow: str, plan: Plan) -> dict[str, Any]:
    """Figures 1-6 for one flow (the product or the replayed seed design)."""
    tag = flow[0]
    stack.reset()
    if flow == "seed":
        # The seed design calls GKE's gRPC form (bench/seedflow.py), the adapter its REST form.
        env = {**env, "SEED_KUBE_TOKEN": stack.grant_seed_design_rights(), "SEED_GKE_GRPC_HOST": stack.endpoints["gke"]}
        os.environ.update({key: env[key] for key in ("SEED_KUBE_TOKEN", "SEED_GKE_GRPC_HOST")})
    path_ids = names(f"{tag}-path", plan.path_events)
    base_ids = names(f"{tag}-base", plan.path_events)
    cpu_first_ids = names(f"{tag}-cpu1", plan.cpu_first_events)
    cpu_ids = names(f"{tag}-cpu", plan.cpu_clusters)
    tp_ids = names(f"{tag}-tp", plan.throughput_clusters)
    ir_ids = [names(f"{tag}-ir{run}", plan.instruction_clusters) for run in range(2)]
    ir_first_ids = names(f"{tag}-irf", plan.instruction_first)
    cold_ids = names(f"{tag}-cold", len(DELIVERY_MODES))
    ir_all = [cluster_id for run in ir_ids for cluster_id in run]
    stack.seed_clusters(
        [f"{tag}-warm", *path_ids, *base_ids, *cpu_first_ids, *cpu_ids, *tp_ids, *ir_all, *ir_first_ids, *cold_ids]
    )
    handler = inproc.FACTORIES[flow](env)
    inproc.provision(handler, [f"{tag}-warm"])  # clients built, management cluster known

    log(f"{flow}: calls per event and critical path (L = {plan.latency_ms:g} ms)")
    phases = inproc.calls_and_critical_path(stack, handler, path_ids, base_ids, plan.latency_ms)
    log(f"{flow}: CPU per event (L = 0)")
    cpu_first = inproc.cpu_ms_first(handler, cpu_first_ids)
    inproc.provision(handler, cpu_ids)
    cpu_steady = inproc.cpu_ms_per_event(handler, cpu_ids, plan.cpu_rounds)
    inproc.provision(handler, tp_ids)

    extra: dict[str, Any] = {}
    if flow == "product":
        log("product, service mode: calls per event and critical path (the Pull Secret Service emulator)")
        extra["service_mode"] = service_mode_path(stack, env, plan)
        log("product: CPU of the worst-shaped 64 KiB pull secret against an ordinary first event")
        extra["hostile_pull_secret"] = hostile.cpu_ms(
            stack, env, hostile=names("p-hostile", 5), ordinary=names("p-ordinary", 6)
        )
        extra.update(per_mode(stack, env, cold_ids))
        if instructions.available():
            log("product: instructions per event and of the import, per delivery mode (callgrind)")
            extra["instructions"] = {
                **instructions.per_event(env, ir_ids, rounds=plan.instruction_rounds, first=ir_first_ids),
                "import_main": {
                    mode: instructions.import_main(mode_env) for mode, mode_env in mode_envs(stack, env).items()
                },
            }

    log(f"{flow}: import time and cold start")
    import_s = server.import_seconds(flow, env)
    top = server.import_top(flow, env)
    threads = server.deployment_concurrency()
    srv = server.start(flow, env, threads)
    try:
        cold = server.cold_start(srv, tp_ids[0])
        server.warm(srv.url, tp_ids, threads)
        stack.latency(plan.latency_ms)
        tput = {str(c): throughput_at(stack, srv, tp_ids, c, plan.throughput_seconds) for c in CONCURRENCY}
        memory = srv.memory_mib()
    finally:
        stack.latency(0)
        srv.stop()
    kinds = ("first", "steady", "change")
    return {
        "calls_per_event": {
            **{kind: phases[kind].calls_per_event for kind in kinds},
            "by_method": {kind: phases[kind].by_method for kind in kinds},
        },
        "critical_path_L": {kind: phases[kind].critical_path_L for kind in kinds},
        # Round trips on the critical path: (wall at L - wall at L = 0) / L.
        "critical_path_round_trips": {
            kind: round((phases[kind].wall_ms - phases[f"{kind}_L0"].wall_ms) / plan.latency_ms, 2) for kind in kinds
        },
        "wall_ms_per_event": {
            **{kind: phases[kind].wall_ms for kind in kinds},
            **{f"{kind}_L0": phases[f"{kind}_L0"].wall_ms for kind in kinds},
        },
        "cpu_ms_per_event": cpu_steady,
        "cpu_ms_per_event_first": cpu_first,
        "throughput_eps": {k: v["eps"] for k, v in tput.items()},
        "throughput_detail": tput,
        "server_threads": threads,
        "cold_start_s": cold["first_event_s"],
        "cold_start_listening_s": cold["listening_s"],
        "import_s": import_s,
        "import_top_s": top,
        "peak_rss_mib": memory["worker_vmhwm"],
        "memory_mib": memory,
        **extra,
    }


DELIVERY_MODES = ("direct", "external-secrets")
# The runtime identity's principal for external-secrets mode (tests/integration/test_external_secrets.py).
ESO_TEMPLATE = (
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
    "hf-demo-project.svc.id.goog/subject/ns/{namespace}/sa/hyperfleet-pull-secret-reader"
)


def mode_envs(stack: Emulators, env: dict[str, str]) -> dict[str, dict[str, str]]:
    """The function's environment per delivery mode, and with the Pull Secret Service as its source."""
    return {
        "direct": env,
        "external-secrets": {
            **env,
            "KUBERNETES_DELIVERY": "external-secrets",
            "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": ESO_TEMPLATE,
        },
        "service": {
            **{k: v for k, v in env.items() if k != "PULL_SECRET_SOURCE"},
            "PULL_SECRET_SERVICE_URL": stack.endpoints["pullsecretservice"],
        },
    }


def per_mode(stack: Emulators, env: dict[str, str], cluster_ids: list[str]) -> dict[str, Any]:
    """Cold start to first event and import of the entry module, per delivery mode (L = 0)."""
    cold: dict[str, float] = {}
    imports: dict[str, float] = {}
    envs = mode_envs(stack, env)
    for mode, cluster_id in zip(DELIVERY_MODES, cluster_ids, strict=True):
        log(f"product, {mode} delivery: import time and cold start")
        imports[mode] = server.import_seconds("product", envs[mode], repeat=5, pick="median")
        srv = server.start("product", envs[mode], server.deployment_concurrency())
        try:
            cold[mode] = server.cold_start(srv, cluster_id)["first_event_s"]
        finally:
            srv.stop()
    return {"cold_start_s_by_mode": cold, "import_s_by_mode": imports}


def service_mode_path(stack: Emulators, env: dict[str, str], plan: Plan) -> dict[str, Any]:
    """Calls and critical path with the pull secret from the Pull Secret Service (PULL_SECRET_SERVICE_URL)."""
    service_env = {k: v for k, v in env.items() if k != "PULL_SECRET_SOURCE"}
    service_env["PULL_SECRET_SERVICE_URL"] = stack.endpoints["pullsecretservice"]
    path_ids, base_ids = names("s-path", plan.path_events), names("s-base", plan.path_events)
    stack.seed_clusters(["s-warm", *path_ids, *base_ids])
    handler = inproc.product_handler(service_env)
    inproc.provision(handler, ["s-warm"])
    phases = inproc.calls_and_critical_path(stack, handler, path_ids, base_ids, plan.latency_ms)
    kinds = ("first", "steady", "change")
    return {
        "calls_per_event": {kind: phases[kind].calls_per_event for kind in kinds},
        "critical_path_L": {kind: phases[kind].critical_path_L for kind in kinds},
        "critical_path_round_trips": {
            kind: round((phases[kind].wall_ms - phases[f"{kind}_L0"].wall_ms) / plan.latency_ms, 2) for kind in kinds
        },
    }


def throughput_at(
    stack: Emulators, srv: server.Server, clusters: list[str], concurrency: int, seconds: float
) -> dict[str, Any]:
    """Events per second at one concurrency, with the CPU each party used and the calls per event."""
    log(f"throughput at concurrency {concurrency}")
    pids = srv.pids()
    calls_before = stack.calls()
    cpu_before = (server.cpu_seconds(pids), server.cpu_seconds([stack.proc.pid]), time.process_time())
    began = time.perf_counter()
    figures: dict[str, Any] = dict(server.throughput(srv.url, clusters, concurrency, seconds))
    elapsed = time.perf_counter() - began
    events = max(figures["eps"] * elapsed, 1.0)
    calls = inproc.diff_calls(calls_before, stack.calls())
    figures["calls_per_event"] = round(sum(calls.values()) / events, 2)
    figures["function_cpu_util"] = round((server.cpu_seconds(pids) - cpu_before[0]) / elapsed, 2)
    figures["function_cpu_ms_per_event"] = round((server.cpu_seconds(pids) - cpu_before[0]) * 1000 / events, 2)
    figures["emulators_cpu_util"] = round((server.cpu_seconds([stack.proc.pid]) - cpu_before[1]) / elapsed, 2)
    figures["load_generator_cpu_util"] = round((time.process_time() - cpu_before[2]) / elapsed, 2)
    return figures


def measure_bursts(stack: Emulators, env: dict[str, str], plan: Plan) -> dict[str, dict[str, Any]]:
    """Figure 7: new clusters at once, then a source rotation over all of them, under a scaled write quota."""
    stack.reset()
    ids = names("burst", plan.burst_clusters)
    log(f"burst: seeding {len(ids)} clusters")
    stack.seed_clusters(ids)
    deadline_s = float(env.get("RETRY_DEADLINE", "60"))

    def run(handler: inproc.Handler, writes_per_cluster: float) -> dict[str, Any]:
        began = (time.perf_counter(), time.process_time(), server.cpu_seconds([stack.proc.pid]))
        figures = inproc.burst(
            stack,
            handler,
            ids,
            writes=plan.burst_writes,
            window_s=plan.burst_window_s,
            concurrency=plan.burst_concurrency,
            latency_ms=plan.latency_ms,
            bound_writes_per_cluster=writes_per_cluster,
            deadline_s=deadline_s,
        )
        figures["cpu"] = burst_cpu(began, stack.proc.pid, len(ids))
        return figures

    out: dict[str, dict[str, Any]] = {}
    log("burst: new clusters (product)")
    out["new"] = run(inproc.product_handler(env), 2)
    rotated = {**env, "PULL_SECRET_SOURCE": source_version(ROTATED_SOURCE_SECRET)}
    log("burst: rotation (product)")
    out["rotation"] = run(inproc.product_handler(rotated), 1)
    log("burst: rotation back (seed flow)")
    os.environ["SEED_KUBE_TOKEN"] = stack.grant_seed_design_rights()
    os.environ["SEED_GKE_GRPC_HOST"] = stack.endpoints["gke"]
    out["seed_rotation"] = run(inproc.seed_handler(env), 1)
    log("duplicates: 50 concurrent deliveries of one change")
    out["duplicates"] = inproc.duplicates(stack, inproc.product_handler(env), "dup-0000", 50)
    log("rekey: the same number of clusters in service mode re-keyed by `rekey --compromise` (DDR §3.5 limits)")
    rk = names("rk", plan.burst_clusters)
    service = mode_envs(stack, env)["service"]
    out["rekey"] = rekey.measure(stack, service, rk, speedup=1.0, latency_ms=plan.latency_ms, concurrency=64)
    log("service steady state: requests per ready cluster per hour at PULL_SECRET_SERVICE_TTL's default")
    out["service_steady"] = rekey.steady(stack, service, names("st", 100), hours=48.0, compress=720.0)
    return out


def burst_cpu(began: tuple[float, float, float], emulators_pid: int, events: int) -> dict[str, float]:
    """The CPU each side spent on a burst: whether the quota or the machine set its pace.

    The bench process holds the function (in process) and the deliveries; the emulators are one Python process,
    so they cannot use more than about one core (the GIL): near 1.0 there, they and not the quota bound the burst.
    """
    elapsed = time.perf_counter() - began[0]
    function = time.process_time() - began[1]
    emulators = server.cpu_seconds([emulators_pid]) - began[2]
    return {
        "adapter_process_cpu_ms_per_event": round(function * 1000 / events, 2),
        "emulators_cpu_ms_per_event": round(emulators * 1000 / events, 2),
        "adapter_process_cpu_util": round(function / elapsed, 2),
        "emulators_cpu_util": round(emulators / elapsed, 2),
        "loadavg_at_end": round(os.getloadavg()[0], 2),
    }


def ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return round(a / b, 2)
    return None


def measure_path_only(plan: Plan) -> int:
    """Figures 1-2 alone, for the product (about 20 s): calls per event and critical path, first and steady."""
    stack = Emulators()
    try:
        env = stack.function_env()
        apply_environment(env)
        stack.reset()  # seeds the platform pull secret
        path_ids, base_ids = names("p-path", plan.path_events), names("p-base", plan.path_events)
        stack.seed_clusters(["p-warm", *path_ids, *base_ids])
        handler = inproc.FACTORIES["product"](env)
        inproc.provision(handler, ["p-warm"])  # clients built, management cluster known and its policy checked
        phases = inproc.calls_and_critical_path(stack, handler, path_ids, base_ids, plan.latency_ms)
    finally:
        stack.stop()
    figures = {
        phase: {
            "calls_per_event": phases[phase].calls_per_event,
            "critical_path_L": phases[phase].critical_path_L,
            "round_trips": round((phases[phase].wall_ms - phases[f"{phase}_L0"].wall_ms) / plan.latency_ms, 2),
            "by_method": phases[phase].by_method,
        }
        for phase in ("first", "steady", "change")
    }
    print(json.dumps({"latency_ms": plan.latency_ms, "events": plan.path_events, **figures}, indent=2))
    return 0


def results_path(*, quick: bool, only: str | None) -> Path:
    """Where a run's JSON (and plots, beside it) go: only the full run replaces the tracked figures."""
    return QUICK_RESULTS if quick or only else RESULTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="small numbers, for trying the bench out")
    parser.add_argument("--only", choices=("flows", "burst", "path"), help="run one part only")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else Plan()
    if args.only == "path":
        return measure_path_only(plan)
    began = time.perf_counter()
    load_at_start = os.getloadavg()
    stack = Emulators()
    try:
        env = stack.function_env()
        apply_environment(env)
        flows = {flow: measure_flow(stack, env, flow, plan) for flow in FLOWS} if args.only != "burst" else {}
        bursts = measure_bursts(stack, env, plan) if args.only != "flows" else {}
        written = results_path(quick=args.quick, only=args.only)
        written.parent.mkdir(parents=True, exist_ok=True)
        if not args.only:
            log("profiles: in process, then the served worker at concurrency 80")
            profile.inprocess(
                stack, env, clusters=plan.cpu_clusters, rounds=plan.cpu_rounds, repeats=3, out=written.parent
            )
            profile.worker(
                stack,
                env,
                concurrency=80,
                seconds=2 * plan.throughput_seconds + 2.0,
                latency_ms=plan.latency_ms,
                out=written.parent,
            )
    finally:
        stack.stop()
    results: dict[str, Any] = {"machine": machine(), "latency_ms": plan.latency_ms, "plan": asdict(plan)}
    results["machine"]["loadavg_at_start"] = load_at_start
    results.update(flows.get("product", {}))
    results["burst"] = bursts.get("rotation", {})
    results["new_cluster_burst"] = bursts.get("new", {})
    results["duplicates_50"] = bursts.get("duplicates", {})
    results["rekey"] = bursts.get("rekey", {})
    results["service_steady"] = bursts.get("service_steady", {})
    results["writes_per_new_cluster"] = results["new_cluster_burst"].get("writes_per_cluster")
    results["writes_per_changed_cluster"] = results["burst"].get("writes_per_cluster")
    results["seed_flow"] = {
        **flows.get("seed", {}),
        "burst": bursts.get("seed_rotation", {}),
        "writes_per_changed_cluster": bursts.get("seed_rotation", {}).get("writes_per_cluster"),
    }
    report.derive(results)
    results["ratios_product_over_seed"] = {
        f.label: ratio(report.dig(results, f.path), report.dig(results["seed_flow"], f.path)) for f in report.FIGURES
    }
    results["bench_seconds"] = round(time.perf_counter() - began, 1)
    written.write_text(json.dumps(results, indent=2) + "\n")
    drawn = plots.draw(results, written.parent)
    # Only the full run rewrites the READMEs' tables; a quick or partial run writes its tables.md beside its JSON.
    tables = report.publish(results, written.parent, READMES if written == RESULTS else ())
    print(report.text_table(results))
    print("written: " + ", ".join(str(p.relative_to(ROOT)) for p in (*drawn, *tables)))
    print(
        f"\n{results['machine']['cpu_model']} x {results['machine']['cpus']}; L = {plan.latency_ms:g} ms; "
        f"server threads {results.get('server_threads')}; load average {load_at_start[0]:.1f} at start; "
        f"bench took {results['bench_seconds']} s; "
        f"written {written.relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
