"""The protocol suite's fixture: the store's single-flight waits as scheduling points of the explored run."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from pullsecret.secretstore import versions
from tests.fakes.scheduler import Run, SchedEvent


@pytest.fixture
def scheduled_flights(monkeypatch: pytest.MonkeyPatch) -> Callable[[Run], None]:
    """The store's single-flight waits become scheduling points of the current run (no real blocking)."""
    current: list[Run] = []

    class Flight(versions.Flight):
        def __init__(self) -> None:
            super().__init__()
            self.done = SchedEvent(current[-1])

    monkeypatch.setattr(versions, "Flight", Flight)
    monkeypatch.setattr(random, "uniform", lambda a, b: 0.0)  # backoff sleeps: zero, so runs stay deterministic
    return current.append
