"""Service mode end to end: each cluster's own credentials from the Pull Secret Service emulator, stored, delivered,
rotated with one write each, and revoked on deletion so that the registry emulator refuses them.

Outcomes asserted: the Secret Manager, Kubernetes, service and registry emulators' state, the statuses the
HyperFleet API received, the calls each service counted, and the log text (no credential).
"""

from __future__ import annotations

import base64
import io
import json
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from pullsecret.operator import cli
from tests.integration.service_mode import (
    CID,
    ESO_TEMPLATE,
    KUBE_NAME,
    NAMESPACE,
    PROJECT,
    SECRET_ID,
    accounts,
    deliver,
    registry_accepts,
    service_env,
    stored,
)
from tests.support import Admin, seed_ready_cluster


def last_body(admin: Admin) -> dict[str, Any]:
    body: dict[str, Any] = [r for r in admin.reports() if r.get("cluster_id") == CID][-1]["body"]
    return body


def conditions(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in body["conditions"]}


def quay_auth(document: dict[str, Any], world: Any) -> str:
    auth: str = document["auths"][world.registry.hosts()["basic"]]["auth"]
    return auth


@pytest.mark.parametrize("auth", ["google-id-token", "token-file"])
def test_a_cluster_gets_its_own_credentials_stored_and_applied(
    make_adapter: Any, admin: Admin, world: Any, auth: str, capfd: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, auth))
    assert deliver(adapter) == "applied"
    document = stored(world)
    hosts = world.registry.hosts()
    assert set(document["auths"]) == {hosts["basic"], hosts["token"]}  # the service's two registries, nothing shared
    secret = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert json.loads(base64.b64decode(secret["data"][".dockerconfigjson"])) == document
    live = accounts(admin)
    assert set(live) == {"quay", "rhit"}
    body = last_body(admin)
    assert body["data"]["source"] == "pull-secret-service"
    assert {m["registry_id"] for m in body["data"]["minted"]} == {"quay", "rhit"}
    assert {c["registry"]: c["result"] for c in body["data"]["registry_checks"]} == {
        hosts["basic"]: "valid",
        hosts["token"]: "valid",
    }
    assert conditions(body)["Available"]["status"] == "True"
    # Neither a token nor a username reaches a status or a log line.
    out, err = capfd.readouterr()
    text = json.dumps(admin.reports()) + out + err
    for entry in document["auths"].values():
        user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
        assert password not in text and entry["auth"] not in text
        assert user not in text


