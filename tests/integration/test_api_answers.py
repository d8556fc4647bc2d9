"""How the function reads the HyperFleet API's answers (docs/contract.md §2): which 404 means "gone", which 403
is terminal, and the trace context it forwards. Against the HyperFleet emulator, through the production handler.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from emulators.hyperfleet import Tenancy
from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-answers1"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def deliver(adapter: Adapter, cluster_id: str = CID, **kwargs: Any) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cluster_id, 1)), **kwargs)


def log_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def test_a_url_that_reaches_no_route_is_a_loud_configuration_error_never_an_acknowledgement(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any, capsys: Any
) -> None:
    # A wrong path prefix: the API answers HYPERFLEET-NTF-000 "Endpoint Not Found" for every call.
    monkeypatch.setenv("HYPERFLEET_API_URL", function_env["HYPERFLEET_API_URL"] + "/hyperfleet")
    seed_ready_cluster(admin, CID)
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "EndpointNotFound" and "HYPERFLEET-NTF-000" in raised.value.message
    errors = [line for line in log_lines(capsys) if line.get("reason") == "EndpointNotFound"]
    assert errors and errors[0]["severity"] == "ERROR" and "HYPERFLEET_API_URL" in errors[0]["message"]
    assert admin.reports() == [] and world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is None
    # The emulator records each call outside the spec's routes; they are this test's point, not drift.
    assert {v["error"].split(" for ")[0] for v in admin.violations()} == {"Server not found"}
    world.hyperfleet.violations.clear()


def test_a_404_without_a_hyperfleet_code_is_not_a_deleted_cluster(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    # A proxy or another server answering 404: nothing says the cluster is gone.
    admin.seed_cluster(CID, {"_raw": {"status": 404, "content_type": "text/plain", "body": "404 page not found"}})
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "EndpointNotFound" and "no HyperFleet error code" in raised.value.message


def test_a_missing_cluster_ntf_001_is_acknowledged_as_gone(function_env: dict[str, str], admin: Admin) -> None:
    assert deliver(Adapter.from_environment(), cluster_id="cls-missing").result == "gone"


def test_a_403_with_an_authorization_code_is_terminal(
    function_env: dict[str, str], admin: Admin, world: Any, capsys: Any
) -> None:
    # The identity is known but holds no rights (HYPERFLEET-AUZ-001): no re-read or retry changes a policy.
    seed_ready_cluster(admin, CID)
    world.hyperfleet.set_token(world.hyperfleet.token, forbidden=True)
    outcome = deliver(Adapter.from_environment())
    assert (outcome.result, outcome.reason, outcome.service) == ("terminal", "PermissionDenied", "hyperfleet")
    final = [line for line in log_lines(capsys) if line.get("operation") == "reconcile"]
    assert final[-1]["severity"] == "ERROR" and "HYPERFLEET-AUZ-001" in final[-1]["message"]
    assert (final[-1]["event_status"], final[-1]["error_type"]) == ("failed", "preconditions")
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is None


def test_a_403_without_an_authorization_code_is_a_refused_token_and_redelivered(
    function_env: dict[str, str], admin: Admin, capsys: Any
) -> None:
    admin.seed_cluster(CID, {"_raw": {"status": 403, "content_type": "text/plain", "body": "RBAC: access denied"}})
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "CredentialsRefused"
    errors = [line for line in log_lines(capsys) if line.get("reason") == "CredentialsRefused"]
    assert errors and errors[0]["severity"] == "ERROR" and errors[0]["error_kind"] == "configuration"


def test_a_gateway_denial_is_a_configuration_error_never_an_acknowledgement(
    function_env: dict[str, str], admin: Admin, world: Any, capsys: Any
) -> None:
    """hyperfleet-infra 5da6143 helm/hyperfleet-gateway: the gateway's denial carries no HyperFleet code."""
    seed_ready_cluster(admin, CID)
    world.hyperfleet.deny_at_gateway()
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "CredentialsRefused" and "gateway" in raised.value.message
    # One line per refused call (the cluster and its statuses are read at once), as for NTF-000.
    errors = [line for line in log_lines(capsys) if line.get("operation") == "hyperfleet.auth"]
    assert {(e["severity"], e["error_kind"]) for e in errors} == {("ERROR", "configuration")}
    assert admin.reports() == []
    world.hyperfleet.expected_violations.clear()


