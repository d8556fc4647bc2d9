"""A service's answer quotes back what it was sent, or sends the adapter elsewhere (issue 50, items 1, 2 and 5).

- The Pull Secret Service (or the HyperFleet API) answers 400 with a problem whose detail echoes our
  `Authorization: Bearer <token>` header (emulators/hostile.py `echo-authorization`): the token reaches no terminal
  error, no status written to HyperFleet (readable by whoever reads cluster statuses), no log line, whichever
  credential the adapter presents (a token file, a Google ID token, a ServiceAccount token minted by TokenRequest).
- The echoed token straddles the 200-character cut of a problem detail (`echo-authorization:187`): no prefix of it
  survives, for the detail is scrubbed before it is cut.
- The service answers a redirect (307, 308): a configuration error of the deployment (`EndpointRedirected`, ERROR,
  redelivered), never a terminal refusal reported on the cluster; the doctor names it; so does the HyperFleet client.

Every text is scanned by harness.scan (the report's leak figure): the logs, the outcome, the statuses HyperFleet
received.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from emulators.hostile import MOVED_TO
from emulators.world import TOKEN_ACCOUNT, TOKEN_CLUSTER, TOKEN_NAMESPACE
from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from pullsecret.logs import log
from pullsecret.operator import cli
from tests.reliability import harness
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-hostileanswer1"
JWT_HEAD = "eyJ"  # every JWT (an ID token, a ServiceAccount token) starts with it: none may be printed
AUTHS = ("token-file", "google-id-token", "service-account-token")


@pytest.fixture
def service_mode(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, world: Any) -> Any:
    """Service mode with each of the three credentials (`configure(auth)`); the service admits them all."""

    def configure(auth: str) -> None:
        monkeypatch.delenv("PULL_SECRET_SOURCE", raising=False)
        monkeypatch.setenv("PULL_SECRET_SERVICE_URL", world.pullsecretservice.url)
        monkeypatch.setenv("PULL_SECRET_SERVICE_AUTH", auth)
        monkeypatch.setenv("PULL_SECRET_SERVICE_TTL", "0")
        monkeypatch.setenv("RETRY_DEADLINE", "4")
        if auth == "token-file":
            monkeypatch.setenv("PULL_SECRET_SERVICE_TOKEN_FILE", world.service_token_file)
        if auth == "service-account-token":  # the HyperFleet API through its gateway, the same account at both
            monkeypatch.delenv("HYPERFLEET_API_TOKEN_FILE", raising=False)
            monkeypatch.setenv("HYPERFLEET_API_AUTH", "service-account-token")
            monkeypatch.setenv("HYPERFLEET_API_TOKEN_CLUSTER", TOKEN_CLUSTER)
            monkeypatch.setenv("HYPERFLEET_API_SERVICE_ACCOUNT", f"{TOKEN_NAMESPACE}/{TOKEN_ACCOUNT}")
            world.hyperfleet.token = "hf-opaque-token-nobody-presents"
            world.hyperfleet.set_gateway(world.gateway_config())

    return configure


def deliver(adapter: Adapter, generation: int = 1) -> tuple[str, str]:
    """(the result, the text it ends with: the outcome's detail or the redelivered error's message)."""
    try:
        outcome = adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))
    except TransientError as exc:
        return "transient", exc.message
    return str(outcome.result), str(outcome.detail or "")


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def statuses(admin: Admin) -> list[str]:
    return [json.dumps(r["body"]) for r in admin.reports() if r.get("cluster_id") == CID]


def token_forms(world: Any) -> set[str]:
    """The token file's token (whole) and the head every JWT starts with."""
    return {Path(world.service_token_file).read_text(encoding="utf-8").strip(), JWT_HEAD}


@pytest.mark.parametrize("auth", AUTHS)
def test_a_service_that_echoes_our_token_gets_it_into_no_error_status_or_log(
    service_mode: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str], auth: str
) -> None:
    harness.count("cases tried")
    service_mode(auth)
    seed_ready_cluster(admin, CID)
    admin.fault(service="pullsecretservice", method="post", code="echo-authorization", count=5)
    harness.count("faults injected")
    result, said = deliver(Adapter.from_environment())
    out = capsys.readouterr().out
    reported = statuses(admin)
    # Scanned first: a failed assertion below must not print what it found (harness.scan names places only).
    assert harness.scan(f"echoing service ({auth})", [out, said, *reported], token_forms(world)) == []
    assert result == "terminal"  # a 400: the cluster's request is refused, as before
    assert "[REDACTED]" in said and any("[REDACTED]" in s for s in reported)  # the echo was there, scrubbed


