"""`make up` and `make down`: a local playground of the emulators, the function and a ready cluster.

`up` starts the emulator stack, seeds a cluster whose preconditions are all met (emulators.seed), runs the
function under functions-framework, wires a Pub/Sub topic with a push subscription to it (when the Cloud SDK's
emulator is installed), writes `<state>/env` (every variable the function reads, exported or unset:
emulators.playground_env) and `<state>/settings.json` (the same for programs), and prints the env file followed by
the next commands to try, as shell comments (so the whole output can be sourced). It serves until interrupted, and
restarts the function (same port, same settings) when a `.py` file under `pullsecret/` or `main.py` changes.

One playground per state folder (`.playground/` by default; emulators.playground_lock holds it).

Every way out of `up` (Ctrl-C, SIGTERM, a failure) at any moment of start-up or service stops the function and
every emulator (the Java Pub/Sub emulator included), removes the stack's temporary folder (it holds the
HyperFleet token, the registry CA and the operator's kubeconfig), `<state>/env` and `<state>/settings.json`, and
says so.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from emulators import seed
from emulators.demo import SUBSCRIPTION, TOPIC, WORLD_SETTINGS, demo_pull_secret, function_env, trigger_endpoint
from emulators.functionproc import ROOT, FunctionProcess
from emulators.operator_identity import grant as grant_operator
from emulators.playground_env import (
    OPERATOR_KUBECONFIG,
    PLAYGROUND_STATE,
    env_file_text,
    managed_variables,
    read_env_file,
    remove_state_files,
    settings_record,
    write_state_files,
)
from emulators.playground_lock import DOWN_FILE, AlreadyRunning, down, holder, holding_lock, shown_path
from emulators.pubsub import PubSubEmulator
from emulators.signals import interruptible, signals_ignored
from emulators.stack import Stack
from emulators.world import PROJECT_ID, PROJECT_NUMBER, TOKEN_ACCOUNT, TOKEN_CLUSTER, TOKEN_NAMESPACE

__all__ = ["down", "holder", "read_env_file", "up"]  # down, holder, read_env_file: re-exported for callers

DEMO_CLUSTER = "cls-demo01"
STATE_DIR = Path(".playground")  # = playground_lock.STATE_DIR
WATCH_INTERVAL_S = 1.0
SOURCES = ("platform", "service")
# What Terraform's workload identity gives the External Secrets Operator's reader in a cluster's namespace
# (terraform/: external_secrets_principal_template); the playground provides it with KUBERNETES_DELIVERY alone.
ESO_PRINCIPAL_TEMPLATE = (
    f"principal://iam.googleapis.com/projects/{PROJECT_NUMBER}/locations/global/workloadIdentityPools/"
    f"{PROJECT_ID}.svc.id.goog/subject/ns/{{namespace}}/sa/hyperfleet-pull-secret-reader"
)
# The stack's own addresses, for checking a shell's settings before anything starts (never contacted).
_PLACEHOLDERS = {
    "HYPERFLEET_API_URL": "http://127.0.0.1:9/",
    "SECRET_MANAGER_EMULATOR_HOST": "127.0.0.1:9",
    "GKE_EMULATOR_HOST": "127.0.0.1:9",
    "RESOURCE_MANAGER_EMULATOR_HOST": "127.0.0.1:9",
}


def given_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The function's settings this shell sets (`REGISTRY_VERIFICATION=enforce make up`), the source's excepted:
    SOURCE= picks those, and a shell that sourced an earlier playground's env file must not bring them back. With
    KUBERNETES_DELIVERY=external-secrets and no template, the playground's principal template."""
    # Imported here: `make trigger` imports this module, and must still speak when a saved file under pullsecret/
    # does not compile.
    from pullsecret.operator.settings import FUNCTION_VARIABLES, SOURCE_VARIABLES

    given = {k: environ[k] for k in FUNCTION_VARIABLES if k in environ and k not in SOURCE_VARIABLES}
    if hyperfleet_auth(given) != "token-file":
        # The function signs in itself (an ID token, a ServiceAccount token): the token file is the playground's,
        # and an earlier playground's (from a sourced env file) would be refused with these modes.
        given.pop("HYPERFLEET_API_TOKEN_FILE", None)
    if behind_gateway(given):
        # HYPERFLEET_API_AUTH=service-account-token make up: the regional cluster's account, through the gateway.
        given = {**GATEWAY_SETTINGS, **given}
    mode = given.get("KUBERNETES_DELIVERY", "").strip().lower()
    if mode == "external-secrets" and not given.get("EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE", "").strip():
        given["EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE"] = ESO_PRINCIPAL_TEMPLATE
    return given


