"""How an operator CLI command ends on Ctrl-C or SIGTERM: one line, exit 130, nothing half-written, no traceback.

Every write the commands make is whole (a Secret Manager version, a Kubernetes apply, a removal, a saved rekey
page), so an interrupt between two of them leaves nothing half-done, and the same command run again finishes the
work. SIGINT raises KeyboardInterrupt even in a background job (a shell starts one with SIGINT ignored), and SIGTERM
does the same, so one `except` in the CLI's entry says the line. A command that handles the interrupt itself
(`rekey` saves its progress and says so) still ends with 130: the signal is recorded as it arrives.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

EXIT_INTERRUPTED = 130  # as a shell reports a process ended by SIGINT


def line(command: str, *, writes: bool) -> str:
    """The line an interrupted command ends with: what is left, and what to run."""
    if not writes:
        return f"interrupted: {command} stopped; it writes nothing (exit {EXIT_INTERRUPTED})"
    return (
        f"interrupted: {command} stopped between two steps; each write is whole (none is left half-done), "
        f"and running the same command again picks up from where it is (exit {EXIT_INTERRUPTED})"
    )


@contextlib.contextmanager
def as_interrupt(received: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt meanwhile, each recorded in `received` first (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        signal.default_int_handler(signum, frame)

    saved = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def leave() -> None:
    """After an interrupt the command's worker threads may still be in a call: the interpreter must not wait for
    them (nor print their tracebacks) on its way out. Returns when no other thread runs."""
    if threading.active_count() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
