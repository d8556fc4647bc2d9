"""The HyperFleet emulator over real HTTP with requests: server rules, validation, seeding, faults."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from emulators.faults import FaultBook
from emulators.hyperfleet import HyperFleetEmulator, Tenancy, rfc3339

API = "/api/hyperfleet/v1"


@pytest.fixture
def book() -> FaultBook:
    return FaultBook()


@pytest.fixture
def hf(book: FaultBook) -> Iterator[HyperFleetEmulator]:
    emulator = HyperFleetEmulator(book)
    emulator.start()
    emulator.seed_cluster("cls-abc123", {"name": "cluster-abc", "generation": 5, "spec": {"platform": {}}})
    yield emulator
    emulator.stop()


def status_body(generation: int = 5, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "adapter": "pullsecret",
        "observed_generation": generation,
        "observed_time": rfc3339(),
        "conditions": [
            {"type": "Applied", "status": "True", "reason": "SecretsApplied", "message": "ok"},
            {"type": "Available", "status": "True", "reason": "PullSecretAvailable", "message": "ok"},
            {"type": "Health", "status": "True", "reason": "Healthy", "message": "ok"},
        ],
        "data": {"secret": "projects/123/secrets/x/versions/1"},
    }
    body.update(overrides)
    return body


def put_status(
    hf: HyperFleetEmulator, body: Any, cluster: str = "cls-abc123", method: str = "PUT"
) -> requests.Response:
    return requests.request(method, f"{hf.url}{API}/clusters/{cluster}/statuses", json=body, timeout=5)


def test_get_cluster_and_list(hf: HyperFleetEmulator) -> None:
    cluster = requests.get(f"{hf.url}{API}/clusters/cls-abc123", timeout=5).json()
    assert cluster["kind"] == "Cluster" and cluster["generation"] == 5
    assert [c["type"] for c in cluster["status"]["conditions"]] == ["Reconciled", "LastKnownReconciled"]
    listing = requests.get(f"{hf.url}{API}/clusters", params={"search": "name='cluster-abc'"}, timeout=5).json()
    assert (listing["kind"], listing["total"], listing["page"]) == ("ClusterList", 1, 1)
    assert requests.get(f"{hf.url}{API}/clusters?search=name='x'", timeout=5).json()["total"] == 0
    missing = requests.get(f"{hf.url}{API}/clusters/nope", timeout=5)
    assert missing.status_code == 404
    assert missing.headers["Content-Type"] == "application/problem+json"
    assert missing.json()["code"] == "HYPERFLEET-NTF-001"
    assert hf.violations.list() == []


def test_keyset_paging_by_id(hf: HyperFleetEmulator) -> None:
    """`order=id asc` with `search=id > 'last'` (hyperfleet-api ArgsToOrder and TSL comparisons)."""
    for cid in ("cls-b", "cls-c", "cls-d", "cls-a"):
        hf.seed_cluster(cid, {"name": cid, "generation": 1, "spec": {}})

    def ids(**params: str) -> list[str]:
        listing = requests.get(f"{hf.url}{API}/clusters", params={"size": "2", **params}, timeout=5)
        assert listing.status_code == 200, listing.text
        return [c["id"] for c in listing.json()["items"]]

    assert ids(order="id asc") == ["cls-a", "cls-abc123"]
    assert ids(order="id asc", search="id > 'cls-abc123'") == ["cls-b", "cls-c"]
    assert ids(order="id desc") == ["cls-d", "cls-c"]
    bad = requests.get(f"{hf.url}{API}/clusters", params={"order": "id; drop"}, timeout=5)
    assert bad.status_code == 400
    assert hf.violations.list() == []


def test_status_write_201_and_aggregation(hf: HyperFleetEmulator) -> None:
    response = put_status(hf, status_body())
    assert response.status_code == 201
    stored = response.json()
    assert stored["adapter"] == "pullsecret" and stored["last_report_time"]
    assert all(c["last_transition_time"] for c in stored["conditions"])
    statuses = requests.get(f"{hf.url}{API}/clusters/cls-abc123/statuses", timeout=5).json()
    assert statuses["total"] == 1 and statuses["items"][0]["data"] == stored["data"]
    conditions = {c["type"]: c for c in hf.state()["clusters"]["cls-abc123"]["status"]["conditions"]}
    assert conditions["PullsecretSuccessful"]["status"] == "True"
    assert conditions["Reconciled"]["status"] == "True"
    assert hf.violations.list() == []


@pytest.mark.parametrize(
    "change",
    [
        {"conditions": [{"type": "", "status": "True"}]},
        {"duplicate": True},
        {"bad_status": "Maybe"},
        {"drop": "Health"},
        {"drop": "Applied"},
        {"observed_generation": 0},
        {"observed_offset": -timedelta(minutes=31)},  # computed when the test runs, not at collection
        {"observed_offset": timedelta(minutes=6)},
        {"observed_time": "yesterday"},
    ],
)
def test_status_write_400(hf: HyperFleetEmulator, change: dict[str, Any]) -> None:
    body = status_body()
    if change.get("duplicate"):
        body["conditions"].append(dict(body["conditions"][0]))
    elif "bad_status" in change:
        body["conditions"][0]["status"] = change["bad_status"]
    elif "drop" in change:
        body["conditions"] = [c for c in body["conditions"] if c["type"] != change["drop"]]
    elif "conditions" in change:
        body["conditions"] = body["conditions"] + change["conditions"]
    elif "observed_offset" in change:
        body["observed_time"] = (datetime.now(UTC) + change["observed_offset"]).isoformat()
    else:
        body.update(change)
    response = put_status(hf, body)
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["errors"]
    assert hf.state()["statuses"]["cls-abc123"] == {}


def test_status_write_404_and_405(hf: HyperFleetEmulator) -> None:
    assert put_status(hf, status_body(), cluster="gone").status_code == 404
    wrong = put_status(hf, status_body(), method="POST")
    # hyperfleet-api 541f6b4 server/router.go: net/http's own 405, plain text, Allow sorted with HEAD beside GET.
    assert wrong.status_code == 405
    assert wrong.headers["Allow"] == "GET, HEAD, PUT"
    assert wrong.headers["Content-Type"].startswith("text/plain") and wrong.text == "Method Not Allowed\n"
    assert [v["kind"] for v in hf.violations.list()] == ["request"]  # POST is not in core 1.0.25


def test_the_405_of_a_known_path_comes_before_authentication(book: FaultBook) -> None:
    hf = HyperFleetEmulator(book, token="t0ken")
    hf.start()
    try:
        answer = requests.post(f"{hf.url}{API}/clusters/c1/statuses", json={}, timeout=5)  # no credential at all
        assert answer.status_code == 405 and answer.headers["Allow"] == "GET, HEAD, PUT"
        listing = requests.put(f"{hf.url}{API}/clusters", timeout=5, headers={"Authorization": "Bearer t0ken"})
        assert listing.status_code == 405 and listing.headers["Allow"] == "GET, HEAD, POST"
        # An unknown path is still the API's problem+json NTF-000, not a 405.
        assert requests.post(f"{hf.url}{API}/nowhere", timeout=5).json()["code"] == "HYPERFLEET-NTF-000"
    finally:
        hf.stop()


def test_tenancy_refuses_a_caller_without_its_tenant_header_unless_it_is_the_system(hf: HyperFleetEmulator) -> None:
    """hyperfleet-api 541f6b4 pkg/tenant/middleware.go with configs/dev.yaml's tenant block."""
    hf.set_tenancy(Tenancy())
    url = f"{hf.url}{API}/clusters/cls-abc123"
    bare = requests.get(url, timeout=5)
    assert bare.status_code == 403 and bare.json()["code"] == "HYPERFLEET-AUZ-001"
    assert bare.json()["detail"] == 'required tenant header "X-HyperFleet-Org" is missing'
    for value in ("1", "yes", "false"):
        assert requests.get(url, timeout=5, headers={"X-HyperFleet-System": value}).status_code == 403
    assert requests.get(url, timeout=5, headers={"X-HyperFleet-Org": "org-1"}).status_code == 200
    assert requests.get(url, timeout=5, headers={"X-HyperFleet-Org": "bad value!"}).status_code == 403
    system = {"X-HyperFleet-System": "true"}
    assert requests.get(url, timeout=5, headers=system).status_code == 200
    written = requests.put(url + "/statuses", json=status_body(), timeout=5, headers=system)
    assert written.status_code == 201
    # A system identity may write status and conditions only (pkg/services/resource.go rejectSystemIdentityWrite).
    patched = requests.patch(url, json={"spec": {}}, timeout=5, headers=system)
    assert patched.status_code == 403 and patched.json()["code"] == "HYPERFLEET-AUZ-001"
    assert patched.json()["detail"] == "system identities may only write status and conditions"
    hf.reset()
    assert requests.get(url, timeout=5).status_code == 404  # reset: tenancy off again (and the store cleared)