# HYPERFLEET_API_AUTH=service-account-token: the stack puts hyperfleet-gateway in front of the API, and the function
# mints the ServiceAccount token on the regional cluster (emulators/world.py) unless the shell names another.
GATEWAY_SETTINGS = {
    "HYPERFLEET_API_TOKEN_CLUSTER": TOKEN_CLUSTER,
    "HYPERFLEET_API_SERVICE_ACCOUNT": f"{TOKEN_NAMESPACE}/{TOKEN_ACCOUNT}",
}


def hyperfleet_auth(settings: Mapping[str, str]) -> str:
    """How the function signs in to HyperFleet (HYPERFLEET_API_AUTH, its default token-file)."""
    return settings.get("HYPERFLEET_API_AUTH", "").strip() or "token-file"


def behind_gateway(given: Mapping[str, str]) -> bool:
    return hyperfleet_auth(given) == "service-account-token"


def terraform_variables(settings: Mapping[str, str]) -> dict[str, str]:
    """The terraform/ variables of these settings' modes that change what the runtime identity is granted (empty:
    the stack's default grants hold): the delivery, and how it signs in to HyperFleet (service-account-token: GKE
    GetCluster on the cluster that mints its token, which external-secrets mode otherwise grants nowhere)."""
    variables: dict[str, str] = {}
    if _delivery(settings) == "external-secrets":
        variables["kubernetes_delivery"] = "external-secrets"
    auth = hyperfleet_auth(settings)
    if auth != "token-file":
        variables.update(hyperfleet_api_auth=auth, hyperfleet_api_token_secret="")
    if auth == "service-account-token":
        variables["hyperfleet_token_cluster"] = settings.get("HYPERFLEET_API_TOKEN_CLUSTER", TOKEN_CLUSTER)
    return variables


# The playground's own defaults (a shell's setting wins): the platform pull secret cached 2 s, not 30, so that a
# rotation (README, "Rotate the pull secret"; `make rotate` waits it out) reaches the next trigger without a wait.
PLAYGROUND_DEFAULTS = {"PULL_SECRET_SOURCE_TTL": "2"}


def function_settings(stack: Stack, state_dir: Path, *, source: str, given: Mapping[str, str]) -> dict[str, str]:
    """Every setting the function runs with: the stack's seams win, then this shell's settings, then the
    playground's defaults and the demo's."""
    base = {**function_env(stack, state_dir, source), **PLAYGROUND_DEFAULTS}
    ours = stack.env()
    if hyperfleet_auth(given) != "token-file":  # refused beside an ID token or a ServiceAccount token
        base.pop("HYPERFLEET_API_TOKEN_FILE", None)
        ours.pop("HYPERFLEET_API_TOKEN_FILE", None)
    return {**base, **{k: v for k, v in given.items() if k not in ours}, **ours}


def check_settings(given: Mapping[str, str], *, source: str) -> str | None:
    """The configuration error the function would stop at with these settings and the playground's own (None:
    none), before any start; when the error names a setting the playground fixes, it says its value."""
    from pullsecret import configured
    from pullsecret.errors import ConfigError

    sourcing = {"PULL_SECRET_SERVICE_URL": "http://127.0.0.1:9/"} if source == "service" else {}
    sourcing = sourcing or {"PULL_SECRET_SOURCE": seed.SOURCE_VERSION}
    ours = {**WORLD_SETTINGS, **PLAYGROUND_DEFAULTS}
    try:
        configured.load(
            {**_PLACEHOLDERS, **sourcing, **ours, **{k: v for k, v in given.items() if k not in _PLACEHOLDERS}}
        )
    except ConfigError as exc:
        named = [k for k, v in ours.items() if k not in given and re.search(rf"\b{k}\b", str(exc))]
        if not named:
            return str(exc)
        fixed = "; ".join(f"{k}={ours[k]}" for k in named)
        return f"{exc} (the playground sets {fixed}: the project and the one management cluster it emulates)"
    return None


