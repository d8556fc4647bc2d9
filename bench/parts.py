"""`python -m bench.parts [--clusters N]`: some of `make bench`'s figures alone, on a stack of their own.

Service mode's calls and critical path (first provisioning, steady, change), the cold start and import of `main`
per delivery mode, the import's instruction counts (callgrind, when valgrind is installed), and the fleet
re-keyed by `python -m pullsecret rekey` (bench/rekey.py). Prints the JSON and writes it to
bench/results/quick/parts.json (untracked); the tracked figures come from a full `make bench` only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from bench import inproc, instructions
from bench import rekey as rekey_bench
from bench.__main__ import QUICK_RESULTS, Plan, log, machine, mode_envs, names, per_mode, service_mode_path
from bench.env import Emulators, apply_environment


def platform_mode_path(stack: Emulators, env: dict[str, str], plan: Plan) -> dict[str, Any]:
    """Figures 1-2 in platform mode, the same way as `service_mode_path` (first provisioning, steady, change)."""
    path_ids, base_ids = names("x-path", plan.path_events), names("x-base", plan.path_events)
    stack.seed_clusters(["x-warm", *path_ids, *base_ids])
    handler = inproc.product_handler(env)
    inproc.provision(handler, ["x-warm"])
    phases = inproc.calls_and_critical_path(stack, handler, path_ids, base_ids, plan.latency_ms)
    return {
        "calls_per_event": {kind: phases[kind].calls_per_event for kind in ("first", "steady", "change")},
        "critical_path_round_trips": {
            kind: round((phases[kind].wall_ms - phases[f"{kind}_L0"].wall_ms) / plan.latency_ms, 2)
            for kind in ("first", "steady", "change")
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parts")
    parser.add_argument("--clusters", type=int, default=2000, help="clusters re-keyed (default 2000)")
    parser.add_argument(
        "--speedup", type=float, default=1.0, help="quota and DDR §3.5 limits x this, L / this (default 1: the real)"
    )
    parser.add_argument("--new-clusters", type=int, default=50, help="clusters created during the rekey (default 50)")
    parser.add_argument("--steady-clusters", type=int, default=100, help="ready clusters of the steady row (100)")
    parser.add_argument("--steady-hours", type=float, default=48.0, help="simulated hours of the steady row (48)")
    parser.add_argument(
        "--skip", action="append", default=[], choices=("service", "cold", "instructions", "rekey", "steady")
    )
    args = parser.parse_args(argv)
    plan = Plan()
    out: dict[str, Any] = {"machine": machine(), "loadavg_at_start": os.getloadavg()}
    stack = Emulators()
    try:
        env = stack.function_env()
        apply_environment(env)
        stack.reset()
        if "service" not in args.skip:
            log("platform mode, then service mode: calls per event and critical path")
            out["platform_mode"] = platform_mode_path(stack, env, plan)
            out["service_mode"] = service_mode_path(stack, env, plan)
            first = (out["service_mode"], out["platform_mode"])
            out["service_first_beyond_platform"] = round(
                first[0]["critical_path_round_trips"]["first"] - first[1]["critical_path_round_trips"]["first"], 2
            )
        if "cold" not in args.skip:
            cold_ids = names("x-cold", 2)
            stack.seed_clusters(cold_ids)
            out.update(per_mode(stack, env, cold_ids))
        if "instructions" not in args.skip and instructions.available():
            log("instructions of import main, per delivery mode (callgrind)")
            out["instructions_import_main"] = {
                mode: instructions.import_main(mode_env) for mode, mode_env in mode_envs(stack, env).items()
            }
        if "rekey" not in args.skip:
            log(f"rekey: {args.clusters} clusters in service mode")
            stack.reset()
            out["rekey"] = rekey_bench.measure(
                stack,
                mode_envs(stack, env)["service"],
                names("rk", args.clusters),
                speedup=args.speedup,
                latency_ms=plan.latency_ms,
                concurrency=plan.burst_concurrency,
                new_clusters=args.new_clusters,
            )
        if "steady" not in args.skip:
            log(f"service steady state: {args.steady_clusters} ready clusters, {args.steady_hours:g} simulated hours")
            stack.reset()
            out["service_steady"] = rekey_bench.steady(
                stack,
                mode_envs(stack, env)["service"],
                names("st", args.steady_clusters),
                hours=args.steady_hours,
                compress=720.0,
            )
    finally:
        stack.stop()
    out["loadavg_at_end"] = os.getloadavg()
    out["when_ended"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    written = QUICK_RESULTS.parent / "parts.json"
    written.parent.mkdir(parents=True, exist_ok=True)
    written.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
