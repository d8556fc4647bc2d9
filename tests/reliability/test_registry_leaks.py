"""Registry verification under faults: every credential and every token of the registry traffic stays out of
logs, exception texts and status reports, and no verdict other than the registry's own refusal blocks a write."""

from __future__ import annotations

import base64
import json
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from emulators.registry import DEFAULT_PASSWORD, DEFAULT_REFRESH_TOKEN, DEFAULT_USER
from tests.reliability import campaign, harness
from tests.support import gcp_cluster


def _auths(hosts: dict[str, str], cid: str, n: int) -> dict[str, Any]:
    """A cluster's own pull secret: valid, wrong and token credentials at every emulated registry kind."""
    good = base64.b64encode(f"{DEFAULT_USER}:{DEFAULT_PASSWORD}".encode()).decode()
    wrong = base64.b64encode(f"{DEFAULT_USER}:Wrong-{cid}-pw".encode()).decode()
    auths: dict[str, Any] = {
        hosts["token"]: {"auth": good, "email": f"{cid}@example.com"},
        f"{hosts['token']}/team": {"identitytoken": DEFAULT_REFRESH_TOKEN, "email": f"{cid}@example.com"},
        hosts["basic"]: {"username": DEFAULT_USER, "password": DEFAULT_PASSWORD, "email": f"{cid}@example.com"},
        hosts["anonymous"]: {"auth": good, "email": f"{cid}@example.com"},
        hosts["redirect"]: {"auth": good, "email": f"{cid}@example.com"},
        hosts["foreign"]: {"auth": good, "email": f"{cid}@example.com"},
        hosts["dead"]: {"auth": good, "email": f"{cid}@example.com"},
        "cloud.openshift.com": {"auth": good},
    }
    if n % 2:  # every other cluster also holds credentials the registries refuse
        auths[f"{hosts['token']}/bad"] = {"auth": wrong}
        auths[f"https://{hosts['basic']}/v1/"] = {"auth": wrong}
        auths[f"{hosts['token']}/rt"] = {"registrytoken": f"Bogus-Registry-Token-{cid}"}
    return auths


@pytest.mark.parametrize("mode", ["report", "enforce"])
def test_registry_traffic_never_leaks(
    adapter_factory: Any, world: Any, capfd: pytest.CaptureFixture[str], mode: str
) -> None:
    rng = random.Random(14)
    harness.quiet_platform_source(world)
    adapter = adapter_factory(REGISTRY_VERIFICATION=mode, REGISTRY_TIMEOUT="0.5")
    hosts = world.registry.hosts()
    clusters = [f"cls-regleak-{mode[0]}{i:02d}" for i in range(12 if harness.FULL else 6)]
    documents: dict[str, dict[str, Any]] = {}
    for i, cid in enumerate(clusters):
        body = gcp_cluster(cid)
        documents[cid] = {"auths": _auths(hosts, cid, i)}
        body["spec"]["pullSecret"] = {"data": documents[cid]}
        world.hyperfleet.seed_cluster(cid, body)
        for name in ("validation", "dns", "placement"):
            world.hyperfleet.seed_status(cid, name, {"observed_generation": 1, "data": {}})
        world.kubernetes.add_namespace(f"clusters-{cid}")
    # The token service and registries fail now and then, and answer slowly.
    world.book.add({"service": "registry", "method": "sso.token", "code": "503", "rate": 0.3, "seed": 1})
    world.book.add({"service": "registry", "method": "basic.ping", "code": "reset", "rate": 0.2, "seed": 2})
    world.book.add({"service": "registry", "method": "*", "latency_ms": 10})

    deliveries = [cid for cid in clusters for _ in range(2)]
    rng.shuffle(deliveries)
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(
            pool.map(lambda cid: campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)), deliveries)
        )
    harness.count("cases tried", len(clusters))
    harness.count("faults injected", sum(world.book.faults_injected().get("registry", {}).values()))

    texts = [json.dumps(r) for r in world.hyperfleet.handle_admin("GET", "/reports", None)[1]]
    texts += [error for outcome in outcomes for error in outcome.errors]
    out, err = capfd.readouterr()
    forms: set[str] = {DEFAULT_REFRESH_TOKEN, *world.registry.issued_tokens()}
    for document in documents.values():
        forms |= harness.credential_forms(document)
    assert world.registry.issued_tokens(), "no token was issued: the campaign did not exercise the token flow"
    found = harness.scan(f"registry verification ({mode})", [out, err, *texts], forms)
    assert found == [], found

    statuses = world.hyperfleet.state()["statuses"]
    for cid in clusters:
        mine = statuses[cid]["pullsecret"]
        checks = {c["registry"]: c["result"] for c in mine["data"]["registry_checks"]}
        available = {c["type"]: c["status"] for c in mine["conditions"]}["Available"]
        written = bool(world.secretmanager.versions(campaign.PROJECT, f"hyperfleet-{cid}-pull-secret"))
        refused = "rejected" in checks.values()
        # Only the registry's own refusal, and only in enforce mode, keeps the pull secret from being written.
        assert written == (available == "True") == (mode == "report" or not refused), (cid, checks)
