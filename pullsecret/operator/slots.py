"""One call per interval, the schedule kept through late wake-ups: `rekey`'s publishes and CREDS' reads."""

from __future__ import annotations

import time
from collections.abc import Callable


def next_slot(
    next_at: float,
    interval: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Wait for the slot at `next_at`; the slot after it. A slot taken late by less than an interval (a thread woken
    late on a busy machine) keeps the schedule, so the next comes sooner and the rate holds; later than that, the
    schedule restarts from now: at most two calls ever go out back to back."""
    delay = next_at - clock()
    if delay > 0:
        sleep(delay)
    return max(next_at + interval, clock())
