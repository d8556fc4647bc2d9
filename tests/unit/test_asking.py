"""convergence.Asking: the pace at which `fleet` and `rekey --watch` ask a source for every cluster's credentials."""

from __future__ import annotations

import itertools
from typing import Any

from pullsecret.operator.convergence import MAX_RATE_LIMITED, Asking
from pullsecret.source.base import Held, RateLimits


class Clock:
    """Time that moves only when the code under test sleeps; each sleep recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def asking(answers: list[Held] | None = None, *, calls_service: bool = True, per_minute: float = 100.0) -> Any:
    clock = Clock()
    asked_at: list[float] = []

    def ask(cluster_id: str, ours: dict[str, Any]) -> Held:
        asked_at.append(clock.now)
        return answers.pop(0) if answers else Held("current")

    built = Asking(
        ask,
        calls_service=calls_service,
        limits=RateLimits(per_minute=per_minute),
        sleep=clock.sleep,
        clock=lambda: clock.now,
    )
    return built, clock, asked_at


def test_half_the_budget_goes_at_once_then_the_reads_are_spaced_to_half_of_it() -> None:
    built, _, asked_at = asking(per_minute=100.0)
    for n in range(80):
        assert built.held(f"cls-{n}", {}).state == "current"
    assert asked_at[:50] == [0.0] * 50  # §3.5's bucket starts full: its half is spent at once
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(asked_at[50:])]
    assert gaps == [1.2] * 29  # then 50 a minute
    assert built.pace() is not None and "the first 50 at once, then 50 a minute" in built.pace()


def test_a_429_is_waited_out_and_asked_again() -> None:
    limited = Held("?", "429", retry_after_s=7.0)
    built, clock, asked_at = asking([limited, limited])
    assert built.held("cls-a", {}).state == "current"
    assert asked_at == [0.0, 7.0, 14.0] and clock.slept == [7.0, 7.0] and built.waited_429 == 2


def test_a_cluster_limited_every_time_is_shown_unknown_with_why() -> None:
    limited = Held("?", "429", retry_after_s=1.0)
    built, _, asked_at = asking([limited] * (MAX_RATE_LIMITED + 1))
    shown = built.held("cls-a", {})
    assert shown.state == "?" and "429" in shown.why and shown.retry_after_s is None
    assert len(asked_at) == MAX_RATE_LIMITED + 1


def test_a_source_of_shared_credentials_is_never_paced() -> None:
    built, clock, _ = asking(calls_service=False, per_minute=2.0)
    for n in range(10):
        built.held(f"cls-{n}", {})
    assert clock.slept == [] and built.pace() is None
