"""The HyperFleet API's retry budget: tries, timeouts and waits per call, so one event stays inside its deadline.

docs/design.md ("Retry budget") shows the arithmetic; tests/unit/test_retry_budget.py holds these numbers to it.
"""

from __future__ import annotations

import urllib3
from urllib3.util.retry import Retry

from pullsecret.outbound import deadline_io

ATTEMPTS = 3  # tries per call: the first and two retries
CONNECT_TIMEOUT_S = 3.05
MAX_TRY_TIMEOUT_S = 6.0  # HYPERFLEET_TIMEOUT's maximum: the read timeout of one try
RETRY_AFTER_CAP_S = 1.0  # a longer Retry-After waits for Pub/Sub's redelivery instead
BACKOFF_FACTOR_S = 0.2
BACKOFF_JITTER_S = 0.2


def max_sleep_s() -> float:
    """The longest wait between two tries: urllib3's backoff for the last retry (factor x 2^(n-1), none before the
    second) plus its jitter, or a Retry-After up to its cap."""
    backoff = BACKOFF_FACTOR_S * 2 ** (ATTEMPTS - 2) + BACKOFF_JITTER_S if ATTEMPTS > 2 else 0.0
    return max(backoff, RETRY_AFTER_CAP_S)


def call_budget_s(read_timeout_s: float = MAX_TRY_TIMEOUT_S) -> float:
    """The longest one API call can take, its retries included."""
    return ATTEMPTS * (CONNECT_TIMEOUT_S + read_timeout_s) + (ATTEMPTS - 1) * max_sleep_s()


class BoundedRetry(Retry):
    """urllib3's Retry with a server's Retry-After honoured up to RETRY_AFTER_CAP_S, and inside the call's deadline
    (deadline_io): no retry once it has passed, no wait longer than what remains of it."""

    def get_retry_after(self, response: urllib3.BaseHTTPResponse) -> float | None:
        wanted = super().get_retry_after(response)
        return None if wanted is None else _within_deadline(min(wanted, RETRY_AFTER_CAP_S))

    def get_backoff_time(self) -> float:
        return _within_deadline(super().get_backoff_time())

    def is_exhausted(self) -> bool:
        left = deadline_io.remaining()
        return super().is_exhausted() or (left is not None and left <= 0)


def _within_deadline(wait_s: float) -> float:
    left = deadline_io.remaining()
    return wait_s if left is None else min(wait_s, left)
