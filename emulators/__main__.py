"""`python -m emulators`: the emulator stack alone (`up`), the local playground (`playground`, = `make up`;
`down`, = `make down`), the end-to-end demo (`demo`, = `make demo`), one reconcile through the Pub/Sub path
(`trigger`, = `make trigger`), a rotation at the pull secret's source (`rotate`, = `make rotate`), the function's
log made readable (`logs`, = `make logs`), and a Sentinel event as JSON (`event`). Exit codes: README.md, "Exit codes".

Everything but the standard library is imported once a command runs, inside `main`'s handler: loading the
emulators and client libraries takes seconds on a busy machine, and Ctrl-C during it must end in one line, not
in a traceback of the import. SIGINT raises KeyboardInterrupt from `main`'s first line on, even in a background job
(`make up &`), which a shell starts with SIGINT ignored: an early Ctrl-C (or `kill -INT`) is not lost. `playground`
prints its first line before those imports. Each command that starts processes stops them itself when interrupted
(`Stack.start`, `playground.up`, `demo.main`), so an interrupt that reaches `main` leaves nothing running.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

STATE_DIR = Path(".playground")  # = emulators.playground.STATE_DIR (the default --state-dir)
DEMO_CLUSTER = "cls-demo01"  # = emulators.playground.DEMO_CLUSTER


def _up(args: argparse.Namespace) -> int:
    from emulators.pubsub import PubSubEmulator
    from emulators.stack import Stack

    want_pubsub = not args.no_pubsub
    if want_pubsub:
        available, reason = PubSubEmulator.available()
        if not available:
            print(f"Pub/Sub emulator not started: {reason}", file=sys.stderr)
            want_pubsub = False
    stack = Stack(
        pubsub=want_pubsub,
        status_method=args.status_method,
        token_lifetime_s=args.token_lifetime,
        validate_contract=not args.no_validate,
        terraform_iam=not args.open_iam,
    )
    stack.start()
    print(json.dumps(stack.endpoints()), flush=True)
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        stopped.wait()
    finally:
        stack.stop()
    return 0


SOURCES = ("platform", "service")


def _source(flag: str | None) -> str | None:
    """The pull secret's source, compared as KUBERNETES_DELIVERY is (trimmed, case-folded): --source, else the
    SOURCE variable (`make up SOURCE=service` hands it over so), else platform. A bad value is one line naming where
    it came from; None then."""
    named, raw = ("--source", flag) if flag is not None else ("SOURCE", os.environ.get("SOURCE") or "platform")
    value = raw.strip().lower() or "platform"
    if value in SOURCES:
        return value
    print(f"configuration error: {named} must be platform or service, got {raw[:40]!r}; nothing was started")
    return None


def _logs(args: argparse.Namespace) -> int:
    from emulators import logview
    from emulators.playground_lock import holder

    path = args.file or args.state_dir / "function.log"
    if args.file is None and path.exists() and holder(args.state_dir) is None:
        print(
            f"# The playground is down (no `make up` runs from {args.state_dir}): this is the log of its last run.",
            file=sys.stderr,
            flush=True,
        )
    return logview.show(path, cluster=args.cluster, raw=args.raw, follow=args.follow)


def main(argv: list[str] | None = None) -> int:
    try:
        # Before anything slow: a background job inherits SIGINT ignored, and Python then installs no handler.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _main(argv)
        sys.stdout.flush()  # here, where a closed pipe is handled, rather than at the interpreter's exit
        return code
    except KeyboardInterrupt:
        print("Interrupted; nothing is left running.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`make trigger | head`): the command did its work, only its output was cut short.
        # stdout goes to /dev/null so that the interpreter's final flush does not complain about the pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulators")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="the emulators alone; endpoints as one JSON line")
    up.add_argument("--no-pubsub", action="store_true", help="do not start the Cloud SDK Pub/Sub emulator")
    up.add_argument("--status-method", choices=("PUT", "POST"), default="PUT")
    up.add_argument("--token-lifetime", type=int, default=3600, help="access token lifetime in seconds")
    up.add_argument(
        "--no-validate", action="store_true", help="do not validate HyperFleet traffic against the OpenAPI contract"
    )
    up.add_argument(
        "--open-iam",
        action="store_true",
        help="let the runtime identity call anything (default: exactly what terraform/ grants it)",
    )
    play = sub.add_parser(
        "playground", help="`make up`: emulators + the function + a ready cluster + a push subscription"
    )
    play.add_argument("--cluster", action="append", help=f"cluster to seed ready (default {DEMO_CLUSTER})")
    play.add_argument("--state-dir", type=Path, default=STATE_DIR, help="where env and logs go")
    play.add_argument("--no-pubsub", action="store_true", help="do not start the Cloud SDK Pub/Sub emulator")
    play.add_argument("--port", type=int, default=0, help="the function's port (default: a free one)")
    play.add_argument(
        "--source",
        metavar="{platform,service}",
        help="the pull secret's source: the platform secret, or the Pull Secret Service emulator (default: $SOURCE, "
        "else platform)",
    )
    stop = sub.add_parser("down", help="`make down`: stop the playground running from --state-dir")
    stop.add_argument("--state-dir", type=Path, default=STATE_DIR)
    demo_parser = sub.add_parser(
        "demo", help="`make demo`: the function end to end on the emulators, then the same event again"
    )
    demo_parser.add_argument(
        "--source",
        metavar="{platform,service}",
        help="where the pull secret comes from: the platform secret, or the Pull Secret Service (default: $SOURCE, "
        "else platform)",
    )
    logs = sub.add_parser("logs", help="`make logs`: the function's log, one readable line per record")
    logs.add_argument("--state-dir", type=Path, default=STATE_DIR)
    logs.add_argument("--file", type=Path, help="a log file of JSON lines (default: <state-dir>/function.log)")
    logs.add_argument("--cluster", help="only this cluster's lines")
    logs.add_argument("--follow", "-f", action="store_true", help="keep reading as the function writes")
    logs.add_argument("--raw", action="store_true", help="the JSON lines as they are")
    trig = sub.add_parser("trigger", help="`make trigger`: one reconcile through the path Pub/Sub uses")
    trig.add_argument("cluster_id")
    trig.add_argument("--via", choices=("push", "pubsub"), default="push")
    trig.add_argument("--state-dir", type=Path, default=STATE_DIR)
    rot = sub.add_parser("rotate", help="`make rotate`: a rotation at the running playground's pull secret source")
    rot.add_argument("cluster_id", nargs="?", default=DEMO_CLUSTER)
    rot.add_argument("--complete", action="store_true", help="end a Pull Secret Service rotation (old set deleted)")
    rot.add_argument("--state-dir", type=Path, default=STATE_DIR)
    event = sub.add_parser("event", help="print a Sentinel reconcile event as one JSON line")
    event.add_argument("cluster_id")
    event.add_argument("--generation", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command in ("playground", "demo"):
        source = _source(args.source)
        if source is None:
            return 2
        args.source = source

    if args.command == "up":
        return _up(args)
    if args.command == "demo":
        from emulators import demo

        return demo.main(args.source)
    if args.command == "logs":
        return _logs(args)
    if args.command == "rotate":
        from emulators import rotate

        return rotate.rotate(args.cluster_id, state_dir=args.state_dir, complete=args.complete)
    if args.command == "playground":
        clusters = ", ".join(args.cluster or [DEMO_CLUSTER])
        print(f"# Starting the playground ({args.state_dir}): the emulators, the function, {clusters} ...", flush=True)
    from emulators import playground, trigger

    if args.command == "playground":
        return playground.up(
            state_dir=args.state_dir,
            clusters=args.cluster or [DEMO_CLUSTER],
            pubsub=not args.no_pubsub,
            port=args.port,
            source=args.source,
        )
    if args.command == "down":
        return playground.down(args.state_dir)
    if args.command == "trigger":
        return trigger.trigger(args.cluster_id, via=args.via, env=os.environ, state_dir=args.state_dir)
    print(playground.event_json(args.cluster_id, args.generation))
    return 0


if __name__ == "__main__":
    sys.exit(main())
