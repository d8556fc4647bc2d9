"""`python -m bench.registry`: what registry verification adds to an event's critical path.

Every call of every emulated service, the registries included, takes L = 25 ms longer. Each cluster's own
pull secret names three of the registry emulator's hosts: a token registry (ping, token, ping: the
deepest handshake, 3 L), a Basic one (2 L) and an anonymous one (1 L), with a credential new to the process.
Events run one at a time, interleaved across REGISTRY_VERIFICATION=off, report and enforce so that load
drift hits every mode alike. "Added" is a mode's mean wall time per event minus off's, in ms and in L.
Three phases: a change on a cold instance (a fresh verifier before each event: no known challenge, no
open connection: the full handshake), a change on a warm one (the hosts' challenges known from earlier
credentials: the usual case for a fleet sharing a few registries), then the same events again (steady
state: every answer cached). Prints a table and writes bench/results/registry.json.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import inproc
from bench.env import ROOT, Emulators, apply_environment
from tests.support import Admin, seed_ready_cluster

if TYPE_CHECKING:  # imported lazily: google-auth must not load before the stack's environment is applied
    from pullsecret.handler import Adapter

RESULTS = ROOT / "bench" / "results" / "registry.json"
MODES = ("off", "report", "enforce")
USER, PASSWORD = "registry-robot", "Regi5try-Robot-Passw0rd"  # emulators.registry's default account


def pull_secret(hosts: dict[str, str], tag: str) -> dict[str, Any]:
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    # The e-mail makes each cluster's entries, hence their fingerprints, new to the process.
    entry = {"auth": auth, "email": f"{tag}@example.com"}
    return {"auths": {hosts["token"]: entry, hosts["basic"]: entry, hosts["anonymous"]: entry}}


def registry_calls(stack: Emulators) -> int:
    return sum(stack.calls().get("registry", {}).values())


def handler(env: dict[str, str]) -> tuple[Adapter, inproc.Handler]:
    from pullsecret.handler import Adapter

    adapter = Adapter.from_environment(env)
    return adapter, lambda attributes, data: adapter.handle(attributes, data).result


def phase(
    stack: Emulators,
    adapters: dict[str, tuple[Adapter, inproc.Handler]],
    clusters: dict[str, list[str]],
    *,
    cold: bool = False,
) -> dict[str, Any]:
    walls: dict[str, list[float]] = {mode: [] for mode in MODES}
    calls: dict[str, int] = dict.fromkeys(MODES, 0)
    n = len(clusters["off"])
    with inproc.quiet():
        for i in range(n):
            for mode in MODES:
                adapter, handle = adapters[mode]
                if cold:
                    from pullsecret.registry.verification import RegistryVerifier

                    adapter.collaborators.registries = RegistryVerifier(adapter.settings)
                before = registry_calls(stack)
                start = time.perf_counter()
                result = inproc.deliver(handle, clusters[mode][i])
                walls[mode].append((time.perf_counter() - start) * 1000)
                calls[mode] += registry_calls(stack) - before
                assert result in ("applied", "unchanged"), f"{clusters[mode][i]}: {result}"
    return {
        mode: {
            "wall_ms_mean": round(statistics.fmean(walls[mode]), 1),
            "wall_ms_median": round(statistics.median(walls[mode]), 1),
            "registry_calls_per_event": round(calls[mode] / n, 2),
        }
        for mode in MODES
    }


def added(figures: dict[str, Any], latency_ms: float) -> None:
    base = figures["off"]["wall_ms_mean"]
    for mode in MODES:
        extra = figures[mode]["wall_ms_mean"] - base
        figures[mode]["added_ms"] = round(extra, 1)
        figures[mode]["added_L"] = round(extra / latency_ms, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.registry")
    parser.add_argument("--events", type=int, default=20, help="events per mode and phase")
    parser.add_argument("--latency-ms", type=float, default=25.0)
    args = parser.parse_args(argv)
    stack = Emulators()
    try:
        env = stack.function_env()
        apply_environment(env)
        stack.reset()
        hosts: dict[str, str] = stack.endpoints["registry"]
        admin = Admin(stack.admin.url, stack.endpoints["hyperfleet"])
        cold = {mode: [f"reg-{mode}-c{i:03d}" for i in range(args.events)] for mode in MODES}
        clusters = {mode: [f"reg-{mode}-{i:03d}" for i in range(args.events)] for mode in MODES}
        for mode in MODES:
            for cid in [f"reg-{mode}-warm", *cold[mode], *clusters[mode]]:
                spec = {
                    "platform": {"type": "gcp", "gcp": {"projectID": "hf-demo-project", "region": "us-central1"}},
                    "pullSecret": {"data": pull_secret(hosts, cid)},
                }
                seed_ready_cluster(admin, cid, spec=spec)
        own = {k: v for k, v in env.items() if k != "PULL_SECRET_SOURCE"}  # the clusters' own pull secrets only
        adapters = {mode: handler({**own, "REGISTRY_VERIFICATION": mode}) for mode in MODES}
        with inproc.quiet():
            for mode in MODES:  # clients built, management cluster known, connections open
                inproc.deliver(adapters[mode][1], f"reg-{mode}-warm")
        stack.latency(args.latency_ms)
        try:
            change_cold = phase(stack, adapters, cold, cold=True)
            change = phase(stack, adapters, clusters)
            steady = phase(stack, adapters, clusters)
        finally:
            stack.latency(0)
    finally:
        stack.stop()
    added(change_cold, args.latency_ms)
    added(change, args.latency_ms)
    added(steady, args.latency_ms)
    results = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "latency_ms": args.latency_ms,
        "events_per_mode": args.events,
        "registries_per_pull_secret": 3,
        "change_cold": change_cold,
        "change": change,
        "steady": steady,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'phase':<8} {'mode':<8} {'wall ms':>8} {'added ms':>9} {'added L':>8} {'registry calls/event':>21}")
    for name, figures in (("cold", change_cold), ("change", change), ("steady", steady)):
        for mode in MODES:
            f = figures[mode]
            print(
                f"{name:<8} {mode:<8} {f['wall_ms_mean']:>8} {f['added_ms']:>9} {f['added_L']:>8} "
                f"{f['registry_calls_per_event']:>21}"
            )
    print(
        f"\nL = {args.latency_ms:g} ms; {args.events} events per mode and phase; "
        f"written {Path(RESULTS).relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
