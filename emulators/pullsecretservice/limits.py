"""The Pull Secret Service emulator's rate limits: the DDR's token buckets per authenticated ServiceAccount (§3.5).

DDR §3.5 "Rate Limiting" (commit 53cd706): "Strategy: Token bucket algorithm per ServiceAccount", three limits:

    Per ServiceAccount   100 requests   1 minute   all endpoints
    Burst                 20 requests   1 second   all endpoints
    Rotation Endpoint     10 requests   1 hour     `/rotations` only

Each limit is a bucket per identity (the caller access.py authenticated): it holds at most its quota, fills at
quota/window, and a request takes one token from every bucket that applies to it (the minute's and the burst's for
every API call; the hour's too for a path under `/rotations`: POST and GET of the collection and GET of one
rotation, the DDR scoping it by path). A request that finds any of them empty takes nothing from any and is
answered 429 `HYPERFLEET-LMT-001` with the headers and body §3.5 shows: `X-RateLimit-Limit`, `-Remaining` (0),
`-Reset` (unix seconds when the bucket is full again), `Retry-After` (whole seconds until the bucket has a token:
the request then succeeds) and `limit`, `window`, `retry_after_seconds` in the problem body. An admitted request's
answer carries the `X-RateLimit-*` headers of its tightest bucket (§3.5 "Rate Limit Headers").

Requests refused before authentication (401) spend nothing: the limits are per authenticated ServiceAccount.
The values are settable (`RateLimits`, the emulator's `limits=` or the admin `POST /limits`; tests and the bench
scale them and say so); None turns limiting off.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One limit of §3.5: `quota` requests per `window_s`, named as its 429 names it (`window`)."""

    name: str
    quota: float
    window_s: float
    window: str  # the 429 body's `window` (§3.5: "1m")
    unit: str  # the 429 detail's words ("Rate limit exceeded: 100 requests per minute")


@dataclass(frozen=True)
class RateLimits:
    """§3.5's three limits; the defaults are the DDR's."""

    per_minute: float = 100.0  # §3.5 "Per ServiceAccount": 100 requests / 1 minute, all endpoints
    burst_per_second: float = 20.0  # §3.5 "Burst": 20 requests / 1 second, all endpoints
    rotations_per_hour: float = 10.0  # §3.5 "Rotation Endpoint": 10 requests / 1 hour, `/rotations` only

    def rules(self, rotations: bool) -> tuple[Rule, ...]:
        found: tuple[Rule, ...] = (
            Rule("per_minute", self.per_minute, 60.0, "1m", "per minute"),
            Rule("burst", self.burst_per_second, 1.0, "1s", "per second"),
        )
        if rotations:
            found += (Rule("rotations", self.rotations_per_hour, 3600.0, "1h", "per hour on /rotations"),)
        return found

    def describe(self) -> str:
        return (
            f"{self.per_minute:g}/min, burst {self.burst_per_second:g}/s, /rotations {self.rotations_per_hour:g}/h "
            "per ServiceAccount"
        )


DDR_LIMITS = RateLimits()


@dataclass(frozen=True)
class Verdict:
    """What the limiter decided for one request: admitted or not, and the headers and 429 fields that say so."""

    admitted: bool
    rule: Rule
    remaining: int
    reset_at: int  # unix seconds: the bucket full again
    retry_after_s: int = 0

    def headers(self) -> dict[str, str]:
        found = {
            "X-RateLimit-Limit": f"{self.rule.quota:g}",
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_at),
        }
        if not self.admitted:
            found["Retry-After"] = str(self.retry_after_s)
        return found


class _Bucket:
    def __init__(self, rule: Rule, now: float) -> None:
        self.tokens = rule.quota
        self.at = now

    def fill(self, rule: Rule, now: float) -> None:
        self.tokens = min(rule.quota, self.tokens + (now - self.at) * rule.quota / rule.window_s)
        self.at = now


class Limiter:
    """Token buckets per (identity, rule); thread-safe. `clock` is monotonic seconds, `wall` unix seconds."""

    def __init__(
        self,
        limits: RateLimits | None = DDR_LIMITS,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._lock = threading.Lock()
        self._limits = limits
        self._clock, self._wall = clock, wall
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self.refused: dict[str, int] = {}  # rule name -> 429s answered (the bench reports them)

    @property
    def limits(self) -> RateLimits | None:
        with self._lock:
            return self._limits

    def configure(self, limits: RateLimits | None) -> None:
        """New limits (None: off); every bucket starts full, the counts at zero."""
        with self._lock:
            self._limits = limits
            self._buckets.clear()
            self.refused = {}

    def reset(self) -> None:
        self.configure(self.limits)

    def admit(self, identity: str, *, rotations: bool) -> Verdict | None:
        """Take a token from each bucket that applies, or none when one is empty; None when limiting is off."""
        with self._lock:
            if self._limits is None:
                return None
            now = self._clock()
            rules = self._limits.rules(rotations)
            buckets = []
            for rule in rules:
                bucket = self._buckets.setdefault((identity, rule.name), _Bucket(rule, now))
                bucket.fill(rule, now)
                buckets.append((rule, bucket))
            empty = [(rule, bucket) for rule, bucket in buckets if bucket.tokens < 1.0]
            if empty:
                waits = [((1.0 - bucket.tokens) * rule.window_s / rule.quota, rule, bucket) for rule, bucket in empty]
                wait_s, rule, bucket = max(waits, key=lambda w: w[0])
                self.refused[rule.name] = self.refused.get(rule.name, 0) + 1
                return Verdict(False, rule, 0, self._full_at(rule, bucket), max(1, math.ceil(wait_s)))
            for _, bucket in buckets:
                bucket.tokens -= 1.0
            rule, bucket = min(buckets, key=lambda rb: rb[1].tokens / rb[0].quota)
            return Verdict(True, rule, int(bucket.tokens), self._full_at(rule, bucket))

    def _full_at(self, rule: Rule, bucket: _Bucket) -> int:
        return math.ceil(self._wall() + (rule.quota - bucket.tokens) * rule.window_s / rule.quota)
