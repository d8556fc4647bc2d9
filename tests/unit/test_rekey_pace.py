"""Slot pacing (pullsecret.operator.slots.next_slot): the rate holds when slots are taken late."""

from __future__ import annotations

import time

from pullsecret.operator.slots import next_slot as _pace


def test_a_slot_taken_a_little_late_keeps_the_schedule() -> None:
    slept: list[float] = []
    missed = time.monotonic() - 0.05  # the slot passed 50 ms ago (a thread woken late)
    assert _pace(missed, 1.0, slept.append) == missed + 1.0  # the next slot is not pushed back by the lateness
    assert slept == []


def test_a_slot_taken_more_than_an_interval_late_restarts_the_schedule_without_a_burst() -> None:
    missed = time.monotonic() - 5.0  # five slots missed: they are not made up
    after = _pace(missed, 1.0, lambda s: None)
    assert after >= missed + 5.0  # the next may go at once (two back to back at most), not five
    assert _pace(after, 1.0, lambda s: None) >= after + 1.0 - 1e-9


def test_an_early_call_waits_for_its_slot() -> None:
    slept: list[float] = []
    slot = time.monotonic() + 0.5
    assert _pace(slot, 0.25, slept.append) == slot + 0.25
    assert len(slept) == 1 and 0 < slept[0] <= 0.5


def test_the_record_waits_for_a_write_slot_longer_than_an_event_would() -> None:
    """A save of the run's record shares the project's write pacer with the function's reconciles; with the
    bench's RETRY_DEADLINE of 8 s, a queue of 8.1 s stopped a 2,000-cluster run after 200 (exit 3). The command is
    no event: its record waits up to a minute, or RETRY_DEADLINE when that is longer."""
    from pullsecret.operator.rekey.run import record_deadline_s

    assert record_deadline_s(8.0) == 60.0
    assert record_deadline_s(60.0) == 60.0
    assert record_deadline_s(300.0) == 300.0
