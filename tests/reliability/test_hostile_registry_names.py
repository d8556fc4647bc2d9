"""A pull secret spells one registry many ways, or many registries on one host, to slip past the per-registry
bound (at most three distinct credentials presented to one registry per event, MAX_PER_HOST).

A registry is what the connection reaches: its name as the egress check, TLS and `Host` see it (IDNA, case,
trailing dots) and its port (443 when none is given). `quay.io.`, `quay.io..` and a fullwidth `quay.io` are one
registry; `mirror:5000` and `mirror:5001` are two.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from emulators.registry import DEFAULT_USER
from pullsecret import configured
from pullsecret.model.dockerconfig import parse
from pullsecret.registry.egress import Egress, Unresolvable
from pullsecret.registry.verification import MAX_PER_HOST, RegistryVerifier
from pullsecret.retrying import Deadline
from tests.reliability import campaign, harness
from tests.support import gcp_cluster

BASE = {
    "HYPERFLEET_API_URL": "https://hf.example.com",
    "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
    "REGISTRY_VERIFICATION": "report",
}
OVER = f"more than {MAX_PER_HOST} credentials for one registry host; not verified"


def _guess(i: int) -> str:
    return base64.b64encode(f"{DEFAULT_USER}:Guess-{i:02d}".encode()).decode()


def _checks(auths: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Each key's check when nothing resolves (no connection can happen), and the names the resolver was asked."""
    asked: list[str] = []

    def resolver(hostname: str, _port: int) -> list[str]:
        asked.append(hostname)
        raise Unresolvable(hostname)

    verifier = RegistryVerifier(configured.load(BASE), egress=Egress(resolver=resolver))
    pending = verifier.start(parse({"auths": auths}, source="cluster"), Deadline(10))
    assert pending is not None
    return dict(pending.result().checks), asked


def test_spellings_of_one_registry_count_as_one() -> None:
    spellings = ["quay.io", "quay.io.", "quay.io..", "\uff51uay.io", "QUAY.IO.", "https://quay.io.:443/v1/"]
    auths = {
        f"{key}" if key.startswith("https") else f"{key}/ns{i}": {"auth": _guess(i)} for i, key in enumerate(spellings)
    }
    checks, asked = _checks(auths)
    harness.count("cases tried", len(spellings))
    over = [key for key, check in checks.items() if check.reason == OVER]
    assert len(over) == len(spellings) - MAX_PER_HOST, checks
    assert set(asked) == {"quay.io"}, asked  # every spelling is the one name to the resolver
    assert len(asked) == MAX_PER_HOST


def test_registries_on_one_host_with_other_ports_count_apart() -> None:
    auths = {f"mirror.example.com:{port}": {"auth": _guess(port)} for port in (5000, 5001, 5002, 5003)}
    checks, _ = _checks(auths)
    harness.count("cases tried")
    assert not [key for key, check in checks.items() if check.reason == OVER], checks
    # Each is still refused by the egress rule for ports (none is in REGISTRY_ALLOWED_HOSTS): four registries.
    assert {check.result for check in checks.values()} == {"skipped"}
    assert all("port" in (check.reason or "") for check in checks.values()), checks


def test_a_registry_spelt_with_trailing_dots_gets_three_credentials_in_all(adapter_factory: Any, world: Any) -> None:
    """Against the registry emulator: `HOST`, `HOST.` and `HOST..` (an allowlisted IP and port) are one registry,
    so seven guessed passwords under those spellings reach it three times, not seven."""
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION="report")
    basic = world.registry.hosts()["basic"]
    address, port = basic.rsplit(":", 1)
    spellings = [basic, f"{address}.:{port}", f"{address}..:{port}", f"https://{address}.:{port}/v1/"]
    auths = {
        f"{key}/ns{i}" if not key.startswith("https") else key: {"auth": _guess(i)} for i, key in enumerate(spellings)
    }
    auths.update({f"{address}.:{port}/more{i}": {"auth": _guess(10 + i)} for i in range(3)})
    cid = "cls-hostile-spellings"
    body = gcp_cluster(cid)
    body["spec"]["pullSecret"] = {"data": {"auths": auths}}
    world.hyperfleet.seed_cluster(cid, body)
    for name in ("validation", "dns", "placement"):
        world.hyperfleet.seed_status(cid, name, {"observed_generation": 1, "data": {}})
    world.kubernetes.add_namespace(f"clusters-{cid}")
    world.book.reset_counters()
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    harness.count("cases tried", len(auths))
    checks = world.hyperfleet.state()["statuses"][cid]["pullsecret"]["data"]["registry_checks"]
    mine = [c for c in checks if c["registry"] != harness.QUIET_PLATFORM_HOST]
    assert sorted(c["result"] for c in mine) == ["rejected"] * 3 + ["skipped"] * 4, mine
    assert {c["reason"] for c in mine if c["result"] == "skipped"} == {OVER}
    # Three distinct credentials presented, each once: two requests per Basic handshake, the first unauthenticated.
    assert sum(world.book.calls()["registry"].values()) <= 2 * MAX_PER_HOST


def test_registries_the_pull_secret_service_names_keep_every_egress_rule(
    adapter_factory: Any, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service is trusted for content, not for where the function connects: its answer naming the platform's
    network (the metadata server, loopback, a VPC address, the emulator's `internal` host) is never contacted."""
    internal = world.registry.hosts()["internal"]
    port = internal.rsplit(":", 1)[1]
    hostile = {
        internal: "quay",
        f"localhost:{port}": "rhit",
        "169.254.169.254": "quay",
        "metadata.google.internal": "quay",
        "10.0.0.1": "rhit",
        "localhost": "quay",
        f"[::1]:{port}": "rhit",
        # Spelt to slip past the rules judged from the name: the connection would name 127.0.0.1 and
        # metadata.google.internal (IDNA), so the rules judge those names, before any DNS query.
        "\uff11\uff12\uff17.0.0.1": "quay",
        "metadata.google.\uff49nternal": "rhit",
    }
    monkeypatch.setattr(world.pullsecretservice.store, "alias_hosts", hostile)
    adapter = adapter_factory(
        PULL_SECRET_SOURCE=None,
        PULL_SECRET_SERVICE_URL=world.pullsecretservice.url,
        PULL_SECRET_SERVICE_AUTH="token-file",
        PULL_SECRET_SERVICE_TOKEN_FILE=world.service_token_file,
        REGISTRY_VERIFICATION="report",
        REGISTRY_TIMEOUT="1",
    )
    cid = "cls-hostile-service-egress"
    campaign.seed_generation(world, cid, 1)
    world.registry.reset()
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    harness.count("cases tried", len(hostile))
    checks = {
        c["registry"]: c for c in world.hyperfleet.state()["statuses"][cid]["pullsecret"]["data"]["registry_checks"]
    }
    assert world.registry.state()["connections"]["internal"] == 0
    assert {checks[host]["result"] for host in hostile} == {"skipped"}, checks
    assert all("REGISTRY_ALLOWED_HOSTS" in checks[host]["reason"] for host in hostile), checks
    # The service's real registries (allowlisted emulator hosts) are still verified.
    assert {checks[world.registry.hosts()[role]]["result"] for role in ("basic", "token")} == {"valid"}, checks
