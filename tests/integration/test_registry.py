"""Registry credential verification end to end: the function against the registry emulator's HTTPS hosts.

Each result kind in `report` and `enforce`, the steady state (no registry call, counted by the emulator),
one handshake per new fingerprint under 50 concurrent duplicate deliveries, and where credentials go.
The pull secrets here name only the emulator's hosts (`127.0.0.1:PORT`): the platform source holds one skipped entry.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from emulators.registry import DEFAULT_PASSWORD, DEFAULT_REFRESH_TOKEN, DEFAULT_USER
from pullsecret import configured
from pullsecret.handler import Adapter
from tests.support import (
    Admin,
    eventarc_attributes,
    gcp_cluster,
    pubsub_envelope,
    quiet_platform_source,
    sentinel_event,
)

PROJECT = "hf-demo-project"
GOOD = base64.b64encode(f"{DEFAULT_USER}:{DEFAULT_PASSWORD}".encode()).decode()
WRONG_PASSWORD = "Wr0ng-Registry-Passw0rd"
WRONG = base64.b64encode(f"{DEFAULT_USER}:{WRONG_PASSWORD}".encode()).decode()
BOGUS_TOKEN = "bogus-registry-token-0123456789"
CREDENTIAL_FORMS = (
    GOOD,
    DEFAULT_PASSWORD,
    f"{DEFAULT_USER}:{DEFAULT_PASSWORD}",
    WRONG,
    WRONG_PASSWORD,
    DEFAULT_REFRESH_TOKEN,
    BOGUS_TOKEN,
)


def seed(admin: Admin, cluster_id: str, auths: dict[str, Any], generation: int = 1) -> None:
    body = gcp_cluster(cluster_id, generation=generation)
    body["spec"]["pullSecret"] = {"data": {"auths": auths}}
    admin.seed_cluster(cluster_id, body)
    for adapter in ("validation", "dns", "placement"):
        admin.seed_status(cluster_id, adapter, {"observed_generation": generation})
    admin.call("PUT", f"/kubernetes/namespaces/clusters-{cluster_id}")


def deliver(adapter: Adapter, cluster_id: str, generation: int = 1) -> str:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cluster_id, generation))).result


def last_body(admin: Admin, cluster_id: str) -> dict[str, Any]:
    reports = [r for r in admin.reports() if r.get("cluster_id") == cluster_id]
    assert reports, "no status was reported"
    body: dict[str, Any] = reports[-1]["body"]
    return body


QUIET_HOST = "platform-quiet.example"


def own_checks(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The status's registry checks, without the quiet platform source's skipped entry (quiet_platform_source)."""
    checks = body["data"].get("registry_checks")
    return None if checks is None else [c for c in checks if c["registry"] != QUIET_HOST]


def conditions(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in body["conditions"]}


def registry_calls(world: Any) -> dict[str, int]:
    return dict(world.book.calls().get("registry", {}))


def assert_no_leak(world: Any, admin: Admin, out: str) -> None:
    """No credential, no token the emulator issued, in the function's output or any status it reported."""
    texts = [out, json.dumps(admin.reports())]
    forms = [*CREDENTIAL_FORMS, *world.registry.issued_tokens()]
    for text in texts:
        for form in forms:
            assert form not in text, f"a credential or token ({len(form)} characters) leaked"


@pytest.fixture
def make_adapter(function_env: dict[str, str], world: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Adapter]:
    # The shared platform pull secret names real registries: one entry verification skips instead, at a host no
    # test's own pull secret names (cloud.openshift.com is one of the cases).
    quiet_platform_source(world, QUIET_HOST)
    monkeypatch.setenv("REGISTRY_SKIP_HOSTS", f"cloud.openshift.com,{QUIET_HOST}")

    def build(mode: str, **env: str) -> Adapter:
        monkeypatch.setenv("REGISTRY_VERIFICATION", mode)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        return Adapter.from_environment()

    return build


