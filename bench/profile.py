"""`python -m bench.profile`: where the function's CPU goes, in process and in the served worker under load.

Two profiles, each written with the run's figures beside it (machine, load average, CPU per event):

* in process (`profile-inproc.txt`): py-spy over steady events, one at a time, L = 0, log lines to
  /dev/null; the sorted tables of own time by function and inclusive time by package. Above them, the
  event's local time at L = 0 (what the critical path holds besides its round trips), whole and call by
  call: the function's CPU beside the wall, so that the emulators' service time shows apart from ours.
* the worker under load (`profile-worker.txt`, `profile-worker.svg`): py-spy samples the gunicorn worker
  (the thread holding the GIL (--gil)) while clients post at concurrency 80 with L = 25 ms; the table sums
  the samples by function (own) and by package (inclusive), the SVG is the flame graph.

CPU per event is process CPU time (all threads) divided by events: less sensitive to a busy machine than
wall time, but a shared core still slows what runs on it (caches, frequency), so each file records the
load average at its start and end.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import inproc, server
from bench.env import ROOT, Emulators, apply_environment

OUT = ROOT / "bench" / "results"
PYSPY = Path(sys.executable).parent / "py-spy"


def header(title: str, figures: dict[str, Any]) -> str:
    lines = [f"# {title}", f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"]
    lines += [f"# {key}: {value}" for key, value in figures.items()]
    return "\n".join(lines) + "\n\n"


def loadavg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def inprocess(
    stack: Emulators, env: dict[str, str], *, clusters: int, rounds: int, repeats: int, out: Path = OUT
) -> Path:
    """py-spy over steady events; CPU per event measured `repeats` times without the profiler first."""
    stack.reset()
    ids = [f"prof-{i:04d}" for i in range(clusters)]
    stack.seed_clusters(ids)
    handler = inproc.product_handler(env)
    inproc.provision(handler, ids)
    load_before = loadavg()
    cpu = [inproc.cpu_ms_per_event(handler, ids, rounds) for _ in range(repeats)]
    raw = out / "profile-inproc.raw"
    spy = _spy(os.getpid(), raw, rate=250)
    began = time.process_time()
    with inproc.quiet():
        for _ in range(rounds * 2):
            for cluster_id in ids:
                inproc.deliver(handler, cluster_id)
    sampled_cpu = time.process_time() - began
    spy.send_signal(signal.SIGINT)
    spy.wait(timeout=60)
    local = inproc.local_time(env, ids[0])
    path = out / "profile-inproc.txt"
    figures = {
        "what": f"steady events one at a time, L = 0, log lines to /dev/null; py-spy at 250 Hz over "
        f"{rounds * 2 * clusters} of them, the thread holding the GIL (--gil)",
        "CPU ms per event (process CPU, all threads, without the profiler; each repeat "
        f"{rounds * clusters} events)": cpu,
        "CPU ms per event while sampled": round(sampled_cpu * 1000 / (rounds * 2 * clusters), 3),
        "load average at start / end": f"{load_before} / {loadavg()}",
    }
    text = header("CPU of a steady event, in process", figures) + _local_table(local)
    path.write_text(text + _tables(raw, out / "profile-inproc.svg"))
    return path


def _local_table(local: dict[str, dict[str, float]]) -> str:
    """The steady event's local time at L = 0, and each call's: the function's CPU beside the wall."""
    lines = [
        "local time at L = 0 (critical path less its round trips): the function's CPU beside the wall; "
        "a call's wall less its CPU is the emulator's service time and the loopback",
        f"{'CPU ms':>8} {'wall ms':>8}  what",
        "-" * 90,
    ]
    lines += [f"{v['cpu_ms']:>8.3f} {v['wall_ms']:>8.3f}  {name}" for name, v in local.items()]
    return "\n".join(lines) + "\n\n"


def collapsed(raw: str) -> tuple[Counter[str], Counter[str], int]:
    """py-spy's collapsed stacks → samples by leaf function (own) and by package on the stack (inclusive)."""
    own: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[_frame(frames[-1])] += n
        for package in {_package(frame) for frame in frames[1:]}:
            packages[package] += n
    return own, packages, total


def _frame(frame: str) -> str:
    # "function (path/to/file.py:123)" → "function (file's package path)"
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "python3.11/", str(ROOT) + "/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})"


def _package(frame: str) -> str:
    where = _frame(frame).split(" (", 1)[1].rstrip(")")
    parts = where.split("/")
    return parts[0] if len(parts) > 1 else where