def exports(
    stack: Stack, function: FunctionProcess, settings: Mapping[str, str], operator: Path, state_dir: Path
) -> dict[str, str]:
    """Everything a shell needs to use the playground: every setting the function runs with (so the CLI run from
    that shell decides as the function does), the URLs, the operator's kubeconfig, gcloud's Pub/Sub override."""
    env = dict(settings)
    env.update({"EMULATORS_ADMIN": stack.admin.url, "FUNCTION_URL": function.url, OPERATOR_KUBECONFIG: str(operator)})
    env[PLAYGROUND_STATE] = str(state_dir)  # which playground this shell is aimed at (a second one has its own)
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


def next_steps(
    cluster_id: str, state_dir: Path, pubsub_reason: str | None, *, mode: str = "", met: str = "all preconditions met"
) -> str:
    python = ".venv/bin/python"
    default = state_dir == STATE_DIR
    # A second playground's hints name its own state folder: `make` targets use the default one.
    trigger = (
        f"make trigger CLUSTER={cluster_id}"
        if default
        else f"{python} -m emulators trigger {cluster_id} " + (f"--state-dir {state_dir}")
    )
    logs = "make logs" if default else f"{python} -m emulators logs --state-dir {state_dir}"
    stop = "make down" if default else f"{python} -m emulators down --state-dir {state_dir}"
    lines = [
        f"Ready: emulators, the function and cluster {cluster_id} ({met}){mode}.",
        f"In another shell, from the repository: source {state_dir}/env   (or paste the export lines above)",
        "Next commands to try:",
        f"  {trigger}              # a Pub/Sub push envelope, posted to the function",
    ]
    if pubsub_reason is None:
        via = f"{trigger} VIA=pubsub" if default else f"{trigger} --via pubsub"
        lines += [
            f"  {via}   # published to topic {TOPIC}, pushed by the emulator",
            f'  gcloud pubsub topics publish {TOPIC} --message="$({python} -m emulators event {cluster_id})"',
        ]
    else:
        lines.append(f"  (no Pub/Sub emulator: {pubsub_reason}; `make trigger` posts the push envelope itself)")
    lines += [
        f"  {logs}                                     # the function's log, one readable line per record",
        f"  {python} -m pullsecret reconcile {cluster_id}    # the operator CLI, same code and configuration",
        f"  {python} -m pullsecret reconcile {cluster_id} --dry-run   # what it would write, writing nothing",
        f"  {python} -m pullsecret inspect {cluster_id}",
        f"  {python} -m pullsecret fleet                 # every cluster's state, and what outlived its cluster",
        f'  kubectl --kubeconfig "${OPERATOR_KUBECONFIG}" get secrets -n clusters-{cluster_id}   # read as an operator',
        '  curl -s -X PUT "$EMULATORS_ADMIN/ready_clusters/cls-demo02"   # another ready cluster',
        f"The function's raw log: {state_dir}/function.log. Saving a change under pullsecret/ restarts the function.",
        f"Ctrl-C stops everything (or `{stop}` from another shell).",
    ]
    return "\n".join("# " + line for line in lines)


class StartFailed(Exception):
    """The function process did not start; the message is the line that says why."""


# --- up ---------------------------------------------------------------------------------------------------


def _sources() -> dict[Path, float]:
    """The function's code: what a change restarts it for."""
    found = {ROOT / "main.py": 0.0, **{p: 0.0 for p in (ROOT / "pullsecret").rglob("*.py")}}
    for path in list(found):
        try:
            found[path] = path.stat().st_mtime
        except FileNotFoundError:
            del found[path]
    return found


