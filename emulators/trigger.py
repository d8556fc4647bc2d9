"""`make trigger`: one reconcile of a playground cluster through the path Pub/Sub uses, and what came of it.

The event is a push envelope with a fresh publishTime posted to the function (`--via push`), or the Sentinel
event published to the topic (`--via pubsub`). Then it prints why things are as they are: what the function did
(`applied` or `unchanged`, from its final log line, with the steps that wrote), each condition's reason and
message, `data.registry_checks` (which registry accepted or refused its credential), and how to read the whole
stored status.

One behaviour per path: the push and the Pub/Sub path wait for the same thing (the function's final log record
for this event, or the status it reported), say so when that takes more than a moment, and end with the same
lines and the same exit code: 0 a status reported (whatever it says); else the operator CLI's for the outcome
the function logged (RESULT_EXIT): 0 applied/unchanged/finalized, 1 a terminal failure or no answer, 3 a
transient failure (Pub/Sub redelivers), 4 nothing done (the cluster unknown to HyperFleet, gone, stale, skipped);
and 2 for no playground or an invalid cluster id (one line, nothing sent).

Where the playground is: the running playground's `<state>/env` wins over this shell's variables, which may
be left from an earlier `make up` (the ports change on every start); a shell whose values differ is told so.
When nothing answers, one line says so and what to do, instead of a client library's traceback.
"""

from __future__ import annotations

import re
import threading
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
PUSH_QUIET_S = 3.0  # a push not answered within this is said to be waited for
PLAYGROUND_KEYS = ("EMULATORS_ADMIN", "FUNCTION_URL")
# = pullsecret.model.events._CLUSTER_ID: the ids the function takes from an event (a test holds them equal).
CLUSTER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]{0,254}$")
# An id the function can name a Kubernetes namespace and Secret after (a lowercase RFC 1123 label's characters).
NAMEABLE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
# = pullsecret.operator.cli._RESULT_EXIT: the CLI's exit code for each result (a test holds them equal).
RESULT_EXIT = {
    "applied": 0,
    "unchanged": 0,
    "finalized": 0,
    "terminal": 1,
    "transient": 3,
    "skipped": 4,
    "stale": 4,
    "gone": 4,
}
EXIT_NO_ANSWER = 1
EXIT_USAGE = 2


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
    """One reconcile of `cluster_id` through the Pub/Sub path; prints what happened; the exit code of its outcome."""
    if not CLUSTER_ID.fullmatch(cluster_id):
        print(f"error: {cluster_id[:80]!r} is not a HyperFleet cluster id; nothing was sent")
        return EXIT_USAGE
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
    known = cluster.status_code == 200
    generation = int(cluster.json().get("generation", 1)) if known else 1
    if not known:
        print(f"Note: the HyperFleet emulator has no cluster {cluster_id}; the function will find it gone.")
    before = len(_reports(admin, cluster_id))
    log_path = state_dir / "function.log"
    log_offset = log_path.stat().st_size if log_path.exists() else 0
    event = seed.sentinel_event(cluster_id, generation)
    sent = f"event {event['id']} (cluster {cluster_id}, generation {generation})"
    if via == "pubsub":
        published = requests.post(f"{admin}/pubsub/topics/{TOPIC}/sentinel_event", json=event, timeout=30)
        if published.status_code != 200:
            print(f"Publishing to {TOPIC} failed ({published.status_code}): is the Pub/Sub emulator running?")
            print(f"  {published.text[:300]}")
            return EXIT_USAGE
        message = published.json()["message_id"]
        print(f"Published {sent} to topic {TOPIC}: message {message}; the emulator pushes it to the function.")
        print(f"Waiting (up to {REPORT_WAIT_S:.0f} s) for the push and the function's answer ...")
    else:
        answer = _push(function_url, event)
        verdict = "acknowledged" if 200 <= answer.status_code < 300 else "not acknowledged: Pub/Sub would redeliver"
        print(f"Pushed {sent} to {function_url}: HTTP {answer.status_code}, {verdict}.")
    # A push is answered once the reconcile is over; a published message is pushed a moment later.
    deadline = time.monotonic() + (REPORT_WAIT_S if via == "pubsub" else 0.0)
    while True:
        found = _reports(admin, cluster_id)
        final = _final_record(log_path, log_offset, str(event["id"]))
        if len(found) > before or final is not None or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    print_outcome(log_path, log_offset, cluster_id)
    if len(found) > before:
        print_report(found[-1], cluster_id, token_file=bool(settings.get("HYPERFLEET_API_TOKEN_FILE")))
        waiting = _waiting_on_misspelt(found[-1], settings)
        if waiting:
            print(waiting)
    elif not known and not NAMEABLE.fullmatch(cluster_id):
        print(
            f"No status reported: HyperFleet has no cluster {cluster_id}, and none could be reconciled under that id: "
            "its Kubernetes namespace and Secret names must be lowercase letters, digits and '-' (HyperFleet's own "
            "ids are). Try a lowercase id."
        )
    elif not known:
        print(f"No status reported: HyperFleet has no cluster {cluster_id}, nothing to reconcile. A ready one:")
        print(f'  curl -s -X PUT "$EMULATORS_ADMIN/ready_clusters/{cluster_id}"')
    else:
        print(f"No status reported; the function's log says why: make logs (or {log_path}).")
    if len(found) > before:
        return 0  # the status says the rest (PreconditionsNotMet included), as before
    return EXIT_NO_ANSWER if final is None else RESULT_EXIT.get(str(final.get("result")), EXIT_NO_ANSWER)