def test_a_gateway_denial_carries_no_hyperfleet_code(hf: HyperFleetEmulator) -> None:
    """hyperfleet-infra 5da6143 helm/hyperfleet-gateway: Envoy's ext_authz (Authorino) answers before the API."""
    hf.deny_at_gateway()
    denied = requests.get(f"{hf.url}{API}/clusters/cls-abc123", timeout=5)
    assert denied.status_code == 403 and denied.content == b"" and "code" not in denied.text
    hf.reset()
    assert requests.get(f"{hf.url}{API}/clusters", timeout=5).status_code == 200


def test_status_write_204_discards(hf: HyperFleetEmulator) -> None:
    assert put_status(hf, status_body(generation=6)).status_code == 204  # above cluster generation
    assert put_status(hf, status_body(generation=5)).status_code == 201
    assert put_status(hf, status_body(generation=4)).status_code == 204  # below the stored one
    old = rfc3339(datetime.now(UTC) - timedelta(minutes=1))
    response = put_status(hf, status_body(observed_time=old))
    assert response.status_code == 204 and response.content == b""  # older than stored, same generation
    assert hf.state()["statuses"]["cls-abc123"]["pullsecret"]["observed_generation"] == 5
    assert hf.violations.list() == []
    assert {v["status"] for v in hf.expected_violations.list()} == {204}  # the spec omits 204