def test_the_steady_state_asks_the_service_once_and_writes_nothing(make_adapter: Any, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token"))
    assert deliver(adapter) == "applied"
    world.book.reset_counters()
    assert deliver(adapter) == "unchanged"
    calls = admin.calls()
    assert calls.get("pullsecretservice", {}) == {"get": 1}
    assert not any(m in calls.get("secretmanager", {}) for m in ("AddSecretVersion", "CreateSecret"))
    assert len(world.secretmanager.versions(PROJECT, SECRET_ID)) == 1


def test_a_rotation_at_the_service_costs_one_version_and_one_kubernetes_write_and_then_the_old_is_refused(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token"))
    assert deliver(adapter) == "applied"
    old = stored(world)
    admin.call("POST", f"/pullsecretservice/clusters/{CID}/rotation", {"reason": "scheduled"})
    world.book.reset_counters()
    assert deliver(adapter) == "applied"  # the next Sentinel event of the cluster
    new = stored(world)
    assert new != old
    assert len(world.secretmanager.versions(PROJECT, SECRET_ID)) == 2
    calls = admin.calls()
    assert calls["secretmanager"].get("AddSecretVersion") == 1
    assert sum(n for m, n in calls["kubernetes"].items() if "apply" in m.lower() or "patch" in m.lower()) >= 1
    secret = world.kubernetes.get_secret(NAMESPACE, KUBE_NAME)
    assert json.loads(base64.b64decode(secret["data"][".dockerconfigjson"])) == new
    # Dual-credential period: both work until the service completes the rotation; then only the new one.
    assert registry_accepts(world, quay_auth(old, world)) and registry_accepts(world, quay_auth(new, world))
    admin.call("POST", f"/pullsecretservice/clusters/{CID}/rotation/complete")
    assert not registry_accepts(world, quay_auth(old, world))
    assert registry_accepts(world, quay_auth(new, world))


def test_deletion_revokes_at_the_service_after_the_secrets_are_gone(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token"))
    assert deliver(adapter) == "applied"
    document = stored(world)
    admin.patch_cluster(CID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z"})
    assert deliver(adapter, 2) == "finalized"
    body = last_body(admin)
    assert conditions(body)["Finalized"]["status"] == "True"
    assert body["data"]["revoked"] == "confirmed"
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None
    assert accounts(admin) == {}
    assert not registry_accepts(world, quay_auth(document, world))  # the revoked credential is refused
    # A repeat: the service confirms again (204 whether or not it held any, DDR §3.2.6), Finalized again.
    assert deliver(adapter, 2) == "finalized"
    assert last_body(admin)["data"]["revoked"] == "confirmed"


def test_a_failed_revocation_is_transient_and_reports_no_finalized(make_adapter: Any, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "google-id-token"), "RETRY_DEADLINE": "2"})
    assert deliver(adapter) == "applied"
    admin.patch_cluster(CID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z"})
    admin.fault(service="pullsecretservice", method="delete", code="503", count=20)
    before = len(admin.reports())
    assert deliver(adapter, 2) == "transient"
    assert len(admin.reports()) == before  # no Finalized=True without the service's confirmation
    assert set(accounts(admin)) == {"quay", "rhit"}


def test_a_soft_deleted_cluster_never_gets_new_credentials(make_adapter: Any, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID, deleted_time="2026-01-01T00:00:00Z")
    adapter = make_adapter(service_env(world, "google-id-token"))
    assert deliver(adapter) == "finalized"
    assert accounts(admin) == {}
    assert admin.calls().get("pullsecretservice", {}).get("post", 0) == 0


@pytest.mark.parametrize(
    ("code", "method", "outcome", "reason"),
    [
        ("503", "post", "transient", None),  # a first provisioning asks POST at once (no GET)
        ("500", "post", "transient", None),
        ("400", "post", "terminal", "PullSecretServiceRejected"),
    ],
)
def test_service_failures_are_transient_or_terminal_and_write_nothing(
    make_adapter: Any, admin: Admin, world: Any, code: str, method: str, outcome: str, reason: str | None
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "google-id-token"), "RETRY_DEADLINE": "2"})
    admin.fault(service="pullsecretservice", method=method, code=code, count=20)
    assert deliver(adapter) == outcome
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None
    if reason is not None:
        body = last_body(admin)
        health = conditions(body)["Health"]
        assert health["status"] == "False" and reason in health["reason"] + health.get("message", "")


def test_a_rotation_in_progress_conflict_is_transient(make_adapter: Any, admin: Admin, world: Any) -> None:
    """409 from the service (CNF-001, the DDR's answer while a rotation runs) on a steady event's GET: redelivered,
    nothing written (a first provisioning's 409: test_service_first_provisioning)."""
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "google-id-token"), "RETRY_DEADLINE": "2"})
    assert deliver(adapter) == "applied"
    admin.fault(service="pullsecretservice", method="get", code="409", count=20)
    assert deliver(adapter) == "transient"
    assert len(world.secretmanager.versions(PROJECT, SECRET_ID)) == 1


def test_external_secrets_delivery_in_service_mode_writes_no_kubernetes_secret(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    world.apply_terraform_iam(kubernetes_delivery="external-secrets")
    adapter = make_adapter(
        {
            **service_env(world, "token-file"),
            "KUBERNETES_DELIVERY": "external-secrets",
            "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": ESO_TEMPLATE,
        }
    )
    assert deliver(adapter) == "applied"
    assert set(stored(world)["auths"]) == {world.registry.hosts()["basic"], world.registry.hosts()["token"]}
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None
    assert last_body(admin)["data"]["source"] == "pull-secret-service"


def doctor_lines() -> tuple[int, dict[str, str]]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["doctor"])
    return code, {line.split()[1]: line for line in out.getvalue().splitlines() if line[:4] in ("ok  ", "FAIL")}