def _changed(before: Mapping[Path, float], now: Mapping[Path, float]) -> list[str]:
    names = sorted(set(before) ^ set(now) | {p for p in now if p in before and before[p] != now[p]})
    return [os.path.relpath(p, ROOT) for p in names]


def up(
    *,
    state_dir: Path,
    clusters: list[str],
    pubsub: bool,
    port: int = 0,
    source: str = "platform",
    environ: Mapping[str, str] | None = None,
) -> int:
    """Refuse when one runs already, or when a setting is invalid (one line: which, and what to do); else start,
    seed, wire, print; serve until SIGINT/SIGTERM (or `down`)."""
    state_dir = state_dir.resolve()
    given = given_settings(os.environ if environ is None else environ)
    problem = check_settings(given, source=source)
    if problem is not None:
        print(f"configuration error: {problem}", file=sys.stderr)
        print(
            "Nothing was started. Fix or unset that variable in this shell, then run `make up` again.", file=sys.stderr
        )
        return 2
    try:
        with holding_lock(state_dir), interruptible():
            return _serve(state_dir, clusters, pubsub, port, source=source, given=given)
    except AlreadyRunning as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before anything started
        return 130


def _delivery(settings: Mapping[str, str]) -> str:
    return settings.get("KUBERNETES_DELIVERY", "direct").strip().lower() or "direct"


def _mode_text(source: str, settings: Mapping[str, str]) -> str:
    return f"; source {source}, delivery {_delivery(settings)}, HyperFleet sign-in {hyperfleet_auth(settings)}"


def preconditions_text(settings: Mapping[str, str]) -> str:
    """What the ready line says of the seeded clusters' preconditions under these settings."""
    unreported = seed.unreported_preconditions(settings)
    if not unreported:
        return "all preconditions met"
    return (
        f"preconditions NOT met: PRECONDITION_ADAPTERS names {', '.join(unreported)}, which no adapter reports here; "
        "every reconcile will wait (PreconditionsNotMet) until you fix it and `make up` again"
    )


def _serve(
    state_dir: Path, clusters: list[str], pubsub: bool, port: int, *, source: str, given: Mapping[str, str]
) -> int:
    (state_dir / "gcloud").mkdir(parents=True, exist_ok=True)
    (state_dir / DOWN_FILE).unlink(missing_ok=True)
    reason: str | None = "--no-pubsub"
    if pubsub:
        available, why = PubSubEmulator.available()
        reason = None if available else why
    env_path = state_dir / "env"
    stack: Stack | None = None
    # The function running now: a code change replaces it (`_watch`), and `finally` must stop that one.
    running: list[FunctionProcess] = []
    ready = False
    code = 130
    try:
        stack = Stack(pubsub=reason is None, gateway=behind_gateway(given))
        stack.start()
        settings = function_settings(stack, state_dir, source=source, given=given)
        variables = terraform_variables(settings)
        if variables:  # the grants Terraform gives the runtime identity in these modes
            stack.apply_terraform_iam(**variables)
        if source == "platform":
            # The demo's platform pull secret: the registry emulator's hosts, so verification talks to them only.
            seed.platform_pull_secret(stack, demo_pull_secret(stack.registry.hosts()))
        for cluster_id in clusters:
            seed.ready_cluster(stack, cluster_id, platform_secret=source == "platform")
        operator = grant_operator(stack.kubernetes, stack.workdir)
        # The function runs with exactly these settings, the ones the env file carries (none inherited).
        function = FunctionProcess(settings, state_dir / "function.log", port=port, drop=managed_variables(settings))
        running.append(function)
        try:
            function.start()
        except RuntimeError as exc:
            raise StartFailed(failure_line(str(exc))) from None
        if stack.pubsub is not None:
            stack.pubsub.create_topic(TOPIC)
            stack.pubsub.create_push_subscription(TOPIC, SUBSCRIPTION, trigger_endpoint(function.url))
        env = exports(stack, function, settings, operator, state_dir)
        delivery = _delivery(settings)
        record = settings_record(settings, env, pid=os.getpid(), source=source, delivery=delivery)
        write_state_files(state_dir, env, record)
        first = clusters[0] if clusters else DEMO_CLUSTER
        shown = Path(shown_path(state_dir))
        steps = next_steps(first, shown, reason, mode=_mode_text(source, settings), met=preconditions_text(settings))
        print(env_file_text(env) + steps)
        sys.stdout.flush()
        ready = True
        _watch(running, settings, state_dir)
    except StartFailed as exc:
        print(f"# The function did not start: {exc}", file=sys.stderr, flush=True)
        whole = shown_path(state_dir / "function.log")
        print(f"# Its whole output: {whole}; stopping ...", file=sys.stderr, flush=True)
        code = 1
    except KeyboardInterrupt:
        print("#\n# " + ("Stopping" if ready else "Interrupted during start-up; stopping") + " ...", flush=True)
    finally:
        with signals_ignored():
            remove_state_files(state_dir)
            (state_dir / DOWN_FILE).unlink(missing_ok=True)
            for function in running:
                function.stop()
            if stack is not None:
                stack.stop()
        stopped = "the function, the emulators" + (" and the Pub/Sub emulator" if reason is None else "")
        print(
            f"# Stopped: {stopped}; removed {shown_path(env_path)}, settings.json and the temporary folder"
            " (the token, the CA, the operator's kubeconfig)."
            if stack is not None
            else "# Stopped before any emulator started.",
            flush=True,
        )
    return 0 if ready else code


