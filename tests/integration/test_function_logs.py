"""Logs that explain themselves, read from a real functions-framework process and from its test client.

A transient failure is one structured warning line and a 503 (no Flask traceback on stderr, Pub/Sub still
redelivers); a configuration error at cold start is one ERROR line naming the variable; a good start is one
line with the effective configuration; every final `reconcile` line of a failure says why and where.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from emulators.functionproc import FunctionProcess
from emulators.pubsub import PubSubEmulator, push_envelope
from tests.support import SENSITIVE, Admin, seed_ready_cluster, sentinel_event

ROOT = Path(__file__).resolve().parent.parent.parent
CID = "cls-logs01"


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every stdout line of the function must be one JSON object (Cloud Logging's structured format)."""
    lines = [line for line in text.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        assert line.startswith("{"), f"an unstructured line on stdout: {line[:300]}"
        parsed.append(json.loads(line))
    return parsed


def final_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("operation") == "reconcile" and "result" in line]


@pytest.fixture
def process(function_env: dict[str, str], tmp_path: Path) -> Iterator[FunctionProcess]:
    env = {**function_env, "RETRY_DEADLINE": "3"}
    proc = FunctionProcess(env, tmp_path / "stdout.log", stderr_path=tmp_path / "stderr.log")
    proc.start()
    yield proc
    proc.stop()
    assert not any(secret in proc.output() + proc.errors() for secret in SENSITIVE)


