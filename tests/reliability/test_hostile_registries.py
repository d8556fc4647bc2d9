"""A cluster owner's pull secret (and what answers at its registries) tries to steer registry verification: to
addresses of the platform's own network, to a token realm it controls, into holding threads, into locking an
account, into blocking the fleet. The registry emulator's `internal` host stands for the platform's network:
the stack never lists it in REGISTRY_ALLOWED_HOSTS, and it counts every TCP connection it accepts."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from emulators.registry import DEFAULT_PASSWORD, DEFAULT_USER
from pullsecret.registry.egress import Egress, NoPublicAddress, realm_trusted
from tests.reliability import campaign, harness
from tests.support import PLATFORM_SOURCE_SECRET, gcp_cluster

GOOD = base64.b64encode(f"{DEFAULT_USER}:{DEFAULT_PASSWORD}".encode()).decode()
WRONG = base64.b64encode(f"{DEFAULT_USER}:Wr0ng-Hostile-Passw0rd".encode()).decode()


def _seed(world: Any, cid: str, auths: dict[str, Any]) -> None:
    body = gcp_cluster(cid)
    body["spec"]["pullSecret"] = {"data": {"auths": auths}}
    world.hyperfleet.seed_cluster(cid, body)
    for name in ("validation", "dns", "placement"):
        world.hyperfleet.seed_status(cid, name, {"observed_generation": 1, "data": {}})
    world.kubernetes.add_namespace(f"clusters-{cid}")


def _deliver(adapter: Any, cid: str) -> str | None:
    return campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result


def _status(world: Any, cid: str) -> dict[str, Any]:
    mine: dict[str, Any] = world.hyperfleet.state()["statuses"][cid]["pullsecret"]
    return mine


def _checks(world: Any, cid: str) -> dict[str, dict[str, str]]:
    """Each registry's check, but the quiet platform source's skipped entry (harness.quiet_platform_source)."""
    checks = _status(world, cid)["data"]["registry_checks"]
    return {c["registry"]: c for c in checks if c["registry"] != harness.QUIET_PLATFORM_HOST}


def _health(world: Any, cid: str) -> str:
    return str({c["type"]: c["status"] for c in _status(world, cid)["conditions"]}["Health"])


def test_keys_naming_the_platforms_network_are_never_contacted(adapter_factory: Any, world: Any) -> None:
    internal = world.registry.hosts()["internal"]
    port = internal.rsplit(":", 1)[1]
    hostile = [
        internal,  # an IP literal on loopback, a port of the platform's own
        f"localhost:{port}",  # a private name resolving to it
        f"https://localhost:{port}/v1/",
        f"[::ffff:127.0.0.1]:{port}",  # the same address, IPv4-mapped
        f"[::1]:{port}",
        "169.254.169.254",  # the metadata server
        "metadata.google.internal",
        "10.0.0.5:6443",  # a control plane of the VPC
        "100.64.0.1",
        "[fd00::1]",
        "localhost",
    ]
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report", REGISTRY_TIMEOUT="1")
    cid = "cls-hostile-ssrf"
    _seed(world, cid, {key: {"auth": GOOD} for key in hostile})
    world.registry.reset()
    began = time.monotonic()
    assert _deliver(adapter, cid) == "applied"
    elapsed = time.monotonic() - began
    harness.count("cases tried", len(hostile))
    checks = _checks(world, cid)
    # Nothing connected to the internal host; every key is `skipped` with a reason taken from the key alone.
    assert world.registry.state()["connections"]["internal"] == 0
    assert {r: c["result"] for r, c in checks.items()} == dict.fromkeys(checks, "skipped"), checks
    assert all("REGISTRY_ALLOWED_HOSTS" in c["reason"] for c in checks.values()), checks
    assert elapsed < 5, elapsed  # no connection attempt waited for an unroutable address


def test_a_realm_on_the_platforms_network_gets_no_credential(adapter_factory: Any, world: Any) -> None:
    """`pivot` is an allowlisted registry whose challenge names the internal host (same IP, another port)."""
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report", REGISTRY_TIMEOUT="1")
    cid = "cls-hostile-pivot"
    pivot = world.registry.hosts()["pivot"]
    _seed(world, cid, {pivot: {"auth": GOOD}})
    world.registry.reset()
    assert _deliver(adapter, cid) == "applied"
    harness.count("cases tried")
    assert _checks(world, cid)[pivot]["result"] == "skipped"
    state = world.registry.state()
    assert state["connections"]["internal"] == 0 and state["credentialed"]["internal"] == 0


def test_a_token_realm_must_share_the_registrable_domain_by_the_public_suffix_list() -> None:
    """A realm under the same public suffix is someone else's domain (the last two labels are not one)."""
    cases = [
        ("victim.appspot.com", "evil.appspot.com"),
        ("bank.co.uk", "evil.co.uk"),
        ("victim.github.io", "evil.github.io"),
    ]
    harness.count("cases tried", len(cases))
    assert [realm_trusted(registry, realm) for registry, realm in cases] == [False] * len(cases)
    assert realm_trusted("registry-1.docker.io", "auth.docker.io")


