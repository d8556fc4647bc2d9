"""The write pacer's decisions, on a fake clock."""

from __future__ import annotations

import pytest

from pullsecret.errors import TransientError
from pullsecret.retrying import Deadline
from pullsecret.secretstore import pacing
from pullsecret.secretstore.pacing import WritePacer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_unpaced_until_the_quota_refuses_then_paced_from_what_it_accepted() -> None:
    clock = Clock()
    pacer = WritePacer(clock=clock, sleep=clock.sleep)
    for _ in range(20):  # 20 writes accepted within a second, no waiting
        pacer.acquire("p", Deadline(60))
        pacer.accepted("p")
        clock.now += 0.04
    assert clock.slept == [] and pacer.rate("p") is None
    pacer.refused("p")
    assert pacer.rate("p") == pytest.approx(20 * pacing.DECREASE)
    pacer.acquire("p", Deadline(60))  # the next slot is one interval after the refusal
    assert clock.slept and clock.slept[-1] == pytest.approx(1 / (20 * pacing.DECREASE))


def test_refusals_cut_at_most_once_per_half_second_and_accepted_writes_raise_the_rate() -> None:
    clock = Clock()
    pacer = WritePacer(clock=clock, sleep=clock.sleep)
    for _ in range(10):
        pacer.accepted("p")
    pacer.refused("p")
    first = pacer.rate("p")
    assert first is not None
    for _ in range(5):  # one congested moment: counted once
        pacer.refused("p")
    assert pacer.rate("p") == first
    clock.now += pacing.CUT_EVERY_S
    pacer.refused("p")
    assert pacer.rate("p") == pytest.approx(max(pacing.FLOOR_PER_S, first * pacing.DECREASE))
    cut = pacer.rate("p")
    assert cut is not None
    pacer.acquire("p", Deadline(60))  # the pace binds: this writer waits for its slot
    assert clock.slept
    pacer.accepted("p")
    assert pacer.rate("p") == pytest.approx(cut + pacing.INCREASE_PER_WRITE)
    assert pacer.rate("other") is None  # per project


def test_the_rate_grows_only_while_the_pace_binds() -> None:
    # Writers slower than the pace (the fleet's own events are the limit) never wait: the rate must not climb
    # past what the quota was shown to allow, or the next burst goes out far too fast and is refused.
    clock = Clock()
    pacer = WritePacer(clock=clock, sleep=clock.sleep)
    for _ in range(20):
        pacer.accepted("p")
    pacer.refused("p")
    rate = pacer.rate("p")
    assert rate is not None
    for _ in range(300):  # one write every 2 intervals for a long while: nobody waits
        clock.now += 2 / rate
        pacer.acquire("p", Deadline(60))
        pacer.accepted("p")
    assert clock.slept == [] and pacer.rate("p") == pytest.approx(rate)
    for _ in range(10):  # then writers queue up: the pace binds again and the rate probes upwards
        pacer.acquire("p", Deadline(60))
        pacer.accepted("p")
    assert clock.slept and pacer.rate("p") == pytest.approx(rate + 10 * pacing.INCREASE_PER_WRITE)


def test_a_slot_past_the_deadline_is_transient_and_a_quiet_minute_unpaces() -> None:
    clock = Clock()
    pacer = WritePacer(clock=clock, sleep=clock.sleep)
    pacer.refused("p")  # nothing accepted yet: the floor
    assert pacer.rate("p") == pacing.FLOOR_PER_S
    with pytest.raises(TransientError) as raised:
        pacer.acquire("p", Deadline(0.5))
    assert raised.value.reason == "WriteQuotaExhausted"
    clock.now += pacing.RESET_AFTER_S + 1
    pacer.acquire("p", Deadline(0.5))
    assert pacer.rate("p") is None
