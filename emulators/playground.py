"""`make up` and `make trigger`: a local playground of the emulators, the function and a ready cluster.

`up` starts the emulator stack, seeds a cluster whose preconditions are all met (emulators.seed), runs the
function under functions-framework, wires a Pub/Sub topic with a push subscription to it (when the Cloud SDK's
emulator is installed), writes the environment to `<state>/env` and prints it as `export` lines followed by the
next commands to try, as shell comments (so the whole output can be sourced). It serves until interrupted.

`trigger` asks for one reconcile through the path Pub/Sub uses: a push envelope with a fresh publishTime,
posted to the function (`--via push`), or the Sentinel event published to the topic (`--via pubsub`). It then
prints the status the function reported.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests

from emulators import seed
from emulators.demo import SUBSCRIPTION, TOPIC, demo_pull_secret, function_env
from emulators.functionproc import FunctionProcess
from emulators.pubsub import PubSubEmulator, push_envelope
from emulators.stack import PROJECT_ID, Stack

DEMO_CLUSTER = "cls-demo01"
STATE_DIR = Path(".playground")
REPORT_WAIT_S = 30.0


def exports(stack: Stack, function: FunctionProcess, state_dir: Path) -> dict[str, str]:
    """Everything a shell needs to use the playground: the function's env, the URLs, gcloud's Pub/Sub override."""
    env = function_env(stack, state_dir)
    env.update({"EMULATORS_ADMIN": stack.admin.url, "FUNCTION_URL": function.url})
    if stack.pubsub is not None:
        # gcloud has no PUBSUB_EMULATOR_HOST switch: its endpoint override (a URL ending in "/"), a project,
        # and no credentials make `gcloud pubsub ...` talk to the emulator (checked with Cloud SDK 528).
        env.update(
            {
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB": f"http://{stack.pubsub.address}/",
                "CLOUDSDK_CORE_PROJECT": PROJECT_ID,
                "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
            }
        )
    return env


def env_file_text(env: Mapping[str, str]) -> str:
    # An ADC file would shadow the metadata emulator for the CLI run from that shell (CLOUDSDK_CONFIG is ours).
    lines = ["unset GOOGLE_APPLICATION_CREDENTIALS"]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in env.items()]
    return "\n".join(lines) + "\n"


def next_steps(cluster_id: str, state_dir: Path, pubsub_reason: str | None) -> str:
    python = ".venv/bin/python"
    lines = [
        f"Ready: emulators, the function and cluster {cluster_id} (all preconditions met).",
        f"In another shell, from the repository: source {state_dir}/env   (or paste the export lines above)",
        "Next commands to try:",
        f"  make trigger CLUSTER={cluster_id}              # a Pub/Sub push envelope, posted to the function",
    ]
    if pubsub_reason is None:
        lines += [
            f"  make trigger CLUSTER={cluster_id} VIA=pubsub   # published to topic {TOPIC}, pushed by the emulator",
            f'  gcloud pubsub topics publish {TOPIC} --message="$({python} -m emulators event {cluster_id})"',
        ]
    else:
        lines.append(f"  (no Pub/Sub emulator: {pubsub_reason}; `make trigger` posts the push envelope itself)")
    lines += [
        f"  {python} -m pullsecret reconcile {cluster_id}    # the operator CLI, same code and configuration",
        f"  {python} -m pullsecret inspect {cluster_id}",
        '  curl -s -X PUT "$EMULATORS_ADMIN/ready_clusters/cls-demo02"   # another ready cluster',
        f"The function's log lines: {state_dir}/function.log. Ctrl-C stops everything.",
    ]
    return "\n".join("# " + line for line in lines)


def up(*, state_dir: Path, clusters: list[str], pubsub: bool, port: int = 0) -> int:
    """Start, seed, wire, print; serve until SIGINT/SIGTERM."""
    state_dir = state_dir.resolve()
    (state_dir / "gcloud").mkdir(parents=True, exist_ok=True)
    reason: str | None = "--no-pubsub"
    if pubsub:
        available, why = PubSubEmulator.available()
        reason = None if available else why
    stack = Stack(pubsub=reason is None).start()
    function: FunctionProcess | None = None
    env_path = state_dir / "env"
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        # The demo's platform pull secret: the registry emulator's hosts, so verification talks to them only.
        seed.platform_pull_secret(stack, demo_pull_secret(stack.registry.hosts()))
        for cluster_id in clusters:
            seed.ready_cluster(stack, cluster_id)
        function = FunctionProcess(function_env(stack, state_dir), state_dir / "function.log", port=port)
        function.start()
        if stack.pubsub is not None:
            stack.pubsub.create_topic(TOPIC)
            stack.pubsub.create_push_subscription(TOPIC, SUBSCRIPTION, function.url)
        env = exports(stack, function, state_dir)
        env_path.write_text(env_file_text(env))
        shown_dir = os.path.relpath(state_dir) if state_dir.is_relative_to(Path.cwd()) else str(state_dir)
        print(env_file_text(env) + next_steps(clusters[0] if clusters else DEMO_CLUSTER, Path(shown_dir), reason))
        sys.stdout.flush()
        stopped.wait()
    finally:
        env_path.unlink(missing_ok=True)
        if function is not None:
            function.stop()
        stack.stop()
    return 0


def read_env_file(path: Path) -> dict[str, str]:
    """The `export K=V` lines `up` wrote (values shell-quoted)."""
    found: dict[str, str] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export ") :].partition("=")
            parsed = shlex.split(value)
            found[key] = parsed[0] if parsed else ""
    return found


def _reports(admin: str, cluster_id: str) -> list[dict[str, Any]]:
    body = requests.get(f"{admin}/hyperfleet/reports", timeout=10).json()
    reports = body["reports"] if isinstance(body, dict) else body
    return [r for r in reports if r.get("cluster_id") == cluster_id]


def trigger(cluster_id: str, *, via: str, env: Mapping[str, str], state_dir: Path = STATE_DIR) -> int:
    """One reconcile of `cluster_id` through the Pub/Sub path; prints what happened. Exit 0 when acknowledged."""
    settings = {**read_env_file(state_dir / "env"), **{k: v for k, v in env.items() if v}}
    admin, function_url = settings.get("EMULATORS_ADMIN"), settings.get("FUNCTION_URL")
    if not admin or not function_url:
        print("No playground found (FUNCTION_URL and EMULATORS_ADMIN unset, no .playground/env): run `make up`.")
        return 2
    admin = admin.rstrip("/")
    cluster = requests.get(f"{admin}/hyperfleet/clusters/{cluster_id}", timeout=10)
    generation = 1
    if cluster.status_code == 200:
        generation = int(cluster.json().get("generation", 1))
    else:
        print(f"Note: the HyperFleet emulator has no cluster {cluster_id}; the function will find it gone.")
        print(f'      Seed a ready one first: curl -s -X PUT "$EMULATORS_ADMIN/ready_clusters/{cluster_id}"')
    before = len(_reports(admin, cluster_id))
    event = seed.sentinel_event(cluster_id, generation)
    if via == "pubsub":
        published = requests.post(f"{admin}/pubsub/topics/{TOPIC}/sentinel_event", json=event, timeout=30)
        if published.status_code != 200:
            print(f"Publishing to {TOPIC} failed ({published.status_code}): is the Pub/Sub emulator running?")
            print(f"  {published.text[:300]}")
            return 2
        print(
            f"Published event {event['id']} (cluster {cluster_id}, generation {generation}) to topic {TOPIC}: "
            f"message {published.json()['message_id']}; the emulator pushes it to the function."
        )
    else:
        answer = requests.post(function_url, json=push_envelope(event), timeout=120)
        verdict = "acknowledged" if 200 <= answer.status_code < 300 else "not acknowledged: Pub/Sub would redeliver"
        print(
            f"Pushed event {event['id']} (cluster {cluster_id}, generation {generation}) to {function_url}: "
            f"HTTP {answer.status_code}, {verdict}."
        )
        if not 200 <= answer.status_code < 300:
            return 1
    # A push is answered once the reconcile is over; a published message is pushed a moment later.
    deadline = time.monotonic() + (REPORT_WAIT_S if via == "pubsub" else 0.0)
    while True:
        found = _reports(admin, cluster_id)
        if len(found) > before:
            report = found[-1]
            print(f"Status reported ({report['method']} -> {report['code']}):")
            for condition in report["body"]["conditions"]:
                print(f"  {condition['type']:<10} {condition['status']:<6} {condition['reason']}")
            print(f"  data keys: {', '.join(sorted(report['body'].get('data') or {})) or '-'}")
            return 0
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    print(f"No status reported; the function's log says why ({state_dir}/function.log under `make up`).")
    return 1 if via == "pubsub" else 0


def event_json(cluster_id: str, generation: int) -> str:
    """The Sentinel event as one JSON line, e.g. for `gcloud pubsub topics publish --message`."""
    return json.dumps(seed.sentinel_event(cluster_id, generation), separators=(",", ":"))