def failure_line(output: str) -> str:
    """The line of a failed start a person needs: the configuration error, or the file and line of an error in
    the code and what it says, rather than the last line of a traceback. A JSON log line gives its message; a
    long line is shortened at a word, never cut inside one."""
    lines = [_message(line.strip()) for line in output.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if "configuration error" in line.lower() or line.startswith("pullsecret.errors.ConfigError"):
            return _shortened(line.split("ConfigError: ", 1)[-1], 300)
    last = lines[-1] if lines else "?"
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if line.startswith('File "') and (f"{ROOT}/pullsecret" in line or f"{ROOT}/main.py" in line):
            where = line.split('"')[1]
            number = line.split(", line ", 1)[1].split(",", 1)[0] if ", line " in line else "?"
            return f"{os.path.relpath(where, ROOT)}, line {number}: {_shortened(last, 200)}"
    return _shortened(last, 300)


def _message(line: str) -> str:
    """A log record's message (the first line of it), or the line itself when it is not a JSON record."""
    from emulators.logview import parse

    record = parse(line)
    return str(record.get("message", line)).split("\n", 1)[0].strip() if record is not None else line


def _shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + " …"


def _watch(running: list[FunctionProcess], settings: dict[str, str], state_dir: Path) -> None:
    """Serve until interrupted; restart the function, on its port, whenever its code changes.

    `running[0]` is always the function started last, the one the caller stops.
    """
    known = _sources()
    while True:
        time.sleep(WATCH_INTERVAL_S)
        now = _sources()
        changed = _changed(known, now)
        if not changed:
            continue
        known = now
        print(f"# {', '.join(changed[:5])} changed: restarting the function ...", flush=True)
        port = running[0].port
        running[0].stop()
        running[0] = function = FunctionProcess(
            settings, state_dir / "function.log", port=port, append_log=True, drop=managed_variables(settings)
        )
        try:
            took = function.start()
        except RuntimeError as exc:
            why = failure_line(str(exc))
            (state_dir / DOWN_FILE).write_text(why + "\n")
            print(f"# The function did not start: {why}. Fix it and save again.", flush=True)
            continue
        (state_dir / DOWN_FILE).unlink(missing_ok=True)
        print(f"# The function serves the new code again at {function.url} (ready in {took:.1f} s).", flush=True)


def event_json(cluster_id: str, generation: int) -> str:
    """The Sentinel event as one JSON line, e.g. for `gcloud pubsub topics publish --message`."""
    return json.dumps(seed.sentinel_event(cluster_id, generation), separators=(",", ":"))
