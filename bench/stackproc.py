"""`python -m bench.stackproc`: the emulator stack as `python -m emulators up --no-pubsub` starts it, except
that the HyperFleet emulator does not validate each request and answer against the OpenAPI contract.

That validation (openapi-core) costs the emulator process tens of CPU milliseconds per call, which
would make the emulator, not the function, the bottleneck of every throughput figure. The tests keep
it on; the benchmark measures the function.

And every HTTP emulator socket gets TCP_NODELAY, as real API servers (Go's net/http, GFE) set it: with
Python's default (Nagle on), a response written in two parts to a request whose body arrived in a
separate segment (urllib3 2 sends headers and body apart) waits for the client's delayed ACK, adding
~40 ms to every HyperFleet status report and Kubernetes write: an emulator artefact, not the function.
"""

from __future__ import annotations

import json
import signal
import socketserver
import sys
import threading

from emulators.stack import Stack


def main() -> int:
    socketserver.StreamRequestHandler.disable_nagle_algorithm = True
    stack = Stack(pubsub=False)
    stack.hyperfleet.validate = "--validate" in sys.argv
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
