"""One function process served as on Cloud Run: functions-framework → gunicorn gthread worker.

functions-framework runs gunicorn (1 worker, `THREADS` threads; default 4 x CPUs) unless --debug.
The deployment sets `max_instance_request_concurrency` (terraform/variables.tf); the bench runs the
server with that many threads so each admitted request has a thread, as Cloud Run would send them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests

from bench.env import ROOT
from tests.support import pubsub_envelope, sentinel_event

FFRAMEWORK = Path(sys.executable).parent / "functions-framework"
SOURCES = {"product": ROOT / "main.py", "seed": ROOT / "bench" / "seed_main.py"}
IMPORTS = {"product": "main", "seed": "bench.seed_main"}


def deployment_concurrency() -> int:
    """max_instance_request_concurrency's default in terraform/variables.tf."""
    text = (ROOT / "terraform" / "variables.tf").read_text()
    block = re.search(r'variable "max_instance_request_concurrency" \{.*?default\s*=\s*(\d+)', text, re.S)
    return int(block.group(1)) if block else 80


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(function_env: dict[str, str], threads: int, port: int) -> dict[str, str]:
    return {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": tempfile.gettempdir(),
        "PYTHONPATH": str(ROOT),
        **function_env,
        "THREADS": str(threads),
        "PORT": str(port),
    }


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    started: float

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def pids(self) -> list[int]:
        """The arbiter and its worker(s)."""
        found = [self.proc.pid]
        for path in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            found += [int(p) for p in path.read_text().split()]
        return found

    def memory_mib(self) -> dict[str, float]:
        """Peak RSS (VmHWM) of the arbiter and the worker, and the proportional set size (Pss) of both now.

        The worker inherits the arbiter's pages copy-on-write, so the VmHWM sum counts shared pages
        twice; the Pss sum is what the instance's memory holds for the two processes.
        """
        pids = self.pids()
        hwm = [_kib(pid, "status", "VmHWM") for pid in pids]
        pss = [_kib(pid, "smaps_rollup", "Pss") for pid in pids]
        return {
            "arbiter_vmhwm": round(hwm[0] / 1024, 1),
            "worker_vmhwm": round(max(hwm[1:], default=0) / 1024, 1),
            "vmhwm_sum": round(sum(hwm) / 1024, 1),
            "pss_sum": round(sum(pss) / 1024, 1),
        }


def _kib(pid: int, table: str, key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/{table}").read_text(), re.M)
    return int(match.group(1)) if match else 0


def start(flow: str, function_env: dict[str, str], threads: int) -> Server:
    port = free_port()
    command = [
        str(FFRAMEWORK),
        "--target",
        "handle_cluster_event",
        "--source",
        str(SOURCES[flow]),
        "--signature-type",
        "cloudevent",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=server_env(function_env, threads, port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return Server(proc, f"http://127.0.0.1:{port}/", started)


def post(session: requests.Session, url: str, cluster_id: str) -> int:
    body = json.dumps(pubsub_envelope(sentinel_event(cluster_id)))
    response = session.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=60)
    return response.status_code


def cold_start(server: Server, cluster_id: str, limit_s: float = 30.0) -> dict[str, float]:
    """Seconds from process spawn until the server accepts a connection, and until the first event is answered 200."""
    session = requests.Session()
    listening: float | None = None
    while time.perf_counter() - server.started < limit_s:
        try:
            with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1].strip("/"))), timeout=1):
                listening = time.perf_counter() - server.started
            break
        except OSError:
            time.sleep(0.002)
    if listening is None:
        raise RuntimeError("the function did not listen within the limit")
    code = post(session, server.url, cluster_id)
    if code != 200:
        raise RuntimeError(f"the first event was answered {code}")
    return {"listening_s": round(listening, 3), "first_event_s": round(time.perf_counter() - server.started, 3)}


def warm(url: str, clusters: list[str], concurrency: int) -> None:
    """One event per cluster, so the process has seen every cluster once (per-process caches warm)."""

    def one(cluster_id: str) -> int:
        return post(requests.Session(), url, cluster_id)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        codes = list(pool.map(one, clusters))
    if any(code != 200 for code in codes):
        raise RuntimeError(f"warm-up answers: {sorted(set(codes))}")


def throughput(url: str, clusters: list[str], concurrency: int, seconds: float) -> dict[str, float]:
    """Events per second with `concurrency` clients posting back to back for `seconds`."""
    stop_at = time.perf_counter() + seconds
    counter = iter(range(10**9))
    lock = threading.Lock()
    latencies: list[float] = []
    errors = [0]

    def client() -> None:
        session = requests.Session()
        while time.perf_counter() < stop_at:
            with lock:
                cluster_id = clusters[next(counter) % len(clusters)]
            begin = time.perf_counter()
            code = post(session, url, cluster_id)
            with lock:
                if code == 200:
                    latencies.append(time.perf_counter() - begin)
                else:
                    errors[0] += 1

    start_at = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for future in [pool.submit(client) for _ in range(concurrency)]:
            future.result()
    elapsed = time.perf_counter() - start_at
    return {
        "eps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else 0.0,
        "p95_ms": round(statistics.quantiles(latencies, n=20)[18] * 1000, 1) if len(latencies) > 20 else 0.0,
        "errors": errors[0],
    }


def import_seconds(flow: str, function_env: dict[str, str], repeat: int = 3, pick: str = "min") -> float:
    """Best-of-`repeat` (or the median, `pick="median"`) wall time of importing the function's module in a fresh
    interpreter."""
    code = f"import time; t = time.perf_counter(); import {IMPORTS[flow]}; print(time.perf_counter() - t)"
    env = server_env(function_env, 1, 0)
    times = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return round(statistics.median(times) if pick == "median" else min(times), 3)


def import_top(flow: str, function_env: dict[str, str], top: int = 12) -> list[tuple[str, float]]:
    """Import time by top-level package (self times summed, `python -X importtime`), in seconds."""
    env = server_env(function_env, 1, 0)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {IMPORTS[flow]}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if match:
            package = match.group(2).split(".")[0]
            totals[package] = totals.get(package, 0.0) + int(match.group(1)) / 1e6
    ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)[:top]
    return [(name, round(seconds, 3)) for name, seconds in ranked]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of processes (all their threads), from /proc/PID/stat."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total