def test_dns_is_asked_once_per_handshake_and_the_connection_goes_to_that_answer(
    adapter_factory: Any, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the first answer is vetted, every later one would point elsewhere (unroutable)."""
    port = world.registry.hosts()["basic"].rsplit(":", 1)[1]
    answers = iter([["127.0.0.1"]])
    asked: list[str] = []

    def rebinding(hostname: str, _port: int) -> list[str]:
        asked.append(hostname)
        return next(answers, ["192.0.2.1"])

    harness.quiet_platform_source(world)
    adapter = adapter_factory(
        REGISTRY_VERIFICATION="report",
        REGISTRY_TIMEOUT="2",
        REGISTRY_ALLOWED_HOSTS=f"localhost:{port}",
    )
    adapter.registries.egress = Egress([f"localhost:{port}"], resolver=rebinding)
    cid = "cls-hostile-rebind"
    _seed(world, cid, {f"localhost:{port}": {"auth": GOOD}})
    assert _deliver(adapter, cid) == "applied"
    harness.count("cases tried")
    assert _checks(world, cid)[f"localhost:{port}"]["result"] == "valid"  # ping, then the credential: one address
    assert asked == ["localhost"]


def test_a_registry_sending_one_byte_at_a_time_holds_a_thread_for_the_timeout_only(
    adapter_factory: Any, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report", REGISTRY_TIMEOUT="1")
    cid = "cls-hostile-drip"
    basic = world.registry.hosts()["basic"]
    _seed(world, cid, {basic: {"auth": GOOD}})
    world.book.add({"service": "registry", "method": "basic.ping", "code": "drip", "count": 1})
    began = time.monotonic()
    assert _deliver(adapter, cid) == "applied"
    elapsed = time.monotonic() - began
    harness.count("cases tried")
    harness.count("faults injected")
    assert _checks(world, cid)[basic]["result"] == "unreachable"
    assert elapsed < 3.0, f"the handshake took {elapsed:.1f} s against a 1 s REGISTRY_TIMEOUT"
    out, _ = capfd.readouterr()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert not [line for line in lines if "@type" in line], "an Error Reporting trace for a slow registry"
    assert [line["result"] for line in lines if line.get("operation") == "registry.verify"] == ["unreachable"]


def test_a_refused_credential_is_presented_once_per_handshake(adapter_factory: Any, world: Any) -> None:
    """The host's challenge is known from an earlier check: a refusal on it is final, never retried afresh."""
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report")
    token = world.registry.hosts()["token"]
    _seed(world, "cls-hostile-lock-a", {token: {"auth": GOOD}})
    assert _deliver(adapter, "cls-hostile-lock-a") == "applied"
    _seed(world, "cls-hostile-lock-b", {token: {"auth": WRONG}})
    world.book.reset_counters()
    assert _deliver(adapter, "cls-hostile-lock-b") == "applied"
    harness.count("cases tried")
    assert _checks(world, "cls-hostile-lock-b")[token]["result"] == "rejected"
    assert world.book.calls()["registry"].get("sso.token") == 1  # one failed login, not two


def test_one_event_verifies_at_most_twenty_registries(adapter_factory: Any, world: Any) -> None:
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report")
    basic = world.registry.hosts()["basic"]
    cid = "cls-hostile-many"
    _seed(world, cid, {f"{basic}/ns{i:03d}": {"auth": GOOD, "email": f"n{i}@example.com"} for i in range(60)})
    world.book.reset_counters()
    assert _deliver(adapter, cid) == "applied"
    harness.count("cases tried")
    results = [c["result"] for c in _checks(world, cid).values()]
    assert results.count("valid") == 20 and results.count("skipped") == 40
    assert sum(world.book.calls()["registry"].values()) <= 40  # two requests per Basic handshake


def test_one_event_presents_at_most_three_credentials_to_one_registry_host(adapter_factory: Any, world: Any) -> None:
    """`basic/a`, `basic/b`... are one host: a pull secret cannot make the platform's egress address try twenty
    guessed passwords against one registry (an oracle, and a way to get that address blocked)."""
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report")
    basic = world.registry.hosts()["basic"]
    guesses = [base64.b64encode(f"{DEFAULT_USER}:Guess-{i:02d}".encode()).decode() for i in range(19)]
    auths = {f"{basic}/ns{i:02d}": {"auth": guess} for i, guess in enumerate(guesses)}
    auths[f"https://{basic}/v1/"] = {"auth": GOOD}
    auths[f"{basic}/again"] = {"auth": guesses[0], "email": "same@example.com"}  # a credential already counted
    cid = "cls-hostile-oracle"
    _seed(world, cid, auths)
    world.book.reset_counters()
    assert _deliver(adapter, cid) == "applied"
    harness.count("cases tried")
    checks = _checks(world, cid)
    contacted = {r for r, c in checks.items() if c["result"] != "skipped"}
    assert contacted == {f"{basic}/ns00", f"{basic}/ns01", f"{basic}/ns02", f"{basic}/again"}, checks
    assert {checks[r]["result"] for r in contacted} == {"rejected"}
    skipped = [c for r, c in checks.items() if r not in contacted]
    assert len(skipped) == 17
    assert {c["reason"] for c in skipped} == {"more than 3 credentials for one registry host; not verified"}
    # Three distinct credentials presented, each once: two requests per Basic handshake, the first unauthenticated.
    assert sum(world.book.calls()["registry"].values()) <= 8


@pytest.mark.parametrize("mode", ["report", "enforce"])
def test_a_platform_registrys_refusal_blocks_no_cluster_and_health_says_so_in_both_modes(
    adapter_factory: Any, world: Any, mode: str
) -> None:
    basic = world.registry.hosts()["basic"]
    token = world.registry.hosts()["token"]
    source = f"projects/{campaign.PROJECT}/secrets/{PLATFORM_SOURCE_SECRET}/versions/latest"
    world.secretmanager.handle_admin(
        "PUT",
        f"/projects/{campaign.PROJECT}/secrets/{PLATFORM_SOURCE_SECRET}",
        {
            "labels": {"owner": "platform"},
            "versions": [base64.b64encode(json.dumps({"auths": {basic: {"auth": WRONG}}}).encode()).decode()],
        },
    )
    adapter = adapter_factory(REGISTRY_VERIFICATION=mode, PULL_SECRET_SOURCE=source)
    cid = f"cls-hostile-fleet-{mode}"
    _seed(world, cid, {token: {"auth": GOOD}})
    assert _deliver(adapter, cid) == "applied"
    harness.count("cases tried")
    assert {r: c["result"] for r, c in _checks(world, cid).items()} == {basic: "rejected", token: "valid"}
    assert world.secretmanager.versions(campaign.PROJECT, f"hyperfleet-{cid}-pull-secret")
    assert _health(world, cid) == "False"


def test_the_status_does_not_tell_an_internal_name_from_one_that_does_not_exist(
    adapter_factory: Any, world: Any
) -> None:
    """A DNS oracle: were a name resolving to a private address `skipped` and a nonexistent one `unreachable`,
    a cluster owner would learn from the status which internal names exist. Both read the same."""
    from pullsecret.registry.egress import Unresolvable

    answers = {"db.corp.example.com": ["10.20.0.7"], "mixed.corp.example.com": ["34.1.2.3", "127.0.0.1"]}
    asked: list[str] = []

    def resolver(hostname: str, _port: int) -> list[str]:
        asked.append(hostname)
        if hostname not in answers:
            raise Unresolvable(hostname)
        return answers[hostname]

    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report")
    adapter.registries.egress = Egress(resolver=resolver)
    cid = "cls-hostile-oracle"
    names = ["db.corp.example.com", "mixed.corp.example.com", "nothing.corp.example.com"]
    before = dict(world.registry.connections)
    _seed(world, cid, {name: {"auth": GOOD} for name in names})
    assert _deliver(adapter, cid) == "applied"
    harness.count("cases tried", len(names))
    checks = _checks(world, cid)
    seen = {json.dumps({k: v for k, v in checks[name].items() if k != "registry"}) for name in names}
    assert seen == {json.dumps({"result": "unreachable"})}, checks
    assert sorted(asked) == sorted(names)  # resolved, never connected
    assert world.registry.connections == before


@pytest.mark.parametrize(
    "answer",
    [
        "2002:7f00:1::",  # 6to4 wrapping 127.0.0.1
        "2002:a9fe:a9fe::",  # 6to4 wrapping the metadata server
        "fec0::1",  # site-local
        "3fff::1",  # documentation
    ],
)
def test_a_name_resolving_into_ipv6_blocks_the_deployed_python_calls_global_is_not_contacted(answer: str) -> None:
    """Python 3.11 (the function's runtime) counts 6to4, site-local and 3fff::/20 as global addresses."""
    egress = Egress([], resolver=lambda _name, _port: [answer])
    harness.count("cases tried")
    with pytest.raises(NoPublicAddress):
        egress.vet("registry.example.com")
    # A public answer beside it does not launder it: every answer is judged.
    mixed = Egress([], resolver=lambda _name, _port: ["2607:f8b0:4004:c07::71", answer])
    with pytest.raises(NoPublicAddress):
        mixed.vet("registry.example.com")