# kind -> (auths builder over the emulator's hosts, fault rules, expected result, detail fragment)
KINDS: dict[str, tuple[Callable[[dict[str, str]], dict[str, Any]], list[dict[str, Any]], str, str]] = {
    "valid-token": (lambda h: {h["token"]: {"auth": GOOD}}, [], "valid", "accepted"),
    "valid-basic": (lambda h: {f"https://{h['basic']}/v1/": {"auth": GOOD}}, [], "valid", "accepted"),
    "valid-identity-token": (
        lambda h: {f"{h['token']}/team": {"identitytoken": DEFAULT_REFRESH_TOKEN}},
        [],
        "valid",
        "accepted",
    ),
    "anonymous": (lambda h: {h["anonymous"]: {"auth": GOOD}}, [], "anonymous", "without a credential"),
    "rejected-by-token-service": (lambda h: {h["token"]: {"auth": WRONG}}, [], "rejected", "token service"),
    "rejected-by-registry": (
        lambda h: {h["token"]: {"registrytoken": BOGUS_TOKEN}},
        [],
        "rejected",
        "the registry refused",
    ),
    "rejected-basic": (
        lambda h: {h["basic"]: {"username": DEFAULT_USER, "password": WRONG_PASSWORD}},
        [],
        "rejected",
        "401",
    ),
    "unreachable-dead": (lambda h: {h["dead"]: {"auth": GOOD}}, [], "unreachable", "connection failed"),
    "unreachable-token-service-5xx": (
        lambda h: {h["token"]: {"auth": GOOD}},
        [{"service": "registry", "method": "sso.token", "code": "503", "count": 5}],
        "unreachable",
        "answered 503",
    ),
    "unreachable-slow": (
        lambda h: {h["basic"]: {"auth": GOOD}},
        [{"service": "registry", "method": "basic.ping", "code": "timeout", "count": 5}],
        "unreachable",
        "timed out",
    ),
    "skipped-not-a-registry": (
        lambda h: {"cloud.openshift.com": {"auth": GOOD}},
        [],
        "skipped",
        "REGISTRY_SKIP_HOSTS",
    ),
}