def test_tenancy_without_the_system_header_is_a_configuration_error_naming_the_setting(
    function_env: dict[str, str], admin: Admin, world: Any, capsys: Any
) -> None:
    """hyperfleet-api 541f6b4 pkg/tenant/middleware.go: 403 AUZ-001 naming the missing tenant header."""
    seed_ready_cluster(admin, CID)
    world.hyperfleet.set_tenancy(Tenancy())
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "TenantRequired" and "HYPERFLEET_SYSTEM_HEADER" in raised.value.message
    errors = [line for line in log_lines(capsys) if line.get("operation") == "hyperfleet.tenancy"]
    assert errors and all(e["severity"] == "ERROR" and "HYPERFLEET_SYSTEM_HEADER" in e["message"] for e in errors)
    assert {e["error_kind"] for e in errors} == {"configuration"}
    assert admin.reports() == [] and world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is None


def test_tenancy_with_the_system_header_reconciles(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    world.hyperfleet.set_tenancy(Tenancy())
    monkeypatch.setenv("HYPERFLEET_SYSTEM_HEADER", "X-HyperFleet-System")
    assert deliver(Adapter.from_environment()).result == "applied"
    assert [r["cluster_id"] for r in admin.reports()] == [CID]


def test_a_405_is_a_configuration_error_naming_the_status_method_and_the_allowed_ones(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any, capsys: Any
) -> None:
    """hyperfleet-api 541f6b4 server/router.go: the stdlib router's plain-text 405 with Allow."""
    seed_ready_cluster(admin, CID)
    monkeypatch.setenv("HYPERFLEET_STATUS_METHOD", "POST")
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "MethodNotAllowed"
    assert "HYPERFLEET_STATUS_METHOD=POST" in raised.value.message and "GET, HEAD, PUT" in raised.value.message
    errors = [line for line in log_lines(capsys) if line.get("operation") == "hyperfleet.route"]
    assert len(errors) == 1 and errors[0]["severity"] == "ERROR" and errors[0]["error_kind"] == "configuration"
    assert [r for r in admin.reports() if r["code"] in (200, 201, 204)] == []
    world.hyperfleet.violations.clear()  # the POST and pageSize calls are this test's point, not drift
    world.hyperfleet.expected_violations.clear()


def test_the_event_trace_is_forwarded_on_every_api_call(function_env: dict[str, str], admin: Admin) -> None:
    seed_ready_cluster(admin, CID)
    traceparent = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
    assert deliver(Adapter.from_environment(), traceparent=traceparent).result == "applied"
    reports = [r for r in admin.reports() if r["cluster_id"] == CID]
    assert reports and reports[-1]["traceparent"] is not None
    version, trace_id, span_id, flags = reports[-1]["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
    assert span_id != "00f067aa0ba902b7"  # a span of the function's own, child of the event's


def test_a_cluster_carrying_the_server_set_tenancy_reconciles(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    """hyperfleet-api since hyperfleet-api-spec v1.0.27 (commit bc976f7, 2026-08-14, "Server-set tenancy on the
    resource write path") presents every resource, clusters included, with `tenancy` (a string map, `{}` when
    none), a field the vendored 1.0.25 spec does not name: the function reads past it."""
    seed_ready_cluster(admin, CID, tenancy={"organization": "org-1"})
    served = admin.session.get(f"{admin.hf}/clusters/{CID}", timeout=10).json()
    assert served["tenancy"] == {"organization": "org-1"}
    assert deliver(Adapter.from_environment()).result == "applied"
    assert admin.violations() == []
