"""Secret Manager write pacing: one adaptive rate per project, shared by every request of the process.

Secret Manager refuses writes past its per-project quota (600/min) with RESOURCE_EXHAUSTED, and a refused
write is not applied, so it is always safe to send again. The pacer starts unpaced; the first refusal sets
a rate from what the project accepted in the last second, each later refusal cuts it (at most once per
CUT_EVERY_S, so one congested moment counts once) and each accepted write raises it a little, but only while
the pace binds (a writer waited for its slot within the last HORIZON_S): a rate nobody reaches is not evidence
that the quota allows it, and one raised far past the quota meanwhile would let a burst through unpaced when
demand returns (congestion window validation, RFC 7661, for the same reason); a minute without a refusal goes
back to unpaced. Only refusals by the quota (ErrorInfo RATE_LIMIT_EXCEEDED) count. Writers
wait for their slot before each attempt; a wait that would pass the event's deadline raises
TransientError, so a quota refusal is never a terminal failure: the event is redelivered.

The rate errs high on purpose: a refused write costs a round trip, an idle quota window costs the fleet time.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from pullsecret.errors import TransientError
from pullsecret.retrying import Deadline

FLOOR_PER_S = 0.2  # never slower than one write per 5 s (the real quota is 10/s)
DECREASE = 0.85
INCREASE_PER_WRITE = 0.1  # writes/s added per accepted write: about +10 % per second at any rate
CUT_EVERY_S = 0.5
HORIZON_S = 1.0
RESET_AFTER_S = 60.0  # a minute without a refusal: the quota window no longer binds, go back to unpaced


@dataclass
class _Project:
    rate: float | None = None  # writes/s; None: unpaced (no refusal seen yet)
    next_at: float = 0.0
    last_cut: float = float("-inf")
    accepted: deque[float] = field(default_factory=deque)  # accept times within HORIZON_S
    waited_at: float = float("-inf")  # when a writer last had to wait for its slot


class WritePacer:
    """AIMD spacing of writes per project (thread-safe); `acquire` before, `accepted`/`refused` after."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._lock = threading.Lock()
        self._projects: dict[str, _Project] = {}
        self._clock = clock
        self._sleep = sleep

    def _state(self, key: str) -> _Project:
        state = self._projects.get(key)
        if state is None:
            state = self._projects[key] = _Project()
        return state

    def acquire(self, key: str, deadline: Deadline) -> None:
        """Wait for this project's next write slot; raises TransientError when it lies past the deadline."""
        with self._lock:
            state = self._state(key)
            now = self._clock()
            if state.rate is not None and now - state.last_cut > RESET_AFTER_S:
                state.rate = None
            if state.rate is None:
                return
            slot = max(now, state.next_at)
            wait = slot - now
            if wait > 0:
                state.waited_at = now
            if wait >= deadline.remaining():
                raise TransientError(
                    f"Secret Manager write quota: the next write slot of project {key} is {wait:.1f} s away, "
                    "past this event's deadline; redelivery writes later",
                    reason="WriteQuotaExhausted",
                    service="secretmanager",
                )
            state.next_at = slot + 1.0 / state.rate
        if wait > 0:
            self._sleep(wait)

    def accepted(self, key: str) -> None:
        with self._lock:
            state = self._state(key)
            now = self._clock()
            state.accepted.append(now)
            while state.accepted and now - state.accepted[0] > HORIZON_S:
                state.accepted.popleft()
            if state.rate is not None and now - state.waited_at <= HORIZON_S:
                state.rate += INCREASE_PER_WRITE

    def refused(self, key: str) -> None:
        with self._lock:
            state = self._state(key)
            now = self._clock()
            if now - state.last_cut < CUT_EVERY_S:
                return
            state.last_cut = now
            if state.rate is None:
                observed = sum(1 for t in state.accepted if now - t <= HORIZON_S) / HORIZON_S
                state.rate = max(FLOOR_PER_S, observed * DECREASE)
            else:
                state.rate = max(FLOOR_PER_S, state.rate * DECREASE)
            state.next_at = max(state.next_at, now + 1.0 / state.rate)

    def rate(self, key: str) -> float | None:
        with self._lock:
            return self._state(key).rate


PACER = WritePacer()  # the process-wide instance: every SecretStore of the process shares it