@pytest.mark.parametrize("offset", [timedelta(minutes=4, seconds=30), -timedelta(minutes=29, seconds=30)])
def test_observed_time_inside_the_window_is_accepted(hf: HyperFleetEmulator, offset: timedelta) -> None:
    assert put_status(hf, status_body(observed_time=rfc3339(datetime.now(UTC) + offset))).status_code == 201


def with_available(status: str) -> list[dict[str, str]]:
    conditions = status_body()["conditions"]
    conditions[1] = {**conditions[1], "status": status, "reason": "Checking"}
    return list(conditions)


def test_available_unknown_only_on_the_first_report(hf: HyperFleetEmulator) -> None:
    first = put_status(hf, status_body(conditions=with_available("Unknown")))
    assert first.status_code == 201  # the adapter's first report may say Unknown
    assert put_status(hf, status_body(conditions=with_available("True"))).status_code == 201
    later = put_status(hf, status_body(conditions=with_available("Unknown")))
    assert later.status_code == 204  # a later Unknown is discarded; the stored True stays
    stored = hf.state()["statuses"]["cls-abc123"]["pullsecret"]
    assert {c["type"]: c["status"] for c in stored["conditions"]}["Available"] == "True"
    assert put_status(hf, status_body(conditions=with_available("False"))).status_code == 201
    assert hf.violations.list() == []


def test_masked_data_keys_and_reasons_outside_the_vocabulary_are_recorded(hf: HyperFleetEmulator) -> None:
    clean = status_body(data={"sm_version": "projects/1/secrets/x/versions/1", "registries": ["quay.io"]})
    assert put_status(hf, clean).status_code == 201
    assert hf.conventions.list() == []
    body = status_body(
        data={
            "secret_name": "x",
            "nested": {"AuthProvider": "y", "ok": [{"kubeconfig": "z"}]},
            "lineage": {"registries": {"private.example.com": {}}},
        }
    )
    body["conditions"][2] = {"type": "Health", "status": "False", "reason": "PermissionDenied", "message": "m"}
    body["conditions"].append({"type": "Finalized", "status": "False", "reason": "CleanupPending", "message": "m"})
    assert put_status(hf, body).status_code == 201  # the API accepts it: the engine only masks
    recorded = {(c["kind"], c.get("key") or c.get("reason")) for c in hf.conventions.list()}
    assert recorded == {
        ("masked-data-key", "data.secret_name"),
        ("masked-data-key", "data.nested.AuthProvider"),
        ("masked-data-key", "data.nested.ok[0].kubeconfig"),
        ("masked-data-key", "data.lineage.registries.private.example.com"),
        ("health-reason", "PermissionDenied"),
        ("finalized-reason", "CleanupPending"),
    }
    hf.conventions.clear()
    body["data"] = {}
    body["conditions"][2]["reason"] = "ExecutionFailed:resources"
    body["conditions"][3]["reason"] = "CleanupInProgress"
    assert put_status(hf, body).status_code == 201
    assert hf.conventions.list() == []
    listed = requests.get(f"{hf.url}/_emulator/violations", timeout=5).json()
    assert listed["conventions"] == []


