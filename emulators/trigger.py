"""`make trigger`: one reconcile of a playground cluster through the path Pub/Sub uses, and what came of it.

The event is a push envelope with a fresh publishTime posted to the function (`--via push`), or the Sentinel
event published to the topic (`--via pubsub`). Then it prints why things are as they are: what the function did
(`applied` or `unchanged`, from its final log line, with the steps that wrote), each condition's reason and
message, `data.registry_checks` (which registry accepted or refused its credential), and how to read the whole
stored status.

Where the playground is: the running playground's `<state>/env` wins over this shell's variables, which may
be left from an earlier `make up` (the ports change on every start); a shell whose values differ is told so.
When nothing answers, one line says so and what to do, instead of a client library's traceback.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from emulators import logview, registry_checks, seed
from emulators.demo import TOPIC
from emulators.playground_env import read_env_file
from emulators.playground_lock import DOWN_FILE, STATE_DIR, holder
from emulators.pubsub import push_envelope

REPORT_WAIT_S = 30.0
PLAYGROUND_KEYS = ("EMULATORS_ADMIN", "FUNCTION_URL")


class NoPlayground(Exception):
    """Nothing to talk to; the message says what to do."""


def locate(env: Mapping[str, str], state_dir: Path) -> tuple[dict[str, str], str, list[str]]:
    """(settings, where they came from, notes): the env file of a running playground first, else this shell."""
    from_file = read_env_file(state_dir / "env")
    shell = {key: env[key] for key in PLAYGROUND_KEYS if env.get(key)}
    shown = f"{state_dir}/env"
    if all(from_file.get(key) for key in PLAYGROUND_KEYS):
        notes = []
        stale = [key for key in PLAYGROUND_KEYS if key in shell and shell[key] != from_file[key]]
        if stale:
            notes.append(
                f"Note: this shell's {' and '.join(stale)} are left from an earlier `make up`; using {shown}. "
                f"Run `source {shown}` again in this shell."
            )
        return from_file, shown, notes
    pid = holder(state_dir)
    if pid is not None:  # `make up` holds the lock but has not written its env file yet
        raise NoPlayground(
            f"A playground{f' (pid {pid})' if pid > 0 else ''} holds {state_dir} but has written no env file yet: "
            f"it is still starting (or stopping). Run this again once `make up` prints `# Ready`; "
            f"then `source {shown}`."
        )
    if all(key in shell for key in PLAYGROUND_KEYS):
        return shell, "this shell's variables", []
    raise NoPlayground(f"No playground found (FUNCTION_URL and EMULATORS_ADMIN unset, no {shown}): run `make up`.")


def _reports(admin: str, cluster_id: str) -> list[dict[str, Any]]:
    body = requests.get(f"{admin}/hyperfleet/reports", timeout=10).json()
    reports = body["reports"] if isinstance(body, dict) else body
    return [r for r in reports if r.get("cluster_id") == cluster_id]


def trigger(cluster_id: str, *, via: str, env: Mapping[str, str], state_dir: Path = STATE_DIR) -> int:
    """One reconcile of `cluster_id` through the Pub/Sub path; prints what happened. Exit 0 when acknowledged."""
    try:
        settings, source, notes = locate(env, state_dir)
    except NoPlayground as exc:
        print(exc)
        return 2
    for note in notes:
        print(note)
    down = state_dir / DOWN_FILE
    if down.exists():  # the playground runs, its function does not: `make up` again would be refused
        print(
            "The playground runs but its function does not: it failed to start after a change, at "
            + down.read_text().strip()
        )
        print("Fix that and save the file: the playground restarts the function by itself; then trigger again.")
        return 2
    try:
        return _trigger(cluster_id, via=via, settings=settings, state_dir=state_dir)
    except requests.ConnectionError as exc:
        url = exc.request.url if exc.request is not None and exc.request.url else settings["EMULATORS_ADMIN"]
        parts = urlsplit(str(url))
        again = " and `source` its env file again" if source == "this shell's variables" else ""
        print(
            f"Nothing listens at {parts.scheme}://{parts.netloc} (from {source}): "
            f"the playground is not running; run `make up`{again}."
        )
        return 2


def _trigger(cluster_id: str, *, via: str, settings: Mapping[str, str], state_dir: Path) -> int:
    admin, function_url = settings["EMULATORS_ADMIN"].rstrip("/"), settings["FUNCTION_URL"]
    cluster = requests.get(f"{admin}/hyperfleet/clusters/{cluster_id}", timeout=10)
    generation = 1
    if cluster.status_code == 200:
        generation = int(cluster.json().get("generation", 1))
    else:
        print(f"Note: the HyperFleet emulator has no cluster {cluster_id}; the function will find it gone.")
        print(f'      Seed a ready one first: curl -s -X PUT "$EMULATORS_ADMIN/ready_clusters/{cluster_id}"')
    before = len(_reports(admin, cluster_id))
    log_path = state_dir / "function.log"
    log_offset = log_path.stat().st_size if log_path.exists() else 0
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
            print_outcome(log_path, log_offset, cluster_id)
            return 1
    # A push is answered once the reconcile is over; a published message is pushed a moment later.
    deadline = time.monotonic() + (REPORT_WAIT_S if via == "pubsub" else 0.0)
    while True:
        found = _reports(admin, cluster_id)
        if len(found) > before:
            print_outcome(log_path, log_offset, cluster_id)
            print_report(found[-1], cluster_id)
            return 0
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    print_outcome(log_path, log_offset, cluster_id)
    print(f"No status reported; the function's log says why: make logs (or {log_path}).")
    return 1 if via == "pubsub" else 0


def print_outcome(log_path: Path, offset: int, cluster_id: str) -> None:
    """What the function did for this event, from the log lines it wrote since `offset` (when it is local)."""
    if not log_path.exists():
        return
    with log_path.open(encoding="utf-8", errors="replace") as handle:
        handle.seek(offset)
        records = [r for r in map(logview.parse, handle) if r is not None and logview.cluster_of(r) == cluster_id]
    final = [r for r in records if r.get("operation") == "reconcile"]
    if not final:
        return
    records = records[: records.index(final[-1]) + 1]
    print(f"The function: {final[-1].get('message', '')}")
    for record in records[:-1]:
        if "written" in record or record.get("severity") in ("WARNING", "ERROR"):
            print(f"  {logview.readable(record, clock=False)}")


def print_report(report: dict[str, Any], cluster_id: str) -> None:
    body = report["body"]
    print(
        f"Status reported ({report['method']} -> {report['code']}), observed_generation {body['observed_generation']}:"
    )
    for condition in body["conditions"]:
        print(f"  {condition['type']:<10} {condition['status']:<6} {condition['reason']}: {condition['message']}")
    data = body.get("data") or {}
    checks = data.get("registry_checks") or []
    if checks:
        print(f"  data.registry_checks (REGISTRY_VERIFICATION={data.get('registry_verification', '?')}):")
        for line in registry_checks.lines(checks):
            print(f"    {line}")
    print(f"  data keys: {', '.join(sorted(data)) or '-'}")
    print(
        "The whole stored status, as the HyperFleet API holds it:\n"
        '  curl -s -H "Authorization: Bearer $(cat "$HYPERFLEET_API_TOKEN_FILE")" '
        f'"$HYPERFLEET_API_URL/api/hyperfleet/v1/clusters/{cluster_id}/statuses"'
    )
