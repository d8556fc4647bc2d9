"""In-process retries: exponential backoff with full jitter (google-api-core's Retry) inside a deadline.

One `Deadline` per event keeps the whole invocation well under the function timeout: every call's
retries stop when it runs out, and the event goes back to Pub/Sub for redelivery.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions as gexc
from google.api_core.retry import Retry

from pullsecret.errors import TransientError
from pullsecret.logs import log

T = TypeVar("T")

CALL_TIMEOUT_S = 20.0
MIN_CALL_TIMEOUT_S = 0.5


class Deadline:
    """A point in monotonic time after which no further attempt is started."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def call_timeout(self) -> float:
        """One call's own timeout: what remains, at most 20 s (leaving time for a retry), at least 0.5 s."""
        return max(min(self.remaining(), CALL_TIMEOUT_S), MIN_CALL_TIMEOUT_S)


def retry_policy(predicate: Callable[[BaseException], bool], deadline: Deadline) -> Retry:
    """Full-jitter exponential backoff (0.1 s doubling to 5 s) until the deadline."""
    return Retry(
        predicate=predicate,
        initial=0.1,
        maximum=5.0,
        multiplier=2.0,
        timeout=max(deadline.remaining(), 0.01),
        on_error=_attempt_failed,
    )


def _attempt_failed(exc: BaseException) -> None:
    """LOG_LEVEL=DEBUG shows each retried attempt's outcome (the step line shows only the last)."""
    code = getattr(exc, "grpc_status_code", None) or getattr(exc, "status", None) or getattr(exc, "code", None)
    log.debug(f"attempt failed ({type(exc).__name__} {code or ''}), retrying with backoff", operation="retry")


def call(
    fn: Callable[[], T],
    *,
    predicate: Callable[[BaseException], bool],
    deadline: Deadline,
    on_give_up: Callable[[BaseException], Exception],
) -> T:
    """Run `fn` with retries on `predicate`; a retryable failure past the deadline becomes `on_give_up(cause)`."""
    if deadline.expired():
        raise TransientError("the retry deadline of this invocation has passed", reason="DeadlineExceeded")
    try:
        return retry_policy(predicate, deadline)(fn)()
    except gexc.RetryError as exc:
        cause = exc.cause if exc.cause is not None else exc
        raise on_give_up(cause) from cause