def worker(
    stack: Emulators, env: dict[str, str], *, concurrency: int, seconds: float, latency_ms: float, out: Path = OUT
) -> Path:
    """py-spy over the served worker while clients post at `concurrency`, L = `latency_ms`."""
    stack.reset()
    ids = [f"wprof-{i:04d}" for i in range(200)]
    stack.seed_clusters(ids)
    threads = server.deployment_concurrency()
    srv = server.start("product", env, threads)
    try:
        server.cold_start(srv, ids[0])
        server.warm(srv.url, ids, threads)
        stack.latency(latency_ms)
        pid = srv.pids()[-1]
        load_before = loadavg()
        raw = out / "profile-worker.raw"
        svg = out / "profile-worker.svg"
        spy = _spy(pid, raw, rate=200)
        cpu_before = server.cpu_seconds([pid])
        began = time.perf_counter()
        figures = server.throughput(srv.url, ids, concurrency, seconds - 1.0)
        elapsed = time.perf_counter() - began
        cpu = server.cpu_seconds([pid]) - cpu_before
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    finally:
        stack.latency(0)
        srv.stop()
    events = figures["eps"] * elapsed
    path = out / "profile-worker.txt"
    header_figures = {
        "what": f"gunicorn worker ({threads} threads), concurrency {concurrency}, L = {latency_ms:g} ms, "
        f"{elapsed:.1f} s; py-spy at 200 Hz, the thread holding the GIL (--gil)",
        "events/s": figures["eps"],
        "worker CPU ms per event": round(cpu * 1000 / max(events, 1), 2),
        "worker CPU utilisation (cores)": round(cpu / elapsed, 2),
        "load average at start / end": f"{load_before} / {loadavg()}",
    }
    path.write_text(header("CPU of the served worker under load", header_figures) + _tables(raw, svg))
    return path


def _spy(pid: int, raw: Path, *, rate: int) -> subprocess.Popen[bytes]:
    """py-spy sampling `pid` into collapsed stacks until SIGINT (then it writes them and exits)."""
    spy = subprocess.Popen(
        [str(PYSPY), "record", "--pid", str(pid), "--rate", str(rate), "--gil", "--format", "raw", "-o", str(raw)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # attached
    return spy


def _tables(raw: Path, svg: Path) -> str:
    """The sorted tables (own time by function, inclusive by package) and the flame graph, from one sampling.

    py-spy draws its SVG only while recording, so the flame graph is drawn here from the same stacks.
    """
    text = raw.read_text()
    raw.unlink()
    own, packages, total = collapsed(text)
    svg.write_text(_svg(text))
    lines = [f"samples: {total}; flame graph: {svg.name}", ""]
    lines += [f"{'samples':>8} {'share':>7}  function (own time: the frame on top of the stack)", "-" * 90]
    lines += [f"{n:>8} {n / total:>7.1%}  {name}" for name, n in own.most_common(40)]
    lines += ["", f"{'samples':>8} {'share':>7}  package or file anywhere on the stack (inclusive)", "-" * 90]
    lines += [f"{n:>8} {n / total:>7.1%}  {name}" for name, n in packages.most_common(30)]
    return "\n".join(lines) + "\n"


def _svg(raw: str, width: int = 1200, row: int = 16) -> str:
    tree: dict[str, Any] = {"n": 0, "kids": {}}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        node = tree
        node["n"] += int(count)
        for frame in stack.split(";")[1:]:
            node = node["kids"].setdefault(_frame(frame), {"n": 0, "kids": {}})
            node["n"] += int(count)
    total = max(tree["n"], 1)
    rects: list[str] = []
    depth_max = [0]

    def draw(node: dict[str, Any], x: float, depth: int) -> None:
        for name, kid in sorted(node["kids"].items()):
            w = kid["n"] / total * width
            if w >= 0.5:
                depth_max[0] = max(depth_max[0], depth)
                label = name if w > 7 * len(name) else name[: max(int(w / 7) - 2, 0)] + ".." if w > 30 else ""
                hue = 20 + hash(name.split(" (", 1)[-1]) % 40
                rects.append(
                    f"<g><title>{_esc(name)} ({kid['n']} samples, {kid['n'] / total:.1%})</title>"
                    f'<rect x="{x:.1f}" y="{{Y{depth}}}" width="{w:.1f}" height="{row - 1}" '
                    f'fill="hsl({hue},80%,60%)"/>'
                    f'<text x="{x + 2:.1f}" y="{{T{depth}}}" font-size="11">{_esc(label)}</text></g>'
                )
                draw(kid, x, depth + 1)
            x += w

    draw(tree, 0.0, 0)
    height = (depth_max[0] + 2) * row
    body = "\n".join(rects)
    for depth in range(depth_max[0] + 1):
        y = height - (depth + 1) * row
        body = body.replace(f"{{Y{depth}}}", str(y)).replace(f"{{T{depth}}}", str(y + row - 4))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace">\n'
        f"{body}\n</svg>\n"
    )


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("--only", choices=("inproc", "worker"))
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    stack = Emulators()
    try:
        env = stack.function_env()
        apply_environment(env)
        if args.only != "worker":
            print(inprocess(stack, env, clusters=args.clusters, rounds=args.rounds, repeats=args.repeats))
        if args.only != "inproc":
            print(worker(stack, env, concurrency=80, seconds=args.seconds, latency_ms=25.0))
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
