"""Races and ordering: duplicates delivered at once, generations N and N+1 in every order (sequential and
concurrent), and many clusters on one management cluster at once."""

from __future__ import annotations

import itertools
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pullsecret.errors import TransientError
from tests.reliability import campaign, harness
from tests.support import eventarc_attributes, pubsub_envelope, sentinel_event


def _revision(world: Any) -> int:
    """The Kubernetes emulator's global resourceVersion: it moves once per accepted write."""
    return int(world.kubernetes.handle_admin("GET", "/state", None)[1]["resourceVersion"])


def _scan(where: str, capfd: pytest.CaptureFixture[str], world: Any, texts: list[str], forms: set[str]) -> None:
    out, err = capfd.readouterr()
    reports = world.hyperfleet.handle_admin("GET", "/reports", None)[1]
    found = harness.scan(where, [out, err, *texts, *(json.dumps(r) for r in reports)], forms)
    assert found == [], found


def test_fifty_concurrent_deliveries_of_one_event_write_once(
    adapter_factory: Any, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    adapter = adapter_factory()
    cid = "cls-dup50"
    campaign.seed_generation(world, cid, 1)
    event = sentinel_event(cid, 1)
    world.book.reset_counters()
    revision = _revision(world)
    barrier = threading.Barrier(50)

    def deliver(_: int) -> str:
        barrier.wait()
        harness.count("deliveries")
        return adapter.handle(eventarc_attributes(), pubsub_envelope(event)).result

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(deliver, range(50)))
    harness.count("cases tried")
    assert set(results) <= {"applied", "unchanged"} and results.count("applied") >= 1, results
    calls = world.book.calls()
    assert calls["secretmanager"].get("AddSecretVersion", 0) == 1, calls["secretmanager"]
    verdict = campaign.verify(world, {cid: 1})
    verdict.record()
    verdict.assert_clean()
    # Racing creates may be attempted; the API server accepts exactly one (the others get AlreadyExists).
    accepted = _revision(world) - revision
    assert accepted == 1, f"Kubernetes accepted {accepted} writes: {calls['kubernetes']}"
    assert len(world.secretmanager.versions(campaign.PROJECT, f"hyperfleet-{cid}-pull-secret")) == 1
    _scan("fifty duplicates", capfd, world, results, campaign.credential_forms([cid], [1]))


# Every order of deliveries of N and N+1 (length 2 to 4), with the API at the generation delivered:
# a delivery of N after N+1 stands for an invocation that read the cluster before N+1 existed.
ORDERS = sorted(
    {
        order
        for n in ((2, 3, 4) if harness.FULL else (2, 3))
        for order in itertools.product((1, 2), repeat=n)
        if 1 in order and 2 in order
    }
)


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(map(str, o)) for o in ORDERS])
def test_generations_in_every_order_end_at_the_newest(
    adapter_factory: Any, world: Any, capfd: pytest.CaptureFixture[str], order: tuple[int, ...]
) -> None:
    adapter = adapter_factory()
    cid = "cls-order"
    texts: list[str] = []
    for generation in order:
        campaign.seed_generation(world, cid, generation)
        harness.count("deliveries")
        texts.append(repr(adapter.handle(*campaign.envelope(cid, generation))))
    # The API ends at the newest generation, as it does in production.
    campaign.seed_generation(world, cid, 2)
    harness.count("cases tried")
    verdict = campaign.verify(world, {cid: 2})
    verdict.record()
    verdict.assert_clean()
    versions = world.secretmanager.versions(campaign.PROJECT, f"hyperfleet-{cid}-pull-secret")
    assert len(versions) <= 2, f"{len(versions)} versions for two distinct contents"
    _scan(f"order {order}", capfd, world, texts, campaign.credential_forms([cid], [1, 2]))


ROUNDS = 12 if harness.FULL else 4


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_concurrent_generations_never_regress(
    adapter_factory: Any, world: Any, admin: Any, capfd: pytest.CaptureFixture[str], round_: int
) -> None:
    """An invocation reading N is still writing when N+1 arrives and is handled: N must not win."""
    adapter = adapter_factory()
    cid = f"cls-race{round_}"
    campaign.seed_generation(world, cid, 1)
    # Slow every Secret Manager and Kubernetes call so that the two invocations overlap.
    admin.fault(service="secretmanager", method="*", latency_ms=40 + 10 * round_)
    admin.fault(service="kubernetes", method="*", latency_ms=30)
    results: list[str] = []

    def deliver(generation: int) -> None:
        # As Pub/Sub does: a transient failure (the older one finding generation 2 after its write) is redelivered.
        for _ in range(3):
            harness.count("deliveries")
            try:
                results.append(adapter.handle(*campaign.envelope(cid, generation)).result)
                return
            except TransientError as exc:
                results.append(f"transient {exc.reason}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        older = pool.submit(deliver, 1)
        time.sleep(0.05 + 0.03 * (round_ % 3))  # the older invocation has read generation 1
        campaign.seed_generation(world, cid, 2)
        newer = pool.submit(deliver, 2)
        older.result()
        newer.result()
    admin.call("DELETE", "/faults")
    harness.count("cases tried")
    verdict = campaign.verify(world, {cid: 2})
    verdict.record()
    verdict.assert_clean()
    _scan(f"concurrent generations {round_}", capfd, world, results, campaign.credential_forms([cid], [1, 2]))


def test_many_clusters_on_one_management_cluster_fetch_credentials_once(
    adapter_factory: Any, world: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    count = 40 if harness.FULL else 12
    adapter = adapter_factory()
    clusters = [f"cls-shared{i}" for i in range(count)]
    for cid in clusters:
        campaign.seed_generation(world, cid, 1)
    world.book.reset_counters()
    barrier = threading.Barrier(count)

    def deliver(cid: str) -> str:
        barrier.wait()
        for _ in range(3):  # at-least-once: a transient answer (a deadline passed on a loaded machine) is redelivered
            harness.count("deliveries")
            try:
                return adapter.handle(*campaign.envelope(cid, 1)).result
            except TransientError as exc:
                last = exc.reason
        return f"transient ({last}) three times"

    with ThreadPoolExecutor(max_workers=count) as pool:
        results = list(pool.map(deliver, clusters))
    harness.count("cases tried", count)
    assert results == ["applied"] * count, results
    verdict = campaign.verify(world, dict.fromkeys(clusters, 1))
    verdict.record()
    verdict.assert_clean()
    calls = world.book.calls()
    assert calls["gke"] == {"GetCluster": 1}, calls["gke"]
    assert calls["metadata"].get("token", 0) == 1, calls["metadata"]
    _scan("shared management cluster", capfd, world, results, campaign.credential_forms(clusters, [1]))
