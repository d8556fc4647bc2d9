"""`python -m emulators`: the emulator stack alone (`up`), the local playground (`playground`, = `make up`;
`down`, = `make down`), one reconcile through the Pub/Sub path (`trigger`, = `make trigger`), the function's
log made readable (`logs`, = `make logs`), and a Sentinel event as JSON (`event`)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from emulators.pubsub import PubSubEmulator
from emulators.stack import Stack


def _up(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    from emulators import logview, playground, trigger

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
    play.add_argument("--cluster", action="append", help=f"cluster to seed ready (default {playground.DEMO_CLUSTER})")
    play.add_argument("--state-dir", type=Path, default=playground.STATE_DIR, help="where env and logs go")
    play.add_argument("--no-pubsub", action="store_true", help="do not start the Cloud SDK Pub/Sub emulator")
    play.add_argument("--port", type=int, default=0, help="the function's port (default: a free one)")
    stop = sub.add_parser("down", help="`make down`: stop the playground running from --state-dir")
    stop.add_argument("--state-dir", type=Path, default=playground.STATE_DIR)
    logs = sub.add_parser("logs", help="`make logs`: the function's log, one readable line per record")
    logs.add_argument("--state-dir", type=Path, default=playground.STATE_DIR)
    logs.add_argument("--file", type=Path, help="a log file of JSON lines (default: <state-dir>/function.log)")
    logs.add_argument("--cluster", help="only this cluster's lines")
    logs.add_argument("--follow", "-f", action="store_true", help="keep reading as the function writes")
    logs.add_argument("--raw", action="store_true", help="the JSON lines as they are")
    trig = sub.add_parser("trigger", help="`make trigger`: one reconcile through the path Pub/Sub uses")
    trig.add_argument("cluster_id")
    trig.add_argument("--via", choices=("push", "pubsub"), default="push")
    trig.add_argument("--state-dir", type=Path, default=playground.STATE_DIR)
    event = sub.add_parser("event", help="print a Sentinel reconcile event as one JSON line")
    event.add_argument("cluster_id")
    event.add_argument("--generation", type=int, default=1)
    args = parser.parse_args(argv)

    if args.command == "up":
        return _up(args)
    if args.command == "playground":
        return playground.up(
            state_dir=args.state_dir,
            clusters=args.cluster or [playground.DEMO_CLUSTER],
            pubsub=not args.no_pubsub,
            port=args.port,
        )
    if args.command == "down":
        return playground.down(args.state_dir)
    if args.command == "logs":
        path = args.file or args.state_dir / "function.log"
        return logview.show(path, cluster=args.cluster, raw=args.raw, follow=args.follow)
    if args.command == "trigger":
        return trigger.trigger(args.cluster_id, via=args.via, env=os.environ, state_dir=args.state_dir)
    print(playground.event_json(args.cluster_id, args.generation))
    return 0


if __name__ == "__main__":
    sys.exit(main())
