"""pullsecret.source.service.hold: after a 429, every call of the process keeps to its Retry-After."""

from __future__ import annotations

from pullsecret.retrying import Deadline
from pullsecret.source.service.hold import Hold


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_no_429_no_wait() -> None:
    clock = Clock()
    assert Hold(clock=lambda: clock.now, sleep=clock.sleep).wait(Deadline(10)) is None
    assert clock.slept == []


def test_a_hold_the_deadline_outlasts_is_slept_out() -> None:
    clock = Clock()
    hold = Hold(clock=lambda: clock.now, sleep=clock.sleep)
    hold.close_for(2.0)
    assert hold.wait(Deadline(10)) is None
    assert clock.slept == [2.0]
    assert hold.wait(Deadline(10)) is None and clock.slept == [2.0]  # over: the next call goes at once


def test_a_hold_longer_than_the_deadline_refuses_unsent_with_the_wait_left() -> None:
    clock = Clock()
    hold = Hold(clock=lambda: clock.now, sleep=clock.sleep)
    hold.close_for(60.0)
    clock.now += 15.0
    assert hold.wait(Deadline(10)) == 45.0
    assert clock.slept == []


def test_a_shorter_429_never_shortens_a_longer_hold() -> None:
    clock = Clock()
    hold = Hold(clock=lambda: clock.now, sleep=clock.sleep)
    hold.close_for(60.0)
    hold.close_for(1.0)
    assert hold.wait(Deadline(10)) == 60.0
