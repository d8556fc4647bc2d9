"""Operator CLI: the function's own code and configuration, run by hand (ADC locally).

    python -m pullsecret reconcile CLUSTER_ID   one reconcile, exactly as an event would run it
                                                (--dry-run: what it would write where, writing nothing)
    python -m pullsecret fleet                  every cluster's state, and what outlived its cluster
                                                (--fix removes what is ours; pullsecret.operator.fleet)
    python -m pullsecret inspect CLUSTER_ID     the cluster's lineage across HyperFleet, Secret Manager
                                                and Kubernetes, as JSON, redacted (no credential, ever);
                                                run it with your own credentials: the function's runtime
                                                identity may not read Kubernetes Secrets
    python -m pullsecret rekey [CLUSTER_ID...]  re-key the fleet (or these clusters) now, at the write quota's
                                                pace: the service rotates, the function delivers
                                                (pullsecret.operator.rekey)
    python -m pullsecret doctor                 check every permission and dependency as the runtime
                                                identity, one line each with its fix; writes nothing
                                                (pullsecret.doctor.run)

`reconcile` prints a summary for a person on stdout, and the function's JSON log lines on stderr only with
`-v` (`--json`: the summary as one JSON object instead). With `--deployed projects/P/locations/L/functions/F`
(or PULLSECRET_DEPLOYED_FUNCTION) a write first compares this shell's configuration with the deployed
function's and refuses when they differ in what changes the result (pullsecret.operator.deployed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pullsecret.doctor import run as doctor
from pullsecret.errors import ConfigError, TerminalError, TransientError
from pullsecret.logs import log
from pullsecret.operator import interrupts
from pullsecret.operator.interrupts import EXIT_INTERRUPTED
from pullsecret.operator.rekey import arguments
from pullsecret.operator.settings import VIEW_VARIABLES

if TYPE_CHECKING:  # the application's modules load only when a command runs (usage errors stay instant)
    from pullsecret.app import Application
    from pullsecret.handler import Adapter
    from pullsecret.reconcile.outcome import Outcome

EXIT_OK = 0
EXIT_TERMINAL = 1
EXIT_USAGE = 2
EXIT_TRANSIENT = 3
EXIT_NOTHING_DONE = 4
EXIT_CONFIG = 5
EXIT_PIPE = 141  # as a shell reports a process ended by SIGPIPE

_RESULT_EXIT = {
    "applied": EXIT_OK,
    "unchanged": EXIT_OK,
    "finalized": EXIT_OK,
    "terminal": EXIT_TERMINAL,
    "transient": EXIT_TRANSIENT,
    "skipped": EXIT_NOTHING_DONE,
    "stale": EXIT_NOTHING_DONE,
    "gone": EXIT_NOTHING_DONE,
}

_EPILOG = """\
commands: reconcile, inspect, fleet (--fix), rekey, doctor (python -m pullsecret COMMAND --help)

exit codes:
  0    done: applied, unchanged or finalized (inspect: the cluster was found; doctor: no check failed)
  1    terminal failure, reported in the cluster's status (fix the input, then run again); doctor: a check failed
  2    usage error (a flag, an argument, a cluster id)
  3    transient failure (a service was unavailable, an endpoint answered nothing): try again
  4    nothing done: preconditions not met, a stale generation, or a cluster the API does not know
  5    configuration error, nothing done: a setting, Google credentials missing or refused, this shell's settings
       differing from the running playground's or the deployed function's, a shell left from a stopped
       playground (the message names what and the fix)
  130  interrupted (Ctrl-C, SIGTERM): one line; a step is never left half-written, and running the same
       command again finishes or repeats it
  141  stdout's reader stopped reading (`--json | head`), as a shell reports SIGPIPE

