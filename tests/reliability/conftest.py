"""Fixtures of the reliability suites and the report table printed at the end of the session.

`RELIABILITY_FULL=1` (set by `make reliability`) runs the large campaigns; without it the suites run
their fast subset (the whole corpus, small fault campaigns) as part of `make test`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.reliability import harness

_ran = False


@pytest.fixture
def adapter_factory(make_adapter: Any) -> Any:
    """Build adapters from the function environment, with overrides (e.g. a short RETRY_DEADLINE)."""
    return lambda **overrides: make_adapter(overrides)


@pytest.fixture(autouse=True)
def scans_for_own_tokens(request: pytest.FixtureRequest) -> Any:
    """In a test with the emulator stack, every leak scan also looks for the adapter's own tokens (harness.scan)."""
    if "world" not in request.fixturenames:
        yield
        return
    world = request.getfixturevalue("world")
    harness.watch_token_files([world.token_file, world.service_token_file])
    yield
    harness.watch_token_files([])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    global _ran  # noqa: PLW0603 - whether this session ran any reliability test
    _ran = _ran or any("tests/reliability/" in item.nodeid for item in items)


def report_rows() -> list[tuple[str, int]]:
    return list(harness.figures().items())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _ran:
        return
    figures = harness.figures()
    target = os.environ.get("RELIABILITY_REPORT")
    if target:
        Path(target).write_text(
            json.dumps(
                {
                    "full": harness.FULL,
                    "figures": figures,
                    "texts_scanned_for_leaks": harness.texts_scanned(),
                    "leaks": harness.leak_details(),
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    if any(figures[name] for name in harness.MUST_BE_ZERO):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _ran:
        return
    figures = harness.figures()
    mode = "full" if harness.FULL else "fast subset"
    terminalreporter.section(f"reliability report ({mode})")
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        flag = ""
        if name in harness.MUST_BE_ZERO:
            flag = "  FAIL (must be 0)" if value else "  ok (must be 0)"
        terminalreporter.write_line(f"{name:<{width}}  {value:>8}{flag}")
    terminalreporter.write_line(f"{'texts scanned for leaks':<{width}}  {harness.texts_scanned():>8}")
    for detail in harness.leak_details()[:20]:
        terminalreporter.write_line(f"leak: {detail}")
