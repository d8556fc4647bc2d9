"""The Pull Secret Service client's waits between its tries, each inside the event's deadline (budget.py's numbers)."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping

from pullsecret.hyperfleet import budget
from pullsecret.retrying import Deadline


def backoff(attempt: int) -> float:
    """urllib3's backoff as budget.py states it: none before the second try, then factor x 2^(n-1) plus jitter."""
    if attempt < 2:
        return 0.0
    return float(budget.BACKOFF_FACTOR_S * 2 ** (attempt - 1)) + random.uniform(0, budget.BACKOFF_JITTER_S)


def wait(headers: Mapping[str, str], attempt: int) -> float:
    """Before the next try after a 429/5xx: its Retry-After (seconds) capped at RETRY_AFTER_CAP_S, else the backoff."""
    value = (headers.get("Retry-After") or "").strip()
    if value.isdigit():
        return min(float(value), budget.RETRY_AFTER_CAP_S)
    return min(backoff(attempt), budget.RETRY_AFTER_CAP_S) if not value else budget.RETRY_AFTER_CAP_S


def slept(seconds: float, deadline: Deadline) -> bool:
    """Sleep before the next try when the deadline leaves room for it; False: no further try."""
    if seconds >= deadline.remaining():
        return False
    time.sleep(seconds)
    return True
