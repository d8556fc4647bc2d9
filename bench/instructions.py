"""Instruction counts (valgrind's callgrind): the in-process CPU figures in a unit the machine's load does not move.

CPU time on a shared two-core machine moves with the load (other processes' cache and frequency effects, the
scheduler); the instructions a process executes move far less. A child process runs under callgrind with
instrumentation off while it starts, imports and provisions, and turns it on (`callgrind_control -i on`) only
around the events measured, so the count is theirs alone (every thread of the process: the gRPC and HTTP
clients' threads included):

- steady: the child provisions `clusters` clusters one at a time and delivers one round of steady events to
  them, then `rounds` rounds are counted: the loop of `inproc.cpu_ms_per_event`;
- first provisioning: the same child, then `first` new clusters delivered once each are counted;
- import of the entry module, per delivery mode: `import main` in a fresh interpreter, counted whole.

valgrind runs the counted part about 50 times slower than the CPU would, so the event counts are small.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from bench import server
from bench.env import ROOT

VALGRIND = shutil.which("valgrind")
_COLLECTED = re.compile(r"Collected : (\d+)")


def available() -> bool:
    return VALGRIND is not None


def count(argv: list[str], env: Mapping[str, str], *, from_start: bool = True) -> int:
    """Instructions a command executed (every thread), under callgrind; with `from_start` False, only those it
    ran between its own `instrument(True)` and `instrument(False)`."""
    assert VALGRIND is not None
    done = subprocess.run(
        [
            VALGRIND,
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            f"--instr-atstart={'yes' if from_start else 'no'}",
            *argv,
        ],
        cwd=ROOT,
        env={**env, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=False,
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run failed ({done.returncode}): {done.stderr[-1500:]}")
    return int(found.group(1))


def _child_env(function_env: Mapping[str, str]) -> dict[str, str]:
    # Under valgrind a call takes ~50x its CPU: a deadline of 8 s would expire on the first event's channel setup.
    return {**server.server_env(dict(function_env), 1, 0), "RETRY_DEADLINE": "120"}


def _events(function_env: Mapping[str, str], *, steady: list[str], rounds: int, first: list[str]) -> int:
    spec = json.dumps({"steady": steady, "rounds": rounds, "first": first})
    argv = [sys.executable, "-m", "bench.instructions", spec]
    return count(argv, _child_env(function_env), from_start=False)


def per_event(
    function_env: Mapping[str, str], ids: list[list[str]], *, rounds: int, first: list[str]
) -> dict[str, Any]:
    """Instructions per steady event and per first-provisioning event (two callgrind runs); `ids`: two lists of
    new clusters, one per run, and `first` more new clusters for the second."""
    steady = _events(function_env, steady=ids[0], rounds=rounds, first=[])
    firsts = _events(function_env, steady=ids[1], rounds=0, first=first)
    return {
        "steady": round(steady / (rounds * len(ids[0]))),
        "first": round(firsts / len(first)),
        "counted": {"steady_events": rounds * len(ids[0]), "first_events": len(first)},
    }


def import_main(function_env: Mapping[str, str]) -> int:
    """Instructions of `import main` (the entry module: configuration, clients built) in a fresh interpreter."""
    return count([sys.executable, "-c", "import main"], _child_env(function_env))


def instrument(on: bool) -> None:
    """Turn this process's callgrind instrumentation on or off (waits until valgrind has done it)."""
    subprocess.run(
        ["callgrind_control", "--instr=" + ("on" if on else "off"), str(os.getpid())], capture_output=True, check=True
    )


def _child(spec: dict[str, Any]) -> None:
    """The measured process: provision and warm up uncounted, then count the steady rounds or the first events."""
    from bench import inproc

    handler = inproc.product_handler(os.environ)
    with inproc.quiet():
        for _ in range(2):  # provision, then one steady round: every client built, every cache warm
            for cluster_id in spec["steady"]:
                inproc.deliver(handler, cluster_id)
        instrument(True)
        for _ in range(spec["rounds"]):
            for cluster_id in spec["steady"]:
                inproc.deliver(handler, cluster_id)
        for cluster_id in spec["first"]:
            inproc.deliver(handler, cluster_id)
        instrument(False)


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]))