environment (the function's own; docs/configuration.md lists them all):
  HYPERFLEET_API_URL           required: the HyperFleet API base URL
  HYPERFLEET_API_TOKEN_FILE    file holding the HyperFleet bearer token
  PULL_SECRET_SOURCE           the platform pull secret, projects/P/secrets/S/versions/(latest|N); or
  PULL_SECRET_SERVICE_URL      the HyperFleet Pull Secret Service (per-cluster credentials; exactly one of the two)
  PULL_SECRET_SERVICE_TOKEN_FILE  file holding the service's bearer token
  KUBERNETES_DELIVERY          direct (default) or external-secrets (with EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE)
  MANAGEMENT_CLUSTER           default GKE management cluster, projects/P/locations/L/clusters/C
  SECRET_PROJECT_ID            pin one Secret Manager project (else the cluster's spec.platform.gcp.projectID)
  ADAPTER_TOPIC                projects/P/topics/T, the adapter's own topic: rekey publishes each cluster's
                               reconcile event there (required by rekey)
  LOG_LEVEL, RETRY_DEADLINE    log level of the stderr lines (-v); seconds of in-process retries
  PULLSECRET_DEPLOYED_FUNCTION projects/P/locations/L/functions/F: as --deployed (compare before writing)
  PULLSECRET_OPERATOR_KUBECONFIG  a kubeconfig inspect and fleet read the management cluster with (your own
                               read-only identity; the playground's env file names one): direct mode's Secret
  SECRET_MANAGER_EMULATOR_HOST, GKE_EMULATOR_HOST, RESOURCE_MANAGER_EMULATOR_HOST, GCE_METADATA_HOST
                               local emulators (`source .playground/env` sets them); unset: Google's endpoints
  Google credentials come from Application Default Credentials (gcloud auth application-default login,
  or GOOGLE_APPLICATION_CREDENTIALS), or the metadata server.
  Next to a running playground (.playground/settings.json), a command that writes first compares this shell's
  settings with its function's and refuses when they differ in what changes the result.
"""


_DEPLOYED_HELP = (
    "projects/P/locations/L/functions/F: before writing, compare this configuration with the deployed function's "
    "(gcloud functions describe) and refuse when they differ in what changes the result"
)


def _page_size(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 500:
        raise argparse.ArgumentTypeError(f"must be a number from 1 to 500, got {text[:20]!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pullsecret",
        description="Run the pull-secret adapter's code by hand: one reconcile, a cluster's lineage, the fleet's "
        "state, a re-key, the doctor's checks.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{reconcile,inspect,fleet,rekey,doctor}")
    reconcile = commands.add_parser(
        "reconcile",
        help="run one reconcile of a cluster now and report its status, as an event would",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    reconcile.add_argument("cluster_id")
    output = reconcile.add_mutually_exclusive_group()
    output.add_argument("--quiet", "-q", action="store_true", help="the summary only (the default; kept for scripts)")
    output.add_argument("--verbose", "-v", action="store_true", help="also the function's JSON log lines, on stderr")
    output.add_argument("--json", action="store_true", help="the outcome as one JSON object on stdout")
    reconcile.add_argument(
        "--dry-run", action="store_true", help="print what would be written where (names, fingerprints); write nothing"
    )
    reconcile.add_argument("--deployed", metavar="FUNCTION", help=_DEPLOYED_HELP)
    fleet_parser = commands.add_parser(
        "fleet",
        help="every cluster's state, and what outlived its cluster (--fix removes what is ours)",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fleet_parser.add_argument("--fix", action="store_true", help="remove what outlived its cluster and is ours")
    fleet_parser.add_argument("--verbose", "-v", action="store_true", help="also the JSON log lines, on stderr")
    fleet_parser.add_argument("--deployed", metavar="FUNCTION", help=_DEPLOYED_HELP)
    fleet_parser.add_argument(
        "--page-size", type=_page_size, default=100, metavar="N", help="clusters and secrets per page (1..500)"
    )
    arguments.service_limits(fleet_parser, "the service's limits per ServiceAccount, which CREDS keeps to")
    inspect = commands.add_parser(
        "inspect",
        help="print the cluster's pull-secret lineage (redacted JSON)",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inspect.add_argument("cluster_id")
    inspect.add_argument("--quiet", "-q", action="store_true", help="no log lines on stderr")
    arguments.add_parser(commands, _EPILOG, _DEPLOYED_HELP, _page_size)
    doctor.add_parser(commands, _EPILOG)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)  # exits 2 on usage errors
    ids = args.cluster_ids if args.command == "rekey" else [getattr(args, "cluster_id", "")]
    for cluster_id in ids if args.command not in ("doctor", "fleet") else ():
        if not preconditions_cluster_id_ok(cluster_id):
            print(f"error: {cluster_id[:80]!r} is not a HyperFleet cluster id", file=sys.stderr)
            return EXIT_USAGE
    received: list[int] = []
    try:
        with interrupts.as_interrupt(received):
            code = _checked(args)
        # A command that handles the interrupt itself (rekey saves its progress and says so) ended on it all the same.
        return EXIT_INTERRUPTED if received else code
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM): one line, no traceback
        print(interrupts.line(args.command, writes=_writes(args)), file=sys.stderr)
        interrupts.leave()
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout's reader stopped (`--json | head`): nothing more to say to it
        _detach_stdout()
        return EXIT_PIPE


def _detach_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not raise again


def _checked(args: argparse.Namespace) -> int:
    """The environment checked (this shell against a running playground, a stale one, the settings, the
    credentials, the endpoints), then the command; every failure one line with its fix and exit code."""
    import dataclasses
    import os

    import google.auth.exceptions

    from pullsecret import configured
    from pullsecret.handler import Adapter
    from pullsecret.operator import playground, staleness

    if _writes(args):
        refused = playground.refusal(os.environ)
        if refused is not None:
            print(refused, file=sys.stderr)
            return EXIT_CONFIG
    stale = staleness.hint(os.environ)
    if stale is not None:
        print(f"error: {stale}", file=sys.stderr)
        return EXIT_CONFIG
    # stdout is for the person (or the JSON); the function's log lines go to stderr, or nowhere.
    # The doctor's report is its output: the function's log lines would only repeat its failures.
    # The log lines (the cold start's warnings too) only on demand (-v): the summary is what a person reads first.
    log.configure(stream=sys.stderr, level=None if getattr(args, "verbose", False) else "OFF")
    try:
        settings = configured.load(_settings_env(args, os.environ))
        quiet = not getattr(args, "verbose", False)
        adapter = Adapter(dataclasses.replace(settings, log_level="OFF") if quiet else settings)
    except ConfigError as exc:
        print(f"configuration error: {exc}{playground.unsourced_hint(os.environ)}", file=sys.stderr)
        return EXIT_CONFIG
    warned = None if _writes(args) else playground.warning(os.environ)
    if warned is not None:
        print(warned, file=sys.stderr)
    try:
        return _reachable(adapter, args)
    except google.auth.exceptions.DefaultCredentialsError:
        print(f"no Google credentials: {_credentials_fix(os.environ)}", file=sys.stderr)
        return EXIT_CONFIG
    except TransientError as exc:
        if exc.reason == "CredentialsUnavailable" and exc.service == "metadata":  # Google's, not a minted token
            print(f"no usable Google credentials: {exc.message}; {_credentials_fix(os.environ)}", file=sys.stderr)
            return EXIT_CONFIG
        print(f"transient failure, try again: {exc.message}", file=sys.stderr)
        return EXIT_TRANSIENT
    except TerminalError as exc:
        print(f"failed: {exc.message}", file=sys.stderr)
        return EXIT_TERMINAL
    except ConfigError as exc:  # a setting checked again when the clients are built (a kubeconfig gone since)
        print(f"configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG


def _credentials_fix(env: Any) -> str:
    metadata = (env.get("GCE_METADATA_HOST") or "").strip()
    if metadata:
        return (
            f"the metadata server GCE_METADATA_HOST names ({metadata}) gave none: is the playground running? "
            "`make up`, then `source .playground/env`"
        )
    return (
        "run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS to a key file); "
        "on the playground, `source .playground/env`"
    )


def _reachable(adapter: Adapter, args: argparse.Namespace) -> int:
    """The command, once the endpoints it calls accept a connection and Google gave this shell a token (a bounded
    wait, naming what it tried): a missing or refused credential, an endpoint that answers nothing, said at once."""
    from pullsecret.operator import playground, reach

    blocked = reach.unreachable(adapter.settings, playground_running=playground.running(env=os.environ) is not None)
    if blocked is not None:
        print(blocked, file=sys.stderr)
        return EXIT_TRANSIENT
    adapter.identity.token()  # raises DefaultCredentialsError, or TransientError(CredentialsUnavailable)
    return _command(adapter, args)


def _settings_env(args: argparse.Namespace, env: Mapping[str, str]) -> Mapping[str, str]:
    """What the settings are read from: the operator's own read credentials (VIEW_VARIABLES) only for the views
    (inspect, fleet without --fix), which read with them; the commands that write or prove the runtime identity
    (reconcile, rekey, doctor, fleet --fix) never use them."""
    if args.command == "inspect" or (args.command == "fleet" and not args.fix):
        return env
    return {name: value for name, value in env.items() if name not in VIEW_VARIABLES}


def _writes(args: argparse.Namespace) -> bool:
    """Whether the command writes (a reconcile or rekey that is no dry run, fleet --fix)."""
    return (args.command in ("reconcile", "rekey") and not args.dry_run) or (args.command == "fleet" and args.fix)


def _command(adapter: Adapter, args: argparse.Namespace) -> int:
    """Run the parsed command (after the deployed function's configuration agreed, for one that writes)."""
    if args.command == "doctor":
        return doctor.main(adapter, args)
    refused = _compare_deployed(args) if _writes(args) else None
    if refused is not None:
        print(refused, file=sys.stderr)
        return EXIT_CONFIG
    if args.command == "fleet":
        from pullsecret.operator import fleet

        limits = {"limits": args.service_limits} if args.service_limits is not None else {}
        return fleet.main(adapter, fix=args.fix, page_size=args.page_size, **limits)
    if args.command == "rekey":
        from pullsecret.operator import rekey

        request = rekey.Request.from_arguments(args)
        return rekey.run(adapter, request, confirm=rekey.ask if sys.stdin.isatty() else None)
    if args.command == "reconcile" and args.dry_run:
        return _dry_run(adapter, args.cluster_id)
    if args.command == "reconcile":
        return _reconcile(adapter, args.cluster_id, as_json=args.json)
    from pullsecret.operator import inspect

    return inspect.run(adapter, args.cluster_id)


def _compare_deployed(args: argparse.Namespace) -> str | None:
    """Why this write must not happen (the deployed function decides otherwise), or None."""
    import os

    from pullsecret.operator import deployed

    function = args.deployed or os.environ.get(deployed.ENV_NAME)
    if not function:
        return None
    return deployed.refusal(os.environ, function)


def _dry_run(app: Application, cluster_id: str) -> int:
    from pullsecret.operator import dryrun

    plan = dryrun.plan(app, cluster_id)
    for line in plan.lines:
        print(line)
    print("dry run: nothing was written (no Secret Manager version, no Kubernetes or IAM change, no status)")
    return EXIT_NOTHING_DONE if plan.result in ("gone", "skipped") else EXIT_OK


def preconditions_cluster_id_ok(cluster_id: str) -> bool:
    from pullsecret.model.events import _CLUSTER_ID

    return bool(_CLUSTER_ID.match(cluster_id))


def _reconcile(adapter: Adapter, cluster_id: str, *, as_json: bool = False) -> int:
    from pullsecret.reconcile.outcome import Outcome

    try:
        outcome = adapter.reconcile_cluster(cluster_id)
    except TransientError as exc:
        outcome = Outcome("transient", reason=exc.reason, service=exc.service, detail=exc.message)
    code = _RESULT_EXIT.get(outcome.result, EXIT_TERMINAL)
    if as_json:
        print(json.dumps(outcome_json(cluster_id, outcome, code), sort_keys=True))
    else:
        print(summary(cluster_id, outcome))
    return code


def outcome_json(cluster_id: str, outcome: Outcome, code: int) -> dict[str, Any]:
    """The outcome as `--json` prints it: result, exit code, why, and the conditions reported (if any)."""
    report = outcome.report
    return {
        "cluster_id": cluster_id,
        "result": outcome.result,
        "exit_code": code,
        "reason": outcome.reason,
        "service": outcome.service,
        "detail": outcome.detail,
        "generation": report.generation if report is not None else None,
        "conditions": [c.to_json() for c in report.conditions] if report is not None else [],
        "status_code": outcome.report_code,
    }


def summary(cluster_id: str, outcome: Outcome) -> str:
    """A few lines for a person: what happened, what was reported, and what to do."""
    head = f"cluster {cluster_id}: {outcome.result}"
    if outcome.reason:
        head += f" ({outcome.reason}{' from ' + outcome.service if outcome.service else ''})"
    lines = [head]
    report = outcome.report
    if report is not None:
        lines.append(
            "reported "
            + ", ".join(f"{c.type}={c.status} ({c.reason})" for c in report.conditions)
            + f"; the HyperFleet API answered {outcome.report_code}"
        )
        available = next((c for c in report.conditions if c.type == "Available"), None)
        if available is not None and not report.available:
            lines.append(available.message)
    elif outcome.detail:
        lines.append(outcome.detail)
    if outcome.result == "gone":
        lines.append("the HyperFleet API does not know this cluster; nothing was done")
    elif outcome.result == "transient":
        lines.append("nothing was reported; try again (exit 3)")
    return "\n".join(lines)
