"""How the emulator commands treat SIGINT and SIGTERM around the moments a signal must not cut in two.

- `interruptible()`: SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so one `finally` cleans up after either.
- `signals_ignored()`: for cleanups a second Ctrl-C must not cut short.
- `signals_deferred()`: around starting a child process in a session of its own and recording it. A signal that
  lands between the fork and the assignment of the `Popen` would otherwise raise where no `except` knows the child
  yet, and the child (the Java Pub/Sub emulator, the function) would outlive its parent. The signal is recorded and
  raised again on leaving the block, where the caller's `except` stops what it recorded.

Each acts in the main thread only (Python runs signal handlers there); elsewhere it changes nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

_STOPPING = (signal.SIGINT, signal.SIGTERM)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _handling(handler: signal.Handlers | Callable[[int, FrameType | None], Any]) -> Iterator[None]:
    """SIGINT and SIGTERM handled by `handler` meanwhile; the previous handlers are back on leaving."""
    saved = {sig: signal.signal(sig, handler) for sig in _STOPPING}
    try:
        yield
    finally:
        for sig, previous in saved.items():
            signal.signal(sig, previous)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so one `finally` cleans up after either.

    SIGINT too is set explicitly: a shell starts a background job (`make up &`) with SIGINT ignored, and
    Python then installs no handler of its own.
    """
    with _handling(signal.default_int_handler):
        yield


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored meanwhile: for cleanups a second Ctrl-C must not cut short.

    Never around starting a process: an ignored signal stays ignored across exec, in the child.
    """
    if not _in_main_thread():
        yield
        return
    with _handling(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM recorded meanwhile and raised again, in order, when the block is left.

    A Python-level handler (not SIG_IGN, not a blocked mask) so that a child started inside gets the default
    disposition after exec: the child stays stoppable by the SIGTERM its owner sends it.
    """
    if not _in_main_thread():
        yield
        return
    received: list[int] = []
    try:
        with _handling(lambda signum, _frame: received.append(signum)):
            yield
    finally:
        for signum in received:
            signal.raise_signal(signum)
