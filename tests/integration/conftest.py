"""The integration suite's fixtures: an Adapter built from the function's environment with changes, and the
process-wide logger put back after the operator CLI ran in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def restored_log() -> Iterator[None]:
    """cli.main points the process-wide logger at stderr and sets its level: put both back for the next tests."""
    from pullsecret.logs import log

    saved = (log._stream, log.level)
    yield
    log._stream, log.level = saved
