"""The Pull Secret Service emulator answers as the HyperFleet design record says (emulators/contracts/
pull-secret-service.md), over real HTTP, and the registry emulator accepts exactly the service's live credentials."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from emulators.faults import FaultBook
from emulators.hostile import MOVED_TO
from emulators.metadata import MetadataEmulator
from emulators.pullsecretservice import PullSecretServiceEmulator
from emulators.registry import SERVICE, RegistryEmulator

CLUSTER = "cls-abc123def456"
TOKEN = "adapter-sa-token-0123456789"  # an opaque ServiceAccount token the emulator's TokenReview accepts
ADAPTER = "system:serviceaccount:hyperfleet-system:gcp-adapter"
SA = "pullsecret-runtime@hf-demo-project.iam.gserviceaccount.com"
AUDIENCE = "https://pull-secret-service.example"
BODY = {"cluster_id": CLUSTER, "cloud_provider": "gcp", "region": "us-central1", "registries": ["quay", "rhit"]}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
QUAY_ROBOT = re.compile(r"^redhat-openshift\+hyperfleet_gcp_uscentral1_[0-9a-f]{32}$")


@dataclass
class World:
    book: FaultBook
    registry: RegistryEmulator
    metadata: MetadataEmulator
    pss: PullSecretServiceEmulator
    http: requests.Session  # trusts the registry's CA

    @property
    def base(self) -> str:
        return f"{self.pss.url}/v1/clusters/{CLUSTER}/pull-secrets"

    def call(self, method: str, url: str, token: str | None = TOKEN, **kwargs: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return requests.request(method, url, headers=headers, timeout=5, **kwargs)

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        answer = requests.request(method, f"{self.pss.url}/_emulator{path}", json=body, timeout=5)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def id_token(self, audience: str) -> str:
        answer = requests.get(
            f"{self.metadata.url}/computeMetadata/v1/instance/service-accounts/default/identity",
            params={"audience": audience, "format": "full"},
            headers={"Metadata-Flavor": "Google"},
            timeout=5,
        )
        assert answer.status_code == 200
        return answer.text


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    book = FaultBook()
    registry = RegistryEmulator(book)
    metadata = MetadataEmulator(book, service_account=SA)
    registry.start()
    metadata.start()
    # quay.io answers Basic (the basic host); registry.redhat.io sends clients to its sso (the token host). The hosts
    # are read when a pull secret is built, as a stack that constructs the emulators before they listen passes them.
    pss = PullSecretServiceEmulator(
        book,
        registry_hosts=lambda: {"quay": registry.hosts()["basic"], "rhit": registry.hosts()["token"]},
        registry=registry,
        bearer_tokens={TOKEN: ADAPTER},
    )
    pss.start()
    ca = Path(tmp_path_factory.mktemp("pss")) / "registry-ca.pem"
    ca.write_bytes(registry.ca_pem)
    http = requests.Session()
    http.trust_env = False
    http.verify = str(ca)
    try:
        yield World(book, registry, metadata, pss, http)
    finally:
        pss.stop()
        metadata.stop()
        registry.stop()


@pytest.fixture
def svc(running: World) -> World:
    running.book.clear()
    running.book.reset_counters()
    running.registry.reset()
    running.pss.reset()
    running.pss.access.set_grants(None)
    running.pss.access.trust_id_tokens(running.metadata.id_tokens.jwks, audience=AUDIENCE, emails=[SA])
    return running


def registry_accepts(svc: World, credential: dict[str, Any], pull_secret: dict[str, Any] | None = None) -> bool:
    """Log in to the registry emulator with a credential as a client of that registry would (tests/emulators/
    test_registry.py): Basic on quay's host; for rhit, Basic at the sso for a token, then the token at the registry."""
    hosts = svc.registry.hosts()
    user, password = credential["username"], credential["token"]
    basic = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    if credential["registry_id"] == "quay":
        return bool(svc.http.get(f"https://{hosts['basic']}/v2/", headers={"Authorization": basic}, timeout=5).ok)
    got = svc.http.get(
        f"https://{hosts['sso']}/auth", params={"service": SERVICE}, headers={"Authorization": basic}, timeout=5
    )
    if got.status_code != 200:
        return False
    bearer = {"Authorization": f"Bearer {got.json()['token']}"}
    return svc.http.get(f"https://{hosts['token']}/v2/", headers=bearer, timeout=5).status_code == 200


