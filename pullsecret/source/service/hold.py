"""One process's hold on the Pull Secret Service after a 429: what one event learns, every event here keeps to.

A 429 (DDR §3.5, `HYPERFLEET-LMT-001`) says the caller's ServiceAccount spent its budget and names how long to wait
(`Retry-After`). Every other event this process serves (a Cloud Run instance runs many at once) calls as the same
ServiceAccount and would be refused the same way, so the client holds every call until then: a call whose
deadline leaves room for the wait sleeps it out; one whose deadline ends first is refused unsent (RateLimited,
with the wait left: the event is redelivered by Pub/Sub after its backoff, and `rekey` waits it out). Processes do
not share a hold: each learns from its own first 429.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pullsecret.retrying import Deadline


class Hold:
    """Thread-safe: `close_for` after a 429, `wait` before every call."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._lock = threading.Lock()
        self._until = 0.0
        self._clock, self._sleep = clock, sleep

    def close_for(self, seconds: float) -> None:
        """No call before `seconds` from now (a later hold already set stays)."""
        with self._lock:
            self._until = max(self._until, self._clock() + seconds)

    def wait(self, deadline: Deadline) -> float | None:
        """Sleep out the hold when `deadline` leaves room for it (None: the call may go); else the seconds it
        still has to run, and the call is not to be sent."""
        with self._lock:
            left = self._until - self._clock()
        if left <= 0:
            return None
        if left >= deadline.remaining():
            return left
        self._sleep(left)
        return None