def _push(function_url: str, event: dict[str, Any]) -> requests.Response:
    """Post the push envelope; a line says what it waits for when the answer takes more than PUSH_QUIET_S."""
    quiet = threading.Timer(
        PUSH_QUIET_S,
        lambda: print(
            "Waiting for the function's answer to the push (it answers once the reconcile is over) ...", flush=True
        ),
    )
    quiet.daemon = True
    quiet.start()
    try:
        return requests.post(function_url, json=push_envelope(event), timeout=120)
    finally:
        quiet.cancel()


def _final_record(log_path: Path, offset: int, event_id: str) -> dict[str, Any] | None:
    """The function's final log record (operation `reconcile`) for the event `event_id`, once written."""
    if not log_path.exists():
        return None
    with log_path.open(encoding="utf-8", errors="replace") as handle:
        handle.seek(offset)
        for record in map(logview.parse, handle):
            if record is None or record.get("operation") != "reconcile" or not record.get("result"):
                continue
            labels = record.get(logview.LABELS)
            if isinstance(labels, dict) and labels.get("event_id") == event_id:
                return record
    return None


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


def _waiting_on_misspelt(report: dict[str, Any], settings: Mapping[str, str]) -> str | None:
    """A note when the status waits on preconditions that cannot be met here: PRECONDITION_ADAPTERS names an
    adapter no seeded cluster has a status of (a misspelling the function warned of at its start)."""
    waiting = any(c.get("reason") == "PreconditionsNotMet" for c in report["body"]["conditions"])
    unreported = seed.unreported_preconditions(settings)
    if not waiting or not unreported:
        return None
    return (
        f"Note: this will not pass: PRECONDITION_ADAPTERS names {', '.join(unreported)}, which no adapter reports "
        "on this playground (the function warned at its start: make logs). Fix the name and `make up` again."
    )


def print_report(report: dict[str, Any], cluster_id: str, *, token_file: bool = True) -> None:
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
    if token_file:
        print(
            "The whole stored status, as the HyperFleet API holds it:\n"
            '  curl -s -H "Authorization: Bearer $(cat "$HYPERFLEET_API_TOKEN_FILE")" '
            f'"$HYPERFLEET_API_URL/api/hyperfleet/v1/clusters/{cluster_id}/statuses"'
        )
        return
    # HYPERFLEET_API_AUTH=google-id-token or service-account-token: the function signs in itself, this shell holds
    # no HyperFleet token; the operator CLI reads the status as the function does.
    print(
        "Our status as the HyperFleet API holds it (conditions, lineage; the function signs in itself: no token "
        "file):\n"
        f"  .venv/bin/python -m pullsecret inspect {cluster_id}"
    )