def credentials_of(svc: World, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """Each credential of an answer with its token, taken from the pull secret's `auth` for its registry's host."""
    hosts = {"quay": svc.registry.hosts()["basic"], "rhit": svc.registry.hosts()["token"]}
    out = []
    for cred in answer["credentials"]:
        auth = base64.b64decode(answer["pull_secret"]["auths"][hosts[cred["registry_id"]]]["auth"]).decode()
        user, _, token = auth.partition(":")
        assert user == cred["username"]
        out.append({**cred, "token": token})
    return out


def assert_problem(answer: requests.Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == "application/problem+json"
    body: dict[str, Any] = answer.json()
    assert {"type", "title", "status", "detail", "code", "timestamp", "trace_id", "instance"} <= set(body)
    assert body["status"] == status and body["code"] == code
    assert body["type"].startswith("https://api.hyperfleet.io/errors/")
    assert RFC3339.match(body["timestamp"])
    return body


def assert_generated(svc: World, body: dict[str, Any]) -> None:
    """The §3.2.1 200 shape: cluster_id, a dockerconfigjson per registry host, per-registry credentials."""
    hosts = svc.registry.hosts()
    assert set(body) == {"cluster_id", "pull_secret", "credentials", "created_at"}
    assert body["cluster_id"] == CLUSTER and RFC3339.match(body["created_at"])
    assert set(body["pull_secret"]) == {"auths"}
    assert set(body["pull_secret"]["auths"]) == {hosts["basic"], hosts["token"]}
    by_registry = {c["registry_id"]: c for c in body["credentials"]}
    assert set(by_registry) == {"quay", "rhit"}
    for cred in body["credentials"]:
        assert set(cred) == {"registry_id", "username", "created_at", "expires_at"}
        assert RFC3339.match(cred["created_at"]) and cred["expires_at"] is None
    assert QUAY_ROBOT.match(by_registry["quay"]["username"])


def generate(svc: World) -> dict[str, Any]:
    answer = svc.call("POST", svc.base, json=BODY)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_generate_is_idempotent_and_mints_credentials_the_registry_accepts(svc: World) -> None:
    first = generate(svc)
    assert_generated(svc, first)
    rhit = next(c for c in first["credentials"] if c["registry_id"] == "rhit")
    assert rhit["username"] == "|hyp-cls-abc123def456"  # the DDR's example for cluster cls-abc123def456
    second = generate(svc)
    assert second["credentials"] == first["credentials"]
    assert second["pull_secret"] == first["pull_secret"]
    assert all(registry_accepts(svc, c) for c in credentials_of(svc, first))


def test_get_is_404_ntf_001_until_generated_then_the_same_pull_secret(svc: World) -> None:
    missing = assert_problem(svc.call("GET", svc.base), 404, "HYPERFLEET-NTF-001")
    assert missing["cluster_id"] == CLUSTER and missing["instance"] == f"/v1/clusters/{CLUSTER}/pull-secrets"
    generated = generate(svc)
    answer = svc.call("GET", svc.base)
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"cluster_id", "pull_secret", "created_at", "last_rotated_at"}  # §3.2.2
    assert body["pull_secret"] == generated["pull_secret"] and body["last_rotated_at"] is None
    with_metadata = svc.call("GET", svc.base, params={"include_metadata": "true"}).json()
    assert with_metadata["credentials"] == generated["credentials"]


def test_delete_revokes_at_the_registry_and_is_idempotent(svc: World) -> None:
    creds = credentials_of(svc, generate(svc))
    deleted = svc.call("DELETE", svc.base)
    assert deleted.status_code == 204 and deleted.content == b""
    assert_problem(svc.call("GET", svc.base), 404, "HYPERFLEET-NTF-001")
    assert svc.call("DELETE", svc.base).status_code == 204  # §3.2.6: deleting nothing is 204
    assert not any(registry_accepts(svc, c) for c in creds)
    assert svc.pss.state()["clusters"] == {}


def test_a_rotation_keeps_both_sets_valid_until_it_completes(svc: World) -> None:
    old = credentials_of(svc, generate(svc))
    created = svc.call("POST", f"{svc.base}/rotations", json={"reason": "scheduled", "force_immediate": False})
    assert created.status_code == 201
    rotation = created.json()
    assert rotation["status"] == "pending" and rotation["cluster_id"] == CLUSTER  # §3.2.3 201 body
    assert {"rotation_id", "reason", "force_immediate", "created_at", "estimated_completion"} <= set(rotation)
    url = f"{svc.base}/rotations/{rotation['rotation_id']}"
    status = svc.call("GET", url).json()
    assert status["status"] == "in_progress" and status["progress"]["phase"] == "dual_credential_period"
    new = credentials_of(svc, svc.call("GET", svc.base, params={"include_metadata": "true"}).json())
    assert {c["username"] for c in new}.isdisjoint({c["username"] for c in old})
    assert all(registry_accepts(svc, c) for c in old + new)  # the dual-credential period

    svc.admin("POST", f"/clusters/{CLUSTER}/rotation/complete")
    assert not any(registry_accepts(svc, c) for c in old)
    assert all(registry_accepts(svc, c) for c in new)
    done = svc.call("GET", url).json()
    assert done["status"] == "completed" and RFC3339.match(done["completed_at"])
    assert svc.call("GET", svc.base).json()["last_rotated_at"] == done["completed_at"]
    assert generate(svc)["credentials"] == [{k: v for k, v in c.items() if k != "token"} for c in new]


def test_generate_and_a_second_rotation_conflict_while_a_rotation_is_in_progress(svc: World) -> None:
    generate(svc)
    rotation = svc.admin("POST", f"/clusters/{CLUSTER}/rotation", {"reason": "compromise"})
    assert rotation["status"] == "in_progress"
    body = assert_problem(svc.call("POST", svc.base, json=BODY), 409, "HYPERFLEET-CNF-001")
    assert body["rotation_id"] == rotation["rotation_id"] and body["rotation_status"] == "in_progress"
    again = svc.call("POST", f"{svc.base}/rotations", json={"reason": "manual"})
    assert assert_problem(again, 409, "HYPERFLEET-CNF-002")["rotation_id"] == rotation["rotation_id"]
    state = svc.pss.state()["clusters"][CLUSTER]
    assert len(state["credentials"]) == 2 and len(state["rotating"]) == 2
    assert TOKEN not in repr(svc.pss.state()) and "pss-" not in repr(svc.pss.state())  # no token in the state


def test_delete_during_a_rotation_cancels_it_and_revokes_both_sets(svc: World) -> None:
    old = credentials_of(svc, generate(svc))
    svc.admin("POST", f"/clusters/{CLUSTER}/rotation")
    new = credentials_of(svc, svc.call("GET", svc.base, params={"include_metadata": "true"}).json())
    assert svc.call("DELETE", svc.base).status_code == 204
    assert not any(registry_accepts(svc, c) for c in old + new)
    listed = svc.call("GET", f"{svc.base}/rotations").json()
    assert [r["status"] for r in listed["rotations"]] == ["cancelled"]


def test_delete_during_a_rotation_can_answer_409_cnf_002(running: World) -> None:
    hosts = {"quay": "quay.example", "rhit": "registry.example"}
    pss = PullSecretServiceEmulator(
        running.book, registry_hosts=hosts, bearer_tokens={TOKEN: ADAPTER}, delete_during_rotation="conflict"
    )
    pss.start()
    try:
        base = f"{pss.url}/v1/clusters/{CLUSTER}/pull-secrets"
        assert running.call("POST", base, json=BODY).status_code == 200
        assert running.call("POST", f"{base}/rotations", json={"reason": "manual"}).status_code == 201
        body = assert_problem(running.call("DELETE", base), 409, "HYPERFLEET-CNF-002")
        assert body["retry_after_seconds"] == 300 and body["rotation_status"] == "in_progress"
    finally:
        pss.stop()


def test_force_immediate_rotation_deletes_the_old_set_at_once(svc: World) -> None:
    old = credentials_of(svc, generate(svc))
    created = svc.call("POST", f"{svc.base}/rotations", json={"reason": "compromise", "force_immediate": True})
    assert created.status_code == 201
    assert svc.call("GET", f"{svc.base}/rotations/{created.json()['rotation_id']}").json()["status"] == "completed"
    assert not any(registry_accepts(svc, c) for c in old)
    assert generate(svc)["credentials"] != [{k: v for k, v in c.items() if k != "token"} for c in old]


def test_rotations_are_listed_newest_first_with_a_cursor(svc: World) -> None:
    generate(svc)
    ids = []
    for _ in range(3):
        ids.append(svc.admin("POST", f"/clusters/{CLUSTER}/rotation")["rotation_id"])
        svc.admin("POST", f"/clusters/{CLUSTER}/rotation/complete")
    first = svc.call("GET", f"{svc.base}/rotations", params={"limit": "2"}).json()
    assert [r["rotation_id"] for r in first["rotations"]] == ids[::-1][:2]
    assert first["pagination"]["has_more"] is True and first["pagination"]["total_count"] == 3
    cursor = first["pagination"]["next_cursor"]
    second = svc.call("GET", f"{svc.base}/rotations", params={"limit": "2", "cursor": cursor}).json()
    assert [r["rotation_id"] for r in second["rotations"]] == [ids[0]]
    assert second["pagination"] == {"next_cursor": None, "has_more": False, "total_count": 3}
    assert_problem(svc.call("GET", f"{svc.base}/rotations", params={"limit": "101"}), 400, "HYPERFLEET-VAL-001")
    unknown = f"{svc.pss.url}/v1/clusters/cls-000000000000/pull-secrets/rotations"
    assert_problem(svc.call("GET", unknown), 404, "HYPERFLEET-NTF-001")


def test_no_token_and_an_unknown_token_are_401(svc: World) -> None:
    missing = assert_problem(svc.call("GET", svc.base, token=None), 401, "HYPERFLEET-AUT-001")
    assert missing["title"] == "Unauthorized"
    assert svc.call("GET", svc.base, token=None).headers["WWW-Authenticate"].startswith("Bearer ")
    assert_problem(svc.call("POST", svc.base, token="not-the-token", json=BODY), 401, "HYPERFLEET-AUT-002")
    assert svc.pss.state()["clusters"] == {}  # nothing was generated


def test_an_identity_without_the_permission_is_403(svc: World) -> None:
    svc.pss.access.set_grants({ADAPTER: ["pull-secrets:get"]})  # RBAC: get only
    assert_problem(svc.call("POST", svc.base, json=BODY), 403, "HYPERFLEET-AUZ-001")
    assert_problem(svc.call("GET", svc.base), 404, "HYPERFLEET-NTF-001")  # get is allowed


def test_google_id_tokens_need_the_audience_and_an_allowed_email(svc: World) -> None:
    assert svc.call("POST", svc.base, token=svc.id_token(AUDIENCE), json=BODY).status_code == 200
    wrong = svc.call("GET", svc.base, token=svc.id_token("https://another-service.example"))
    assert_problem(wrong, 401, "HYPERFLEET-AUT-002")
    svc.pss.trust_id_tokens(svc.metadata.id_tokens.jwks, audience=AUDIENCE, emails=["someone-else@example.com"])
    assert_problem(svc.call("GET", svc.base, token=svc.id_token(AUDIENCE)), 403, "HYPERFLEET-AUZ-001")


def test_injected_faults_answer_problem_json_and_then_pass(svc: World) -> None:
    svc.book.add({"service": "pullsecretservice", "method": "get", "code": "503", "count": 1})
    assert_problem(svc.call("GET", svc.base), 503, "HYPERFLEET-SVC-001")
    assert_problem(svc.call("GET", svc.base), 404, "HYPERFLEET-NTF-001")
    svc.book.add({"service": "pullsecretservice", "method": "post", "code": "503", "count": 1, "lost_response": True})
    assert_problem(svc.call("POST", svc.base, json=BODY), 503, "HYPERFLEET-SVC-001")
    applied = svc.pss.state()["clusters"][CLUSTER]["credentials"]  # the lost answer's call took effect
    assert generate(svc)["credentials"] == applied
    assert svc.book.calls()["pullsecretservice"]["get"] == 2


def test_hostile_faults_echo_the_authorization_header_or_redirect_elsewhere(svc: World) -> None:
    """emulators/hostile.py: a 400 quoting the header (whole, or N dots then the credential alone), a 3xx to another
    host with the same path and query."""
    svc.book.add({"service": "pullsecretservice", "method": "post", "code": "echo-authorization", "count": 1})
    echoed = svc.call("POST", svc.base, json=BODY)
    assert_problem(echoed, 400, "HYPERFLEET-INT-001")
    assert f"Authorization: Bearer {TOKEN}" in echoed.json()["detail"]
    svc.book.add({"service": "pullsecretservice", "method": "post", "code": "echo-authorization:187", "count": 1})
    assert svc.call("POST", svc.base, json=BODY).json()["detail"].startswith("." * 187 + TOKEN)
    svc.book.add({"service": "pullsecretservice", "method": "get", "code": "307", "count": 1})
    moved = svc.call("GET", svc.base + "?include_metadata=true", allow_redirects=False)
    assert moved.status_code == 307
    assert moved.headers["Location"] == f"{MOVED_TO}/v1/clusters/{CLUSTER}/pull-secrets?include_metadata=true"
    assert_problem(svc.call("GET", svc.base), 404, "HYPERFLEET-NTF-001")  # spent: the service answers again


def test_a_registry_failure_fails_the_whole_generate_and_the_retry_reuses_what_was_made(svc: World) -> None:
    svc.book.add({"service": "pullsecretservice", "method": "create.rhit", "code": "500", "count": 1})
    failed = svc.call("POST", svc.base, json=BODY)
    assert failed.status_code == 500 and failed.headers["Content-Type"] == "application/problem+json"
    assert failed.json()["errors"][0]["code"] == "EXTERNAL_API_ERROR"
    orphan = svc.pss.state()["clusters"][CLUSTER]["credentials"]
    assert [c["registry_id"] for c in orphan] == ["quay"]  # §3.3.1: the Quay credential stays
    retried = generate(svc)
    assert_generated(svc, retried)
    assert next(c for c in retried["credentials"] if c["registry_id"] == "quay") == orphan[0]


def test_a_generate_calls_the_registry_apis_one_after_the_other_and_a_retrieve_calls_none(svc: World) -> None:
    # DDR §1.4 Principle 1 Example 3: GeneratePullSecret's loop creates each registry's credential in turn, so a
    # failed Quay creation returns before RHIT's API is called (in parallel, both would be); each create is a call
    # of its own (its latency on the critical path of a first POST), and a retrieve makes none.
    svc.book.add({"service": "pullsecretservice", "method": "create.quay", "code": "500", "count": 1})
    assert svc.call("POST", svc.base, json=BODY).status_code == 500
    calls = svc.book.calls()["pullsecretservice"]
    assert (calls.get("create.quay"), calls.get("create.rhit", 0)) == (1, 0)
    assert svc.pss.state()["clusters"][CLUSTER]["credentials"] == []
    generate(svc)
    generate(svc)  # generate-or-retrieve: every credential is held, no registry API is called
    calls = svc.book.calls()["pullsecretservice"]
    assert (calls["post"], calls["create.quay"], calls["create.rhit"]) == (3, 2, 1)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**BODY, "cloud_provider": "invalidprovider"}, "cloud_provider"),
        ({k: v for k, v in BODY.items() if k != "region"}, "region"),
        ({**BODY, "cluster_id": "cls-000000000000"}, "cluster_id"),
        ({**BODY, "registries": ["quay", "docker.io"]}, "registries"),
        ([BODY], "body"),
    ],
)
def test_an_invalid_body_is_400_val_001_naming_the_field(svc: World, body: Any, field: str) -> None:
    answer = assert_problem(svc.call("POST", svc.base, json=body), 400, "HYPERFLEET-VAL-001")
    assert answer["errors"][0]["field"] == field
    assert svc.pss.state()["clusters"] == {}


def test_a_body_that_is_not_json_and_a_bad_cluster_id_are_400(svc: World) -> None:
    assert_problem(svc.call("POST", svc.base, data=b"{not json"), 400, "HYPERFLEET-VAL-001")
    bad = f"{svc.pss.url}/v1/clusters/NOT_A_CLUSTER/pull-secrets"
    assert assert_problem(svc.call("GET", bad), 400, "HYPERFLEET-VAL-001")["errors"][0]["field"] == "cluster_id"


def test_admin_completion_without_a_rotation_is_refused_and_probes_need_no_token(svc: World) -> None:
    generate(svc)
    answer = requests.post(f"{svc.pss.url}/_emulator/clusters/{CLUSTER}/rotation/complete", timeout=5)
    assert answer.status_code == 409
    assert requests.get(f"{svc.pss.url}/healthz", timeout=5).json() == {"status": "ok"}
    assert requests.get(f"{svc.pss.url}/readyz", timeout=5).json()["status"] == "ready"
    assert_problem(svc.call("GET", f"{svc.pss.url}/v1/clusters"), 404, "HYPERFLEET-NTF-000")