def test_a_token_straddling_the_cut_of_a_problem_detail_leaves_no_prefix(
    service_mode: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The detail is 187 dots and then the token alone (no `Bearer` before it): 13 of its characters fall before
    the 200-character cut, as the issue reproduced with a robot token."""
    harness.count("cases tried")
    service_mode("token-file")
    token = Path(world.service_token_file).read_text(encoding="utf-8").strip()
    assert len(token) > 13
    seed_ready_cluster(admin, CID)
    admin.fault(service="pullsecretservice", method="post", code="echo-authorization:187", count=5)
    harness.count("faults injected")
    result, said = deliver(Adapter.from_environment())
    out = capsys.readouterr().out
    assert harness.scan("straddling secret", [out, said, *statuses(admin)], {token, token[:13]}) == []
    assert result == "terminal" and "..." in said


def test_the_hyperfleet_api_echoing_our_token_gets_it_nowhere(
    make_adapter: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API's own answer quotes the header (a 400 on get cluster: terminal, no status can be reported), and its
    status write's answer too (the event is applied, its status refused)."""
    harness.count("cases tried", 2)
    token = Path(world.token_file).read_text(encoding="utf-8").strip()
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({})
    for method in ("getClusterById", "putClusterStatuses"):
        admin.fault(service="hyperfleet", method=method, code="echo-authorization", count=1)
        harness.count("faults injected")
        result, said = deliver(adapter)
        out = capsys.readouterr().out
        assert harness.scan(f"echoing HyperFleet API ({method})", [out, said, *statuses(admin)], {token}) == []
        assert result in ("terminal", "transient"), method
        assert "[REDACTED]" in said or "[REDACTED]" in out, method


@pytest.mark.parametrize("code", ["307", "308"])
def test_a_redirect_from_the_service_is_a_configuration_error_never_the_clusters(
    service_mode: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    harness.count("cases tried")
    service_mode("token-file")
    seed_ready_cluster(admin, CID)
    admin.fault(service="pullsecretservice", method="post", code=code, count=5)
    harness.count("faults injected")
    result, said = deliver(Adapter.from_environment())
    assert result == "transient", said  # redelivered until the deployment is fixed; never acknowledged
    assert "PULL_SECRET_SERVICE_URL" in said and "moved.emulator.invalid" in said, said
    assert statuses(admin) == []  # nothing reported on the cluster: not its fault
    out = capsys.readouterr().out
    errors = [line for line in lines(out) if line.get("reason") == "EndpointRedirected"]
    assert errors and errors[0]["severity"] == "ERROR" and errors[0]["error_kind"] == "configuration", out[-2000:]
    assert world.secretmanager.secret("hf-demo-project", f"hyperfleet-{CID}-pull-secret") is None
    assert harness.scan(f"redirect {code}", [out, said], token_forms(world)) == []


def doctor() -> tuple[int, str]:
    out = io.StringIO()
    saved = (log._stream, log.level)  # cli.main points the process-wide logger at stderr: put it back
    try:
        with redirect_stdout(out):
            code = cli.main(["doctor"])
    finally:
        log._stream, log.level = saved
    return code, out.getvalue()


def check_line(report: str, check: str) -> str:
    return next((line for line in report.splitlines() if line.split()[1:2] == [check]), "")


def test_the_doctor_names_a_redirecting_service_and_where_it_points(service_mode: Any, admin: Admin) -> None:
    harness.count("cases tried")
    service_mode("token-file")
    admin.fault(service="pullsecretservice", method="get", code="307", count=5)
    code, report = doctor()
    line = check_line(report, "pull-secret-service")
    assert code == 1 and line.startswith("FAIL") and "EndpointRedirected" in line, report[-2000:]
    assert MOVED_TO in report  # the fix says where the service points now


def test_the_doctor_names_a_redirecting_hyperfleet_api(make_adapter: Any, admin: Admin) -> None:
    harness.count("cases tried")
    make_adapter({})
    admin.fault(service="hyperfleet", method="getClusters", code="308", count=5)
    code, report = doctor()
    line = check_line(report, "hyperfleet-api")
    assert code == 1 and line.startswith("FAIL") and "EndpointRedirected" in line, report[-2000:]
    assert "HYPERFLEET_API_URL answers a redirect" in report


def test_a_redirect_from_the_hyperfleet_api_is_a_configuration_error_and_not_followed(
    make_adapter: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    harness.count("cases tried")
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({"RETRY_DEADLINE": "4"})
    admin.fault(service="hyperfleet", method="getClusterById", code="307", count=5)
    harness.count("faults injected")
    result, said = deliver(adapter)
    assert result == "transient" and "HYPERFLEET_API_URL" in said and "moved.emulator.invalid" in said, said
    out = capsys.readouterr().out
    errors = [line for line in lines(out) if line.get("reason") == "EndpointRedirected"]
    assert errors and errors[0]["severity"] == "ERROR" and errors[0]["error_kind"] == "configuration", out[-2000:]
    assert statuses(admin) == []