@pytest.mark.parametrize("mode", ["report", "enforce"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_result_kind_end_to_end(
    make_adapter: Callable[..., Adapter],
    admin: Admin,
    world: Any,
    capfd: pytest.CaptureFixture[str],
    kind: str,
    mode: str,
) -> None:
    auths_of, faults, expected, detail = KINDS[kind]
    cid = f"cls-reg-{mode[0]}-{kind}"[:40]
    auths = auths_of(world.registry.hosts())
    seed(admin, cid, auths)
    for fault in faults:
        admin.fault(**fault)
    adapter = make_adapter(mode, REGISTRY_TIMEOUT="0.5")

    result = deliver(adapter, cid)

    body = last_body(admin, cid)
    conds = conditions(body)
    (registry,) = auths
    checks = own_checks(body)
    # The status holds the result kind; what answered, and how, is in the logs (a reason only for a skip).
    if expected == "skipped":
        assert checks == [{"registry": registry, "result": expected, "reason": checks[0]["reason"]}], body["data"]
        assert detail in checks[0]["reason"]
    else:
        assert checks == [{"registry": registry, "result": expected}], body["data"]
    assert body["data"]["registry_verification"] == mode
    versions = world.secretmanager.versions(PROJECT, f"hyperfleet-{cid}-pull-secret")
    kube = world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret")
    if mode == "enforce" and expected == "rejected":
        # The registry itself refused the credential: terminal, the registry named, nothing written.
        assert result == "terminal"
        assert versions == [] and world.secretmanager.secret(PROJECT, f"hyperfleet-{cid}-pull-secret") is None
        assert kube is None
        assert conds["Applied"]["status"] == "False" and conds["Available"]["status"] == "False"
        assert conds["Applied"]["reason"] == "RegistryCredentialRejected"
        assert registry in conds["Applied"]["message"] and "nothing was written" in conds["Applied"]["message"]
        calls = world.book.calls()
        assert not {"CreateSecret", "AddSecretVersion"} & set(calls.get("secretmanager", {}))
    else:
        # Stored and applied as without verification; only a refusal (in report mode) touches Health.
        assert result == "applied"
        assert len(versions) == 1 and kube is not None
        assert conds["Available"]["status"] == "True" and conds["Applied"]["status"] == "True"
        if expected == "rejected":
            assert conds["Health"]["status"] == "False"
            assert conds["Health"]["reason"] == "ExecutionFailed:registry"
            assert registry in conds["Health"]["message"]
        else:
            assert conds["Health"]["status"] == "True", conds["Health"]
    out, err = capfd.readouterr()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    verify_lines = [line for line in lines if line.get("operation") == "registry.verify"]
    if expected != "skipped":
        assert [line["result"] for line in verify_lines] == [expected]
        assert detail in verify_lines[0]["message"]
    assert_no_leak(world, admin, out + err)


def test_off_makes_no_registry_call_and_reports_nothing(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any
) -> None:
    hosts = world.registry.hosts()
    seed(admin, "cls-reg-off", {hosts["token"]: {"auth": WRONG}})
    world.book.reset_counters()
    assert deliver(make_adapter("off"), "cls-reg-off") == "applied"
    assert registry_calls(world) == {}
    body = last_body(admin, "cls-reg-off")
    assert "registry_checks" not in body["data"] and conditions(body)["Health"]["status"] == "True"


def test_steady_state_makes_no_registry_call_and_a_change_verifies_only_the_new_fingerprint(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    hosts = world.registry.hosts()
    auths = {hosts["token"]: {"auth": GOOD}, hosts["basic"]: {"auth": GOOD}, hosts["anonymous"]: {"auth": GOOD}}
    cid = "cls-reg-steady"
    seed(admin, cid, auths)
    adapter = make_adapter("report")
    assert deliver(adapter, cid) == "applied"
    first = own_checks(last_body(admin, cid))
    assert {c["registry"]: c["result"] for c in first} == {
        hosts["token"]: "valid",
        hosts["basic"]: "valid",
        hosts["anonymous"]: "anonymous",
    }

    world.book.reset_counters()
    for _ in range(3):
        assert deliver(adapter, cid) == "unchanged"
    assert registry_calls(world) == {}, "the steady state called a registry"
    assert own_checks(last_body(admin, cid)) == first

    # A rotation of one registry's credential: that fingerprint alone is verified, with the challenge the
    # first ping of that host returned (token, then /v2/ with the token).
    rotated = dict(auths)
    rotated[hosts["token"]] = {"auth": GOOD, "email": "rotated@example.com"}
    admin.patch_cluster(
        cid, {"generation": 2, "spec": {**gcp_cluster(cid)["spec"], "pullSecret": {"data": {"auths": rotated}}}}
    )
    for name in ("validation", "dns", "placement"):
        admin.seed_status(cid, name, {"observed_generation": 2})
    assert deliver(adapter, cid, 2) == "applied"
    assert registry_calls(world) == {"token.ping": 1, "sso.token": 1}

    # A wrong credential on the known challenge is refused once and never presented again in that handshake
    # (registries lock accounts after failed logins); the next handshake for this host pings afresh.
    world.book.reset_counters()
    rotated[hosts["token"]] = {"auth": WRONG}
    spec = {**gcp_cluster(cid)["spec"], "pullSecret": {"data": {"auths": rotated}}}
    admin.patch_cluster(cid, {"generation": 3, "spec": spec})
    for name in ("validation", "dns", "placement"):
        admin.seed_status(cid, name, {"observed_generation": 3})
    assert deliver(adapter, cid, 3) == "applied"
    assert registry_calls(world) == {"sso.token": 1}
    body = last_body(admin, cid)
    assert conditions(body)["Health"]["reason"] == "ExecutionFailed:registry"
    assert {c["registry"]: c["result"] for c in own_checks(body)}[hosts["token"]] == "rejected"
    out, err = capfd.readouterr()
    assert_no_leak(world, admin, out + err)


def test_fifty_concurrent_duplicate_deliveries_verify_each_fingerprint_once(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    hosts = world.registry.hosts()
    auths = {hosts["token"]: {"auth": GOOD}, hosts["basic"]: {"auth": GOOD}, hosts["anonymous"]: {"auth": GOOD}}
    cid = "cls-reg-dup50"
    seed(admin, cid, auths)
    # Registry calls take 50 ms: the 50 deliveries all ask while the first handshakes are in flight.
    admin.fault(service="registry", method="*", latency_ms=50)
    adapter = make_adapter("enforce")
    world.book.reset_counters()
    barrier = threading.Barrier(50)

    def one(_: int) -> str:
        barrier.wait()
        return deliver(adapter, cid)

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(one, range(50)))
    assert set(results) <= {"applied", "unchanged"} and "applied" in results, results
    # One handshake per fingerprint: token (ping, token, ping), basic (ping, ping), anonymous (ping).
    assert registry_calls(world) == {"token.ping": 2, "sso.token": 1, "basic.ping": 2, "anonymous.ping": 1}
    out, err = capfd.readouterr()
    assert_no_leak(world, admin, out + err)


def test_credentials_go_only_to_the_registry_and_its_own_realm(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    hosts = world.registry.hosts()
    cid = "cls-reg-where"
    # redirect: a credentialed /v2/ answers 307 to the anonymous host; foreign: its realm is another domain.
    seed(admin, cid, {hosts["redirect"]: {"auth": GOOD}, hosts["foreign"]: {"auth": GOOD}})
    adapter = make_adapter("enforce")
    world.book.reset_counters()
    assert deliver(adapter, cid) == "applied"
    checks = {c["registry"]: c for c in own_checks(last_body(admin, cid))}
    assert checks[hosts["redirect"]] == {"registry": hosts["redirect"], "result": "unreachable"}
    assert checks[hosts["foreign"]] == {"registry": hosts["foreign"], "result": "skipped"}
    credentialed = world.registry.state()["credentialed"]
    # The redirect was not followed (the anonymous host saw no call), and the foreign realm got nothing.
    assert credentialed == dict.fromkeys(credentialed, 0) | {"redirect": 1}
    assert "anonymous.ping" not in registry_calls(world) and "sso.token" not in registry_calls(world)
    out, err = capfd.readouterr()
    assert_no_leak(world, admin, out + err)


def test_a_realm_on_another_domain_gets_the_credential_only_when_paired_and_vetted(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """REGISTRY_TRUSTED_REALMS (registry.redhat.io=sso.redhat.com in production): the `foreign` registry's
    realm names the token service as `localhost:PORT`, another domain than the registry's `127.0.0.1`."""
    hosts = world.registry.hosts()
    sso_port = hosts["sso"].rsplit(":", 1)[1]
    allowed = f"{world.env()['REGISTRY_ALLOWED_HOSTS']},localhost:{sso_port}"
    cases = [
        # (REGISTRY_TRUSTED_REALMS, REGISTRY_ALLOWED_HOSTS, result, credentials the sso saw)
        ("registry.redhat.io=sso.redhat.com", allowed, "skipped", 0),  # the default pairs other names
        ("127.0.0.1=localhost", allowed, "valid", 1),  # paired: the credential goes to its token service
        ("127.0.0.1=localhost", world.env()["REGISTRY_ALLOWED_HOSTS"], "skipped", 0),  # paired, yet vetted
    ]
    for index, (trusted, allowed_hosts, result, sso_credentialed) in enumerate(cases):
        cid = f"cls-reg-realm{index}"
        seed(admin, cid, {hosts["foreign"]: {"auth": GOOD}})
        adapter = make_adapter("report", REGISTRY_TRUSTED_REALMS=trusted, REGISTRY_ALLOWED_HOSTS=allowed_hosts)
        before = world.registry.state()["credentialed"].get("sso", 0)
        assert deliver(adapter, cid) == "applied"
        checks = {c["registry"]: c for c in own_checks(last_body(admin, cid))}
        assert checks[hosts["foreign"]]["result"] == result, (trusted, checks)
        assert world.registry.state()["credentialed"].get("sso", 0) - before == sso_credentialed, trusted
        assert world.registry.state()["credentialed"].get("internal", 0) == 0
    out, err = capfd.readouterr()
    assert_no_leak(world, admin, out + err)


def _verifier(world: Any, clock: Callable[[], float], **env: str) -> Any:
    from pullsecret.registry.verification import RegistryVerifier

    settings = configured.load(
        {
            "HYPERFLEET_API_URL": "http://hf.example",
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
            "REGISTRY_CA_BUNDLE": world.registry_ca_file,
            "REGISTRY_ALLOWED_HOSTS": world.env()["REGISTRY_ALLOWED_HOSTS"],
            **env,
        }
    )
    return RegistryVerifier(settings, clock=clock)


def test_answers_expire_after_the_ttl_and_outages_sooner(world: Any) -> None:
    from pullsecret.model import dockerconfig
    from pullsecret.retrying import Deadline

    now = [1000.0]
    verifier = _verifier(world, lambda: now[0], REGISTRY_CACHE_TTL="600")
    hosts = world.registry.hosts()
    secret = dockerconfig.parse({"auths": {hosts["basic"]: {"auth": GOOD}, hosts["dead"]: {"auth": GOOD}}}, source="t")

    def verify() -> dict[str, str]:
        pending = verifier.start(secret, Deadline(10))
        return {r: c.result for r, c in pending.result().checks.items()}

    world.book.reset_counters()
    assert verify() == {hosts["basic"]: "valid", hosts["dead"]: "unreachable"}
    assert registry_calls(world) == {"basic.ping": 2}
    world.book.reset_counters()
    now[0] += 59  # both cached
    assert verify() == {hosts["basic"]: "valid", hosts["dead"]: "unreachable"}
    now[0] += 2  # past the 60 s of an outage: the dead host is tried again, the verdict still cached
    assert verify()[hosts["dead"]] == "unreachable"
    assert registry_calls(world) == {}
    now[0] += 600  # past the TTL (and the host's challenge's 600 s): the full handshake again
    assert verify()[hosts["basic"]] == "valid"
    assert registry_calls(world) == {"basic.ping": 2}


def test_a_refusal_is_cached_for_minutes_not_for_the_ttl(world: Any) -> None:
    """A registry's passing 401 must not stand for REGISTRY_CACHE_TTL (an hour by default)."""
    from pullsecret.model import dockerconfig
    from pullsecret.retrying import Deadline

    now = [1000.0]
    verifier = _verifier(world, lambda: now[0])
    secret = dockerconfig.parse({"auths": {world.registry.hosts()["basic"]: {"auth": WRONG}}}, source="t")

    def verify() -> list[str]:
        return [c.result for c in verifier.start(secret, Deadline(10)).result().checks.values()]

    assert verify() == ["rejected"]
    world.book.reset_counters()
    now[0] += 299
    assert verify() == ["rejected"] and registry_calls(world) == {}
    now[0] += 2
    assert verify() == ["rejected"] and registry_calls(world) != {}


def test_the_overall_deadline_bounds_the_wait(world: Any, admin: Admin) -> None:
    import time

    from pullsecret.model import dockerconfig
    from pullsecret.retrying import Deadline

    admin.fault(service="registry", method="basic.ping", code="timeout", count=1)
    verifier = _verifier(world, time.monotonic, REGISTRY_TIMEOUT="5", REGISTRY_DEADLINE="0.5")
    secret = dockerconfig.parse({"auths": {world.registry.hosts()["basic"]: {"auth": GOOD}}}, source="t")
    began = time.monotonic()
    checks = verifier.start(secret, Deadline(30)).result().checks
    assert time.monotonic() - began < 2.0
    assert [c.result for c in checks.values()] == ["unreachable"]


def _many(hosts: dict[str, str], tag: str, n: int) -> dict[str, Any]:
    """n registry keys on the Basic host, each with a credential of its own (distinct fingerprints)."""
    return {f"{hosts['basic']}/{tag}{i}": {"auth": GOOD, "email": f"{tag}{i}@example.com"} for i in range(n)}


def test_one_event_runs_at_most_four_handshakes_at_once(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any
) -> None:
    hosts = world.registry.hosts()
    seed(admin, "cls-reg-fanout", _many(hosts, "ns", 10))
    admin.fault(service="registry", method="*", latency_ms=100)
    adapter = make_adapter("report")
    world.registry.reset()
    assert deliver(adapter, "cls-reg-fanout") == "applied"
    checks = own_checks(last_body(admin, "cls-reg-fanout"))
    assert [c["result"] for c in checks] == ["valid"] * 10
    assert 2 <= world.registry.state()["max_in_flight"] <= 4


def test_the_process_runs_at_most_registry_concurrency_handshakes_at_once(
    make_adapter: Callable[..., Adapter], admin: Admin, world: Any
) -> None:
    hosts = world.registry.hosts()
    clusters = [f"cls-reg-proc{i}" for i in range(3)]
    for i, cid in enumerate(clusters):
        seed(admin, cid, _many(hosts, f"p{i}-", 4))
    admin.fault(service="registry", method="*", latency_ms=100)
    adapter = make_adapter("report", REGISTRY_CONCURRENCY="2")
    world.registry.reset()
    with ThreadPoolExecutor(max_workers=3) as pool:
        assert list(pool.map(lambda cid: deliver(adapter, cid), clusters)) == ["applied"] * 3
    assert world.registry.state()["max_in_flight"] == 2