def test_bearer_auth_and_token_file(book: FaultBook, tmp_path: Path) -> None:
    token_file = tmp_path / "sub" / "token"
    hf = HyperFleetEmulator(book, token_file=token_file)
    hf.start()
    try:
        hf.seed_cluster("c1", {"name": "cluster-one"})
        token = token_file.read_text().strip()
        assert token == hf.token
        url = f"{hf.url}{API}/clusters/c1"
        assert requests.get(url, timeout=5).status_code == 401
        assert requests.get(url, headers={"Authorization": "Bearer wrong"}, timeout=5).status_code == 401
        denied = requests.get(url, headers={"Authorization": "Bearer wrong"}, timeout=5)
        # hyperfleet-api pkg/auth/jwt_handler.go: AUT-002 for an invalid token, AUT-001 for no header.
        assert denied.json()["code"] == "HYPERFLEET-AUT-002"
        assert requests.get(url, timeout=5).json()["code"] == "HYPERFLEET-AUT-001"
        assert requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5).status_code == 200
        assert hf.violations.list() == []
    finally:
        hf.stop()


def test_token_rotation_forbidden_token_and_reset(book: FaultBook, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    hf = HyperFleetEmulator(book, token_file=token_file)
    hf.start()
    try:
        hf.seed_cluster("c1", {"name": "cluster-one"})
        first = token_file.read_text().strip()
        url = f"{hf.url}{API}/clusters/c1"

        def get(token: str) -> requests.Response:
            return requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5)

        admin = requests.put(f"{hf.url}/_emulator/token", json={"token": "rotated-token"}, timeout=5)
        assert admin.status_code == 200
        assert get(first).status_code == 401  # the issuer rotated: the old token is refused
        assert get("rotated-token").status_code == 200
        assert token_file.read_text().strip() == first  # the file is the test's to rotate
        hf.set_token("rotated-token", forbidden=True)
        denied = get("rotated-token")
        assert denied.status_code == 403
        assert (denied.json()["code"], denied.json()["status"]) == ("HYPERFLEET-AUZ-001", 403)
        assert hf.violations.list() == []  # 403 is the spec's `default` problem answer
        hf.reset()
        # 404, not 401: authenticated again (reset dropped c1)
        assert get(first).status_code == 404 and token_file.read_text().strip() == first
        token_file.write_text("changed by a test\n")
        hf.reset()
        assert token_file.read_text().strip() == first
    finally:
        hf.stop()


def test_in_flight_and_served_calls(hf: HyperFleetEmulator, book: FaultBook) -> None:
    book.add({"service": "hyperfleet", "method": "getClusterStatuses", "latency_ms": 300})
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(requests.get, f"{hf.url}{API}/clusters/cls-abc123/statuses", timeout=5)
        deadline = time.monotonic() + 5
        while hf.in_flight() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert hf.in_flight() == 1
        assert slow.result().status_code == 200
    assert hf.in_flight() == 0
    ((operation, start, end),) = hf.served()
    assert operation == "getClusterStatuses" and end - start >= 0.3


def test_schema_violating_request_is_recorded(hf: HyperFleetEmulator) -> None:
    body = status_body()
    body["conditions"][0]["status"] = "Maybe"
    body["observed_generation"] = "5"
    assert put_status(hf, body).status_code == 400
    violations = requests.get(f"{hf.url}/_emulator/violations", timeout=5).json()["violations"]
    assert len(violations) == 1
    assert violations[0]["operation"] == "putClusterStatuses" and violations[0]["kind"] == "request"
    assert "Maybe" in violations[0]["error"]
    requests.delete(f"{hf.url}/_emulator/violations", timeout=5)
    assert hf.violations.list() == []


