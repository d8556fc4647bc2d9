"""`python -m emulators up`: start the whole stack, print one JSON line of endpoints, serve until interrupted."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from emulators.pubsub import PubSubEmulator
from emulators.stack import Stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulators")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start every emulator and serve until interrupted")
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
    args = parser.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())
