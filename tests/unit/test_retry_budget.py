"""The HyperFleet client's retry budget holds to docs/design.md "Retry budget", and a call against a server that
never answers ends inside it (measured)."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest

from pullsecret.configured import load
from pullsecret.errors import TransientError
from pullsecret.hyperfleet import budget as client
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.retrying import CALL_TIMEOUT_S

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
ADR_0017_EVENT_S = 120.0
RETRY_DEADLINE_S = 60.0
ENVOY_ATTEMPTS = 3  # hyperfleet-infra PR #84 (open): 3 attempts, 15 s per try
ENVOY_PER_TRY_S = 15.0


def _section() -> str:
    text = DESIGN.read_text(encoding="utf-8")
    return text.split("### Retry budget", 1)[1].split("\n## ", 1)[0]


def test_the_design_doc_shows_the_codes_numbers() -> None:
    section = _section()
    call = client.call_budget_s()
    event = max(RETRY_DEADLINE_S, call) + CALL_TIMEOUT_S + call
    for figure in (
        f"{client.ATTEMPTS} tries",
        f"{client.CONNECT_TIMEOUT_S:g} s",
        f"{client.MAX_TRY_TIMEOUT_S:g} s",
        f"{client.max_sleep_s():g} s",
        f"{call:.2f} s",
        f"{event:.2f} s",
        f"{client.ATTEMPTS * ENVOY_ATTEMPTS} tries",
    ):
        assert figure in section, figure
    assert event <= ADR_0017_EVENT_S
    # Without the read timeout's cap a try through the gateway could last Envoy's whole 45 s.
    assert client.MAX_TRY_TIMEOUT_S < ENVOY_PER_TRY_S
    assert re.search(r"HYPERFLEET_TIMEOUT[^\n]*6", section)


def test_the_client_is_built_with_the_budgets_numbers() -> None:
    env = {"HYPERFLEET_API_URL": "http://127.0.0.1:9", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/1"}
    settings = load(env)
    retries = HyperFleetClient(settings)._pool.retries
    assert isinstance(retries, client.Retry)
    assert retries.total == client.ATTEMPTS - 1 and retries.backoff_max == client.RETRY_AFTER_CAP_S
    assert settings.hyperfleet_timeout_s == client.MAX_TRY_TIMEOUT_S


def test_a_call_to_a_server_that_never_answers_ends_inside_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as silent:  # listens, never accepts: every try connects and then waits for an answer
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        settings = load(
            {
                "HYPERFLEET_API_URL": f"http://127.0.0.1:{port}",
                "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/1",
                "HYPERFLEET_TIMEOUT": "0.3",
            }
        )
        started = time.monotonic()
        with pytest.raises(TransientError):
            HyperFleetClient(settings).get_cluster("cls-1")
        elapsed = time.monotonic() - started
    assert client.ATTEMPTS * 0.3 <= elapsed <= client.call_budget_s(0.3)