def test_seeding_raw_override_and_reports(hf: HyperFleetEmulator) -> None:
    admin = f"{hf.url}/_emulator"
    bad = requests.put(f"{admin}/clusters/Bad_Cluster", json={"name": "Bad_Cluster", "generation": 0}, timeout=5)
    assert bad.json()["schema_errors"]
    served = requests.get(f"{hf.url}{API}/clusters/Bad_Cluster", timeout=5)
    assert served.status_code == 200 and served.json()["generation"] == 0  # a broken API is served as is
    assert hf.violations.list() == [] and hf.expected_violations.list()

    html = {"_raw": {"status": 200, "content_type": "text/html", "body": "<html>login</html>"}}
    requests.put(f"{admin}/clusters/cls-raw", json=html, timeout=5)
    raw = requests.get(f"{hf.url}{API}/clusters/cls-raw", timeout=5)
    assert raw.text == "<html>login</html>" and raw.headers["Content-Type"] == "text/html"

    requests.put(f"{admin}/clusters/cls-del", json={"name": "cluster-del", "deleted_time": rfc3339()}, timeout=5)
    assert requests.get(f"{hf.url}{API}/clusters/cls-del", timeout=5).json()["deleted_by"]
    assert requests.delete(f"{admin}/clusters/cls-del", timeout=5).status_code == 200
    assert requests.get(f"{hf.url}{API}/clusters/cls-del", timeout=5).status_code == 404

    placement = {"data": {"managementCluster": "mc-1", "namespace": "clusters-cls-abc123"}}
    assert requests.put(f"{admin}/clusters/cls-abc123/statuses/placement", json=placement, timeout=5).ok
    items = requests.get(f"{hf.url}{API}/clusters/cls-abc123/statuses", timeout=5).json()["items"]
    assert items[0]["adapter"] == "placement" and items[0]["data"]["namespace"] == "clusters-cls-abc123"

    patched = requests.patch(f"{admin}/clusters/cls-abc123", json={"spec": {"x": 1}}, timeout=5).json()
    assert patched["generation"] == 6
    put_status(hf, status_body(generation=6))
    put_status(hf, status_body(generation=9))
    reports = requests.get(f"{admin}/reports", timeout=5).json()
    assert [(r["cluster_id"], r["code"]) for r in reports] == [("cls-abc123", 201), ("cls-abc123", 204)]
    assert reports[0]["body"]["adapter"] == "pullsecret"
    requests.delete(f"{admin}/reports", timeout=5)
    assert hf.handle_admin("GET", "/reports", None) == (200, [])
    assert hf.handle_admin("POST", "/reset", None)[0] == 200
    assert hf.state()["clusters"] == {}


def test_faults_and_counters(hf: HyperFleetEmulator, book: FaultBook) -> None:
    url = f"{hf.url}{API}/clusters/cls-abc123"
    book.add({"service": "hyperfleet", "method": "getClusterById", "code": "503", "count": 2})
    assert [requests.get(url, timeout=5).status_code for _ in range(3)] == [503, 503, 200]
    failed = put_status(hf, status_body())
    assert failed.status_code == 201

    book.add({"service": "hyperfleet", "method": "putClusterStatuses", "code": "429", "rate": 1.0, "seed": 1})
    limited = put_status(hf, status_body())
    assert limited.status_code == 429 and limited.json()["status"] == 429
    book.clear()

    book.add({"service": "hyperfleet", "method": "getClusterById", "code": "reset", "count": 1})
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)
    book.add({"service": "hyperfleet", "method": "getClusters", "code": "timeout", "count": 1})
    with pytest.raises(requests.Timeout):
        requests.get(f"{hf.url}{API}/clusters", timeout=0.5)

    book.add({"service": "hyperfleet", "method": "getClusterStatuses", "latency_ms": 200})
    started = time.monotonic()
    assert requests.get(f"{url}/statuses", timeout=5).ok
    assert time.monotonic() - started >= 0.2

    calls = book.calls()["hyperfleet"]
    assert calls["getClusterById"] == 4 and calls["putClusterStatuses"] == 2
    assert book.faults_injected()["hyperfleet"] == {
        "getClusterById": 3,
        "getClusters": 1,
        "putClusterStatuses": 1,
    }
    assert hf.violations.list() == []
    codes = [r["code"] for r in hf.handle_admin("GET", "/reports", None)[1]]
    assert codes == [201, 429]


