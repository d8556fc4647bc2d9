"""The emulator suite's fixtures: the playgrounds a test starts, stopped after it whatever happened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.emulators.playground_process import Playground


@pytest.fixture
def playgrounds(tmp_path: Path) -> Iterator[list[Playground]]:
    started: list[Playground] = []
    yield started
    for playground in started:
        playground.kill()
