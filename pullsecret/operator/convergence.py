"""Which credentials a cluster holds against its source's current ones (`fleet`'s CREDS, `rekey --watch`).

The configured source answers (its `Rekeying.held`, pullsecret.source.base): a source that holds each cluster's own
credentials compares them with what our last status says the cluster was delivered (`current`, `behind` with why,
`none`, `?`); one whose pull secret every cluster shares answers `-`.

Asking a whole fleet (`Asking`) keeps to the service's limits (the Pull Secret Service's DDR §3.5: per
ServiceAccount, 100 requests a minute on every endpoint): the command spends at most half of one identity's
per-minute budget, the other half left to whoever shares it (the function, a re-key). §3.5's bucket starts full, so
the first half-minute's worth goes at once and the rest is spaced evenly; a 429 is waited out (its Retry-After) and
asked again, at most MAX_RATE_LIMITED times for one cluster before the cluster is shown `?`. A source of shared
credentials calls nothing and is never paced.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pullsecret.operator import slots
from pullsecret.source.base import Held, RateLimits

if TYPE_CHECKING:
    from pullsecret.app import Application

__all__ = ["Asking", "Held", "held"]

SHARE = 0.5  # of one identity's per-minute budget (the rest is the function's and the re-keys')
MAX_RATE_LIMITED = 5  # 429s waited out for one cluster before it is shown `?`


def held(app: Application, cluster_id: str, ours: dict[str, Any]) -> Held:
    """The cluster's credentials against the source's current ones (at most one call); never raises for the source."""
    return app.source.rekeying().held(cluster_id, ours)


class Asking:
    """`held` for cluster after cluster at the pace the module's docstring states."""

    def __init__(
        self,
        ask: Callable[[str, dict[str, Any]], Held],
        *,
        calls_service: bool,
        limits: RateLimits,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ask = ask
        self._paced = calls_service
        self.per_minute = limits.per_minute * SHARE
        self._free = int(self.per_minute)  # the full bucket's share, spent at once
        self._interval = 60.0 / self.per_minute if self.per_minute > 0 else 0.0
        self._sleep = sleep
        self._clock = clock
        self._next_at: float | None = None
        self.asked = 0
        self.waited_429 = 0

    @classmethod
    def of(cls, app: Application, limits: RateLimits, sleep: Callable[[float], None] = time.sleep) -> Asking:
        return cls(
            lambda cluster_id, ours: held(app, cluster_id, ours),
            calls_service=app.source.own_credentials,
            limits=limits,
            sleep=sleep,
        )

    def pace(self) -> str | None:
        """The line that says the pace before a long listing, or None when nothing is asked per cluster."""
        if not self._paced:
            return None
        return (
            f"CREDS asks the Pull Secret Service once per cluster: the first {self._free} at once, then "
            f"{self.per_minute:g} a minute (half of the {self.per_minute / SHARE:g}/min --service-limits gives), "
            "each 429 waited out"
        )

    def held(self, cluster_id: str, ours: dict[str, Any]) -> Held:
        """The cluster's credentials, asked in turn; `?` with why after MAX_RATE_LIMITED 429s."""
        for _ in range(MAX_RATE_LIMITED + 1):
            self._wait_turn()
            answer = self._ask(cluster_id, ours)
            if answer.retry_after_s is None:
                return answer
            self.waited_429 += 1
            self._sleep(answer.retry_after_s)
        return Held("?", f"the service answered 429 {MAX_RATE_LIMITED + 1} times (its rate limit); ask again later")

    def _wait_turn(self) -> None:
        if not self._paced:
            return
        self.asked += 1
        if self.asked <= self._free:
            return
        start = self._clock() if self._next_at is None else self._next_at
        self._next_at = slots.next_slot(start, self._interval, self._sleep, self._clock)
