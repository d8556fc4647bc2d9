"""deadline_io's rules without a socket: where a deadline holds, which one holds when two nest, and what a connect
and the HyperFleet client's retries get of it (the sockets: tests/reliability/test_hostile_slow_servers.py)."""

from __future__ import annotations

import time

import pytest

from pullsecret.hyperfleet import budget
from pullsecret.outbound import deadline_io
from pullsecret.retrying import Deadline


def test_outside_any_deadline_a_connect_keeps_its_own_timeout() -> None:
    assert deadline_io.remaining() is None
    assert deadline_io.connect_timeout(3.05) == 3.05


def test_the_earlier_of_two_nested_deadlines_holds_and_the_outer_one_returns() -> None:
    with deadline_io.within(Deadline(1.0)):
        with deadline_io.within(Deadline(30.0)):
            assert (deadline_io.remaining() or 0) <= 1.0
        with deadline_io.within(Deadline(0.2)):
            assert (deadline_io.remaining() or 0) <= 0.2
        with deadline_io.within(None):
            assert 0.2 < (deadline_io.remaining() or 0) <= 1.0
    assert deadline_io.remaining() is None


def test_a_connect_is_cut_to_what_remains_and_refused_once_it_has_passed() -> None:
    with deadline_io.within(Deadline(0.5)):
        assert deadline_io.connect_timeout(3.05) <= 0.5
        assert deadline_io.connect_timeout(None) <= 0.5  # a blocking socket gets the deadline too
    spent = Deadline(0.0)
    time.sleep(0.001)
    with deadline_io.within(spent), pytest.raises(TimeoutError):
        deadline_io.connect_timeout(3.05)


def test_the_hyperfleet_retries_stop_and_wait_no_longer_than_the_deadline() -> None:
    retry = budget.BoundedRetry(total=2, backoff_factor=10.0, backoff_max=30.0)
    retry = retry.increment(method="GET", url="/", error=ConnectionError()).increment(
        method="GET", url="/", error=ConnectionError()
    )
    assert retry.get_backoff_time() > 1.0 and not retry.is_exhausted()
    with deadline_io.within(Deadline(0.3)):
        assert retry.get_backoff_time() <= 0.3
    with deadline_io.within(Deadline(0.0)):
        assert retry.is_exhausted()