@pytest.mark.parametrize("auth", ["google-id-token", "token-file"])
def test_the_doctor_checks_the_service_answers_and_creates_nothing(
    make_adapter: Any, admin: Admin, world: Any, auth: str, restored_log: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_adapter(service_env(world, auth))  # sets the environment the CLI reads
    _code, lines = doctor_lines()
    assert lines["pull-secret-service"].startswith("ok"), lines
    assert "pull-secret-source" not in lines
    assert admin.get("/pullsecretservice/state").get("clusters") in ({}, [])  # the probe created nothing


def test_the_doctor_names_the_fix_when_the_service_refuses_the_token(
    make_adapter: Any, admin: Admin, world: Any, restored_log: None, tmp_path: Any
) -> None:
    wrong = tmp_path / "token"
    wrong.write_text("not-the-service-token")
    make_adapter({**service_env(world, "token-file"), "PULL_SECRET_SERVICE_TOKEN_FILE": str(wrong)})
    code, lines = doctor_lines()
    assert code == 1
    assert lines["pull-secret-service"].startswith("FAIL") and "CredentialsRefused" in lines["pull-secret-service"]


def test_the_doctor_fails_one_token_in_two_files_and_passes_two_tokens(
    make_adapter: Any, world: Any, restored_log: None, tmp_path: Any
) -> None:
    """Issue 50, item 4: the HyperFleet API's token stored again as the service's (another secret, another file: the
    settings cannot tell) reaches the service, which could replay it at the API. The doctor's service-token line
    reads both files and says so, never showing the token; two tokens of their own are green."""
    copy = tmp_path / "token"
    copy.write_text(Path(world.token_file).read_text())
    make_adapter({**service_env(world, "token-file"), "PULL_SECRET_SERVICE_TOKEN_FILE": str(copy)})
    code, lines = doctor_lines()
    assert code == 1
    line = lines["service-token"]
    assert line.startswith("FAIL") and "hold one token" in line, lines
    assert Path(world.token_file).read_text().strip() not in "".join(lines.values())
    make_adapter(service_env(world, "token-file"))
    _code, lines = doctor_lines()
    assert lines["service-token"].startswith("ok") and "the two files hold different tokens" in lines["service-token"]


def test_a_token_rotated_in_its_file_is_read_again_after_the_services_401(
    make_adapter: Any, admin: Admin, world: Any, tmp_path: Any
) -> None:
    """token-file: the function caches the token; a 401 makes it read the file once more and try again."""
    old, new = "pss-old-" + "a" * 24, "pss-new-" + "b" * 24
    token_file = tmp_path / "token"
    token_file.write_text(old)
    world.pullsecretservice.access.accept_token(old, "system:serviceaccount:hyperfleet:pullsecret-adapter")
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "token-file"), "PULL_SECRET_SERVICE_TOKEN_FILE": str(token_file)})
    assert deliver(adapter) == "applied"
    # The service's token is rotated and the new one lands in the mounted file: the cached one is refused once.
    world.pullsecretservice.access.revoke_token(old)
    world.pullsecretservice.access.accept_token(new, "system:serviceaccount:hyperfleet:pullsecret-adapter")
    token_file.write_text(new)
    world.book.reset_counters()
    assert deliver(adapter) == "unchanged"
    assert admin.calls()["pullsecretservice"]["get"] == 2  # refused, then accepted with the file's new token


def test_a_refused_token_is_transient_and_writes_nothing(
    make_adapter: Any, admin: Admin, world: Any, tmp_path: Any
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("pss-never-accepted-token-value")
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "token-file"), "PULL_SECRET_SERVICE_TOKEN_FILE": str(token_file)})
    assert deliver(adapter) == "transient"
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None
    assert [r for r in admin.reports() if r.get("cluster_id") == CID] == []  # our identity, not the cluster's fault


def test_the_doctor_fails_a_service_url_that_reaches_no_route_and_names_the_fix(
    make_adapter: Any, admin: Admin, world: Any, restored_log: None
) -> None:
    """A 404 without HYPERFLEET-NTF-001 (here the service's own NTF-000, no endpoint) is a wrong URL, not "fine"."""
    make_adapter({**service_env(world, "token-file"), "PULL_SECRET_SERVICE_URL": world.pullsecretservice.url + "/v1"})
    code, lines = doctor_lines()
    assert code == 1
    line = lines["pull-secret-service"]
    assert line.startswith("FAIL") and "EndpointNotFound" in line and "HYPERFLEET-NTF-000" in line, line
    out = io.StringIO()
    with redirect_stdout(out):
        cli.main(["doctor"])
    assert "set it to the service's base URL" in out.getvalue()


def test_a_retry_after_of_a_minute_is_capped_and_the_event_ends_within_its_deadline(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    """The service's 429 asks for 60 s (DDR §3.5); the wait is capped as the HyperFleet client's (budget.py)."""
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "token-file"))
    admin.fault(service="pullsecretservice", method="get", code="429", count=1)
    started = time.monotonic()
    assert deliver(adapter) == "applied"
    assert time.monotonic() - started < 8.0  # RETRY_DEADLINE in function_env; main waited the full minute


def test_a_trickled_answer_is_cut_off_at_the_events_deadline(make_adapter: Any, admin: Admin, world: Any) -> None:
    """The body one byte every half second: no socket read times out, the event's deadline still ends the call."""
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "token-file"))
    assert deliver(adapter) == "applied"
    admin.fault(service="pullsecretservice", method="get", code="drip", count=1)  # the held credentials' answer
    started = time.monotonic()
    assert deliver(adapter) == "transient"
    assert time.monotonic() - started < 8.0 + 2.0  # RETRY_DEADLINE, and one half-second gap of the trickle
    assert len(world.secretmanager.versions(PROJECT, SECRET_ID)) == 1  # nothing written on a cut-off read