def test_post_mode_with_0_1_0_spec(book: FaultBook) -> None:
    hf = HyperFleetEmulator(book, status_method="POST")
    hf.start()
    try:
        hf.seed_cluster("c1", {"name": "cluster-one", "generation": 2})
        assert put_status(hf, status_body(generation=2), cluster="c1", method="PUT").status_code == 405
        assert put_status(hf, status_body(generation=2), cluster="c1", method="POST").status_code == 201
        cluster = requests.get(f"{hf.url}{API}/clusters/c1", timeout=5).json()
        types = [c["type"] for c in cluster["status"]["conditions"]]
        assert types == ["Ready", "Available", "PullsecretSuccessful"]
        listing = requests.get(f"{hf.url}{API}/clusters/c1/statuses?pageSize=5", timeout=5).json()
        assert listing["kind"] == "AdapterStatusList"
        assert [v["operation"] for v in hf.violations.list()] == ["putClusterStatuses"]  # not in 0.1.0
        assert hf.handle_admin("PUT", "/status_method", {"method": "PUT"}) == (200, {"status_method": "PUT"})
        conditions = hf.state()["clusters"]["c1"]["status"]["conditions"]
        assert [c["type"] for c in conditions][:2] == ["Reconciled", "LastKnownReconciled"]
        assert put_status(hf, status_body(generation=2), cluster="c1", method="PUT").status_code == 201
    finally:
        hf.stop()


@pytest.mark.parametrize(
    ("health_status", "reason", "recorded"),
    [
        ("True", "Healthy", False),
        ("False", "ResourcesSkipped", False),
        ("False", "ExecutionFailed:preconditions", False),
        ("True", "ResourcesSkipped", True),  # the product's old skipped report
        ("True", "ExecutionFailed:resources", True),
        ("False", "Healthy", True),
    ],
)
def test_health_status_and_reason_pair_as_in_the_framework_boilerplate(
    hf: HyperFleetEmulator, health_status: str, reason: str, recorded: bool
) -> None:
    # hyperfleet-adapter docs/adapter-authoring-guide.md, "The Health condition boilerplate".
    body = status_body(data={"sm_version": "1"})
    body["conditions"][2] = {"type": "Health", "status": health_status, "reason": reason, "message": "m"}
    assert put_status(hf, body).status_code == 201
    assert [c["kind"] for c in hf.conventions.list()] == (["health-reason"] if recorded else [])


def test_a_deeply_nested_cluster_is_served_as_the_go_api_would(hf: HyperFleetEmulator) -> None:
    """`_nested` seeds a cluster whose spec is nested N deep: Go's encoding/json takes up to 10,000 levels, so the
    API stores and serves it; get and list send it as text, recorded as an expected violation."""
    admin = f"{hf.url}/_emulator"
    requests.put(f"{admin}/clusters/cls-deep", json={"name": "deep", "generation": 3, "_nested": 5000}, timeout=5)
    served = requests.get(f"{hf.url}{API}/clusters/cls-deep", timeout=5)
    assert served.status_code == 200 and served.text.count('{"a": ') == 5000
    with pytest.raises(RecursionError):
        served.json()
    listed = requests.get(f"{hf.url}{API}/clusters", params={"order": "id asc"}, timeout=5)
    assert listed.status_code == 200 and listed.text.count('{"a": ') == 5000
    assert '"id": "cls-abc123"' in listed.text and '"id": "cls-deep"' in listed.text
    assert hf.violations.list() == [] and hf.expected_violations.list()
    requests.put(f"{admin}/clusters/cls-deep", json={"name": "deep"}, timeout=5)  # re-seeded plain
    assert requests.get(f"{hf.url}{API}/clusters/cls-deep", timeout=5).json()["spec"] == {}
