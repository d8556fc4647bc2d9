"""Secret Manager writes at their edges: lost answers, duplicates across instances, the write quota.

Each write that may have landed is found before anything is written again; concurrent duplicates in
different instances leave one version; quota refusals slow the writes down and are never terminal.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pullsecret.secretstore.versions import NewerGeneration
from tests.reliability import campaign, harness

AMBIGUOUS = ("UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL")


def _secret(cid: str) -> str:
    return f"hyperfleet-{cid}-pull-secret"


def _live_versions(world: Any, cid: str) -> list[dict[str, Any]]:
    """Versions still holding a payload (destroyed ones hold none and are not billed)."""
    return [v for v in world.secretmanager.versions(campaign.PROJECT, _secret(cid)) if v.get("payload_b64")]


@pytest.mark.parametrize("first", [True, False], ids=["new-cluster", "changed-cluster"])
@pytest.mark.parametrize("code", AMBIGUOUS)
def test_a_lost_add_answer_is_found_not_written_again(
    adapter_factory: Any, world: Any, admin: Any, code: str, first: bool
) -> None:
    """AddSecretVersion lands but its answer is lost: the adapter reads what landed instead of adding again."""
    adapter = adapter_factory()
    cid = f"cls-lost-{code.lower().replace('_', '')}-{'new' if first else 'chg'}"
    campaign.seed_generation(world, cid, 1)
    generation = 1
    if not first:
        assert adapter.handle(*campaign.envelope(cid, 1)).result == "applied"
        generation = 2
        campaign.seed_generation(world, cid, 2)
    world.book.reset_counters()
    admin.fault(service="secretmanager", method="AddSecretVersion", code=code, count=1, lost_response=True)
    harness.count("faults injected")
    delivery = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, generation))
    harness.count("cases tried")
    assert delivery.result == "applied", delivery
    calls = world.book.calls()["secretmanager"]
    assert calls.get("AddSecretVersion") == 1, calls  # the landed write was adopted, not repeated
    verdict = campaign.verify(world, {cid: generation})
    verdict.record()
    verdict.assert_clean()
    assert len(_live_versions(world, cid)) == generation


def test_fifty_duplicates_across_five_instances_leave_one_version(adapter_factory: Any, world: Any, admin: Any) -> None:
    """Instances share no memory: each may add the same content; the older copies are destroyed."""
    cid = "cls-dup-instances"
    adapters = [adapter_factory() for _ in range(5)]
    campaign.seed_generation(world, cid, 1)
    assert adapters[0].handle(*campaign.envelope(cid, 1)).result == "applied"
    campaign.seed_generation(world, cid, 2)
    world.book.reset_counters()
    # Slow Secret Manager so that the instances' reads all come before their writes.
    admin.fault(service="secretmanager", method="*", latency_ms=30)
    barrier = threading.Barrier(50)

    def deliver(i: int) -> campaign.Delivery:
        barrier.wait()
        return campaign.deliver_until_acknowledged(adapters[i % 5], *campaign.envelope(cid, 2))

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(deliver, range(50)))
    admin.call("DELETE", "/faults")
    harness.count("cases tried")
    assert {r.result for r in results} <= {"applied", "unchanged"}, results
    calls = world.book.calls()["secretmanager"]
    adds = calls.get("AddSecretVersion", 0)
    assert 1 <= adds <= 5, calls  # at most one per instance
    assert calls.get("DestroySecretVersion", 0) == adds - 1, calls  # each extra copy retired once
    verdict = campaign.verify(world, {cid: 2})
    verdict.record()
    verdict.assert_clean()
    assert len(_live_versions(world, cid)) == 2  # generation 1's content and generation 2's, once each


def test_write_quota_refusals_pace_the_writes_and_are_never_terminal(
    adapter_factory: Any, world: Any, admin: Any
) -> None:
    """A burst of changed clusters against a small write quota: every event applies, some writes wait."""
    count = 40 if harness.FULL else 24
    adapter = adapter_factory()
    clusters = [f"cls-quota{i}" for i in range(count)]
    for cid in clusters:
        campaign.seed_generation(world, cid, 1)
    with ThreadPoolExecutor(max_workers=16) as pool:
        assert set(pool.map(lambda c: adapter.handle(*campaign.envelope(c, 1)).result, clusters)) == {"applied"}
    for cid in clusters:
        campaign.seed_generation(world, cid, 2)
    world.book.reset_counters()
    admin.call("PUT", "/secretmanager/quota", {"writes_per_minute": 8, "window_s": 1.0})
    try:
        with ThreadPoolExecutor(max_workers=count) as pool:
            deliveries = list(
                pool.map(lambda c: campaign.deliver_until_acknowledged(adapter, *campaign.envelope(c, 2)), clusters)
            )
        refused = int(admin.get("/secretmanager/quota")["rejected"])
    finally:
        admin.call("PUT", "/secretmanager/quota", {"writes_per_minute": None})
    harness.count("cases tried", count)
    harness.count("faults injected", refused)
    assert [d.result for d in deliveries] == ["applied"] * count, [d.errors[:1] for d in deliveries]
    assert refused > 0  # the quota did bind
    assert world.book.calls()["secretmanager"].get("AddSecretVersion", 0) - refused == count  # one write each
    verdict = campaign.verify(world, dict.fromkeys(clusters, 2))
    verdict.record()
    verdict.assert_clean()


def test_a_secret_replaced_by_someone_elses_is_checked_before_the_next_write(
    adapter_factory: Any, world: Any, admin: Any
) -> None:
    """No claim re-reads the labels on every write: a newest version we did not write triggers the check."""
    adapter = adapter_factory()
    cid = "cls-replaced"
    campaign.seed_generation(world, cid, 1)
    assert adapter.handle(*campaign.envelope(cid, 1)).result == "applied"
    admin.call(
        "PUT",
        f"/secretmanager/projects/{campaign.PROJECT}/secrets/{_secret(cid)}",
        {"labels": {"owner": "someone-else"}, "versions": ["dGhlaXJz"]},
    )
    campaign.seed_generation(world, cid, 2)
    harness.count("cases tried")
    harness.count("deliveries")
    assert adapter.handle(*campaign.envelope(cid, 2)).result == "terminal"
    versions = world.secretmanager.versions(campaign.PROJECT, _secret(cid))
    assert [v["payload_b64"] for v in versions] == ["dGhlaXJz"]  # nothing written into theirs
    status = world.hyperfleet.state()["statuses"][cid]["pullsecret"]
    available = {c["type"]: c for c in status["conditions"]}["Available"]
    assert available["status"] == "False" and available["reason"] == "OwnershipConflict"


@pytest.mark.parametrize("cluster_moved_on", [True, False], ids=["ours-is-older", "ours-is-newest"])
def test_two_generations_writing_at_once_leave_the_newest_content_on_top(
    adapter_factory: Any, world: Any, cluster_moved_on: bool
) -> None:
    """Generation 2 read the secret before generation 3 wrote and wrote after it: the store settles it."""
    from pullsecret.model import dockerconfig
    from pullsecret.retrying import Deadline

    cid = "cls-gen-race"
    store = adapter_factory().store
    contents = {g: dockerconfig.parse(campaign.own_secret(cid, g), source="test") for g in (1, 2, 3)}
    name = f"projects/{campaign.PROJECT}/secrets/{_secret(cid)}"

    def write(generation: int, **kwargs: Any) -> Any:
        return store.versions.store(
            project=campaign.PROJECT,
            secret_id=_secret(cid),
            secret=contents[generation],
            generation=generation,
            labels={"managed-by": "hyperfleet"},
            deadline=Deadline(10),
            **kwargs,
        )

    assert write(1).written
    read_by_generation_2 = store.reads.latest(name, Deadline(10))  # version 1
    assert write(3).version_name.endswith("/versions/2")
    harness.count("cases tried")
    if cluster_moved_on:
        # Generation 2 landed on top of generation 3 (no gap to see): it must not report success (A3) ...
        moved_on = write(2, latest=read_by_generation_2, current_generation=lambda: 3)
        assert moved_on.confirm is not None
        with pytest.raises(NewerGeneration):
            moved_on.confirm()
        # ... and its redelivery, reading the cluster at generation 3, puts generation 3's content back on top.
        redelivered = write(3, latest=store.reads.latest(name, Deadline(10)), current_generation=lambda: 3)
        live = {v["version"]: v["payload_b64"] for v in _live_versions(world, cid)}
        newest = world.secretmanager.payload(campaign.PROJECT, _secret(cid))
        assert redelivered.written and redelivered.version_name.endswith("/versions/4")
        assert newest == contents[3].canonical and sorted(live) == [1, 2, 3, 4]
    else:
        result = write(2, latest=read_by_generation_2, current_generation=lambda: 2)
        live = {v["version"]: v["payload_b64"] for v in _live_versions(world, cid)}
        newest = world.secretmanager.payload(campaign.PROJECT, _secret(cid))
        assert len(set(live.values())) == len(live), live  # every content once
        assert result.written and result.version_name.endswith("/versions/3")
        assert newest == contents[2].canonical and sorted(live) == [1, 2, 3]