def test_transient_failure_is_one_warning_line_and_a_503_without_traceback(
    process: FunctionProcess, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    admin.fault(service="kubernetes", method="patch.secrets.dryrun", code="503", rate=1.0)
    response = requests.post(process.url, json=push_envelope(sentinel_event(CID)), timeout=60)
    assert response.status_code == 503, response.text
    time.sleep(0.3)  # let the process flush whatever it would print after answering
    assert "Traceback" not in process.errors() and process.errors().strip() == "", process.errors()[-2000:]
    lines = json_lines(process.output())
    assert not [line for line in lines if line["severity"] == "ERROR"], "a transient failure reached error level"
    finals = final_lines(lines)
    assert len(finals) == 1, finals
    final = finals[0]
    assert final["severity"] == "WARNING" and final["result"] == "transient"
    # The Kubernetes read keeps answering 503 until the retry deadline; on a loaded machine the deadline may
    # already be over when a call would start, which is the same outcome under another reason.
    assert final["reason"] in ("DependencyUnavailable", "DeadlineExceeded"), final
    assert final["reason"] == "DeadlineExceeded" or final["service"] == "kubernetes", final
    assert "Pub/Sub redelivers" in final["message"] and final["duration_ms"] > 0
    assert "stack_trace" not in final and "@type" not in final

    admin.call("DELETE", "/faults")
    again = requests.post(process.url, json=push_envelope(sentinel_event(CID)), timeout=60)
    assert again.status_code == 200
    assert final_lines(json_lines(process.output()))[-1]["result"] == "applied"


def test_a_good_start_logs_the_effective_configuration_in_one_line(process: FunctionProcess, world: Any) -> None:
    token = Path(world.token_file).read_text().strip()
    lines = json_lines(process.output())
    startup = [line for line in lines if line.get("operation") == "startup"]
    assert len(startup) == 1 and startup[0]["severity"] == "INFO", startup
    shown = startup[0]["configuration"]
    assert shown["hyperfleet_api_url"] == world.hyperfleet.url and shown["retry_deadline_s"] == 3.0
    assert shown["management_namespace_pattern"] == "^clusters-[a-z0-9-]+$"
    assert token not in process.output()


@pytest.mark.parametrize(
    ("change", "variable"),
    [({"HYPERFLEET_API_URL": ""}, "HYPERFLEET_API_URL"), ({"RETRY_DEADLINE": "soon"}, "RETRY_DEADLINE")],
)
def test_a_configuration_error_at_cold_start_is_one_structured_error_line(
    function_env: dict[str, str], tmp_path: Path, change: dict[str, str], variable: str
) -> None:
    proc = FunctionProcess({**function_env, **change}, tmp_path / "stdout.log", stderr_path=tmp_path / "stderr.log")
    with pytest.raises(RuntimeError, match="exited with 1"):
        proc.start()
    proc.stop()
    lines = json_lines(proc.output())
    assert len(lines) == 1, lines
    assert lines[0]["severity"] == "ERROR" and lines[0]["variable"] == variable
    assert variable in lines[0]["reason"] and lines[0]["operation"] == "startup"
    assert "Traceback" not in proc.errors(), proc.errors()[-2000:]


@pytest.mark.pubsub
def test_pubsub_redelivers_a_transient_failure_without_a_traceback(
    process: FunctionProcess, admin: Admin, world: Any
) -> None:
    available, reason = PubSubEmulator.available()
    if not available:
        pytest.skip(reason)
    pubsub = PubSubEmulator(world.book)
    pubsub.start()
    try:
        seed_ready_cluster(admin, CID)
        pubsub.create_topic("hyperfleet-cluster-events")
        pubsub.create_push_subscription("hyperfleet-cluster-events", "pullsecret-push", process.url)
        admin.fault(service="kubernetes", method="patch.secrets.dryrun", code="503", rate=1.0)
        pubsub.publish_sentinel_event("hyperfleet-cluster-events", sentinel_event(CID))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not final_lines(json_lines(process.output())):
            time.sleep(0.1)
        admin.call("DELETE", "/faults")
        while time.monotonic() < deadline and final_lines(json_lines(process.output()))[-1]["result"] != "applied":
            time.sleep(0.1)
        results = [line["result"] for line in final_lines(json_lines(process.output()))]
        assert results[0] == "transient" and results[-1] == "applied", results
        assert "Traceback" not in process.errors(), process.errors()[-2000:]
    finally:
        pubsub.stop()


# --- in process, through functions-framework's test client --------------------------------------------------


@pytest.fixture
def client(function_env: dict[str, str]) -> Any:
    from functions_framework import create_app

    from pullsecret import handler

    handler._adapter = None  # main.py builds the process-wide adapter from this test's environment
    return create_app("handle_cluster_event", str(ROOT / "main.py"), "cloudevent").test_client()


def logged(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def test_the_w3c_traceparent_http_header_is_honoured(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    headers = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
    assert client.post("/", json=push_envelope(sentinel_event(CID)), headers=headers).status_code == 200
    lines = [line for line in logged(capsys) if line.get("operation") != "startup"]
    assert lines and all(
        line.get("logging.googleapis.com/trace") == f"projects/hf-demo-project/traces/{trace_id}" for line in lines
    ), lines


def test_a_terminal_outcome_ends_with_one_error_line_naming_reason_and_service(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    admin.fault(service="secretmanager", method="AccessSecretVersion", code="PERMISSION_DENIED", rate=1.0)
    assert client.post("/", json=push_envelope(sentinel_event(CID))).status_code == 200
    finals = final_lines(logged(capsys))
    assert len(finals) == 1, finals
    assert finals[0]["severity"] == "ERROR" and finals[0]["result"] == "terminal"
    assert finals[0]["reason"] == "PermissionDenied" and finals[0]["service"] == "secretmanager"


def test_skipped_outcomes_say_why_and_malformed_events_are_warnings(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    admin.seed_cluster(CID, {"name": CID, "generation": 1, "spec": {"platform": {"type": "gcp"}}})
    assert client.post("/", json=push_envelope(sentinel_event(CID))).status_code == 200
    garbage = {"message": {"data": base64.b64encode(b"\x00not json").decode(), "messageId": "1"}, "subscription": "s"}
    assert client.post("/", json=garbage).status_code == 200
    skipped, ignored = final_lines(logged(capsys))
    assert skipped["result"] == "skipped" and skipped["reason"] == "PreconditionsNotMet"
    assert ignored["severity"] == "WARNING" and ignored["result"] == "ignored"
    assert "not a structured-mode CloudEvent" in ignored["message"]


def test_debug_level_adds_the_decisions_and_each_attempt(
    function_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    admin: Admin,
    world: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pullsecret import handler
    from pullsecret.logs import log

    seed_ready_cluster(admin, CID)
    admin.fault(service="kubernetes", method="patch.secrets.dryrun", code="503", count=1)
    monkeypatch.setenv("LOG_LEVEL", "DEBUG")
    try:
        handler.Adapter.from_environment().handle(
            {"type": "google.cloud.pubsub.topic.v1.messagePublished", "id": "m-1"},
            push_envelope(sentinel_event(CID)),
        )
    finally:
        log.configure(level="INFO")
    debug = [line for line in logged(capsys) if line["severity"] == "DEBUG"]
    operations = {line["operation"] for line in debug}
    assert {"event", "preconditions", "retry"} <= operations, debug
    decided = next(line for line in debug if line["operation"] == "preconditions")
    assert decided["message"] == "preconditions decided: Act" and decided["namespace"] == f"clusters-{CID}"


def test_a_missing_namespace_goes_back_to_pubsub_without_in_process_retries(
    client: Any, admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """As README's error policy says: transient, but the placement adapter needs minutes, not seconds."""
    seed_ready_cluster(admin, CID, namespace=False)
    admin.call("DELETE", "/calls")
    assert client.post("/", json=push_envelope(sentinel_event(CID))).status_code == 503
    secret_calls = {k: v for k, v in admin.calls()["kubernetes"].items() if ".secrets" in k}
    assert secret_calls == {"patch.secrets.dryrun": 1}, secret_calls  # the probe finds no namespace; no retry
    (final,) = final_lines(logged(capsys))
    assert final["result"] == "transient" and final["reason"] == "NamespaceMissing"
    assert final["service"] == "kubernetes" and final["severity"] == "WARNING"


def test_the_effective_configuration_never_shows_credentials_in_the_api_url(function_env: dict[str, str]) -> None:
    from pullsecret import configured, web

    settings = configured.load({**function_env, "HYPERFLEET_API_URL": "https://robot:s3cret@hf.example.com:8443/base"})
    shown = web.effective_configuration(settings)
    assert shown["hyperfleet_api_url"] == "https://hf.example.com:8443/base"
    assert "s3cret" not in json.dumps(shown)


def test_a_transient_rotation_failure_is_one_warning_line(
    function_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    admin: Admin,
    world: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pullsecret import handler
    from pullsecret.errors import TransientError

    monkeypatch.setenv("ADAPTER_TOPIC", "projects/hf-demo-project/topics/pullsecret-reconcile")
    admin.fault(service="hyperfleet", method="getClusters", code="503", rate=1.0)
    secret = "projects/123456789012/secrets/platform-pull-secret"
    # The notification names the source's newest version (anything else is not acted on).
    newest = len(admin.get("/secretmanager/projects/hf-demo-project/secrets/platform-pull-secret")["versions"])
    envelope = {
        "message": {
            "data": base64.b64encode(json.dumps({"name": secret}).encode()).decode(),
            "attributes": {
                "eventType": "SECRET_VERSION_ADD",
                "secretId": secret,
                "versionId": f"{secret}/versions/{newest}",
            },
            "messageId": "9002",
            "publishTime": "2099-01-01T00:00:00Z",
        },
        "subscription": "projects/hf-demo-project/subscriptions/source-rotation",
    }
    with pytest.raises(TransientError):
        handler.Adapter.from_environment().handle(
            {"type": "google.cloud.pubsub.topic.v1.messagePublished", "id": "9002"}, envelope
        )
    finals = [line for line in logged(capsys) if line.get("operation") == "rotation" and "result" in line]
    assert len(finals) == 1 and finals[0]["severity"] == "WARNING" and finals[0]["result"] == "transient", finals
    assert finals[0]["service"] == "hyperfleet" and finals[0]["reason"]
