"""A cluster's owner shapes the cluster the API serves: one nested deeper than Python's JSON decoder goes (the Go
API takes 10,000 levels) must be that cluster's own terminal problem, never a page of clusters that fails on
every delivery and stops the platform rotation's fan-out for the whole fleet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from emulators.pubsub import PubSubEmulator
from pullsecret.doctor import run as doctor
from pullsecret.hyperfleet import jsonsplit
from pullsecret.operator import fleet
from tests.reliability import campaign, harness
from tests.reliability.rotation_fanout import SUB, TOPIC, drain, notification, source_with_versions
from tests.support import eventarc_attributes, gcp_cluster

AVAILABLE, REASON = PubSubEmulator.available()
DEEP = "cls-deep004"
SECRET_MANAGER_WRITES = {"CreateSecret", "AddSecretVersion", "UpdateSecret", "DisableSecretVersion"}


@pytest.fixture(scope="module")
def pubsub(stack: Any) -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(stack.book, project=campaign.PROJECT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.mark.pubsub
@pytest.mark.skipif(not AVAILABLE, reason=REASON)
def test_a_deeply_nested_cluster_neither_stops_the_rotation_nor_escapes_its_own_report(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator
) -> None:
    source_with_versions(admin)
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    adapter = adapter_factory(
        PUBSUB_EMULATOR_HOST=pubsub.address,
        ADAPTER_TOPIC=f"projects/{campaign.PROJECT}/topics/{TOPIC}",
        ROTATION_PUBLISH_RATE="1000",
    )
    clusters = [f"cls-deep{i:03d}" for i in range(150)]
    body = gcp_cluster(DEEP, generation=2)
    body["_nested"] = 5000  # its spec 5,000 objects deep: 30 KB, where the decoder gives up near 1,000 levels
    world.hyperfleet.seed_cluster(DEEP, body)  # the oldest: on the doctor's first page too
    for cid in clusters:
        if cid != DEEP:
            campaign.seed_generation(world, cid, 1, namespace=False)

    results = [campaign.deliver_until_acknowledged(adapter, eventarc_attributes("n-1"), notification(), max_attempts=3)]
    published, pending = drain(pubsub)
    while pending:
        for envelope in pending:
            delivered = campaign.deliver_until_acknowledged(adapter, eventarc_attributes(), envelope, max_attempts=3)
            results.append(delivered)
        more, pending = drain(pubsub)
        published += more
    harness.count("cases tried")
    assert results[-1].result == "rotated", [(r.result, r.errors) for r in results]
    assert set(clusters) - {DEEP} <= set(published), f"{len(set(published))} of {len(clusters)} published"

    # The doctor's listing holds it too: the API check still passes.
    [api_line, *_] = doctor.run(adapter)
    assert (api_line.check, api_line.ok) == ("hyperfleet-api", True), api_line

    # Its own reconcile: terminal InvalidCluster, reported at the generation still readable, nothing written.
    world.book.reset_counters()
    own = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(DEEP, 2), max_attempts=3)
    assert own.result == "terminal", own
    mine = world.hyperfleet.state()["statuses"][DEEP]["pullsecret"]
    available = {c["type"]: c for c in mine["conditions"]}["Available"]
    assert (mine["observed_generation"], available["status"], available["reason"]) == (2, "False", "InvalidCluster")
    calls = world.book.calls()
    assert not SECRET_MANAGER_WRITES & set(calls.get("secretmanager", {})) and not calls.get("kubernetes"), calls


# A cluster the Go API serves (10,000 levels at most) that is too deep to decode, whatever recursion limit a
# library set (celpy raises it in this process), and too costly to walk: 9,000 levels, each with a member of
# bulk, 330 KB of spec past the walk's 128 KiB budget (jsonsplit.WALK_BYTES).
MARK = "HOSTILE-CONTENT-7f3a"
COSTLY_DEPTH = 9000


def _costly_spec() -> str:
    level = '{"p": "' + MARK + '", "a": '
    return level * COSTLY_DEPTH + "{}" + "}" * COSTLY_DEPTH


def test_a_cluster_too_costly_to_read_is_terminal_and_reported_at_the_events_generation(
    adapter_factory: Any, world: Any, capfd: Any
) -> None:
    """Its generation follows the spec (the emulator's member order), past where the walk stops: the status is
    reported at the event's generation, names the budget and echoes none of the content; nothing is written."""
    cid = "cls-costly-own"
    campaign.seed_generation(world, cid, 3)
    served = world.hyperfleet.state()["clusters"][cid]
    served["spec"] = "\u0000spec"
    text = json.dumps(served).replace(json.dumps("\u0000spec"), _costly_spec())
    assert text.index('"spec"') < text.index('"generation"') and len(text) > jsonsplit.WALK_BYTES
    world.hyperfleet.seed_cluster(cid, {"_raw": {"body": text}})  # what GET /clusters/{id} answers
    adapter = adapter_factory()
    capfd.readouterr()
    world.book.reset_counters()

    own = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 3), max_attempts=3)

    assert own.result == "terminal", own
    mine = world.hyperfleet.state()["statuses"][cid]["pullsecret"]
    conditions = {c["type"]: c for c in mine["conditions"]}
    applied, available = conditions["Applied"], conditions["Available"]
    assert (mine["observed_generation"], applied["status"], applied["reason"]) == (3, "False", "InvalidCluster")
    assert (available["status"], available["reason"]) == ("False", "InvalidCluster")
    assert f"{jsonsplit.WALK_BYTES // 1024} KiB" in applied["message"] and "budget" in applied["message"], applied
    assert MARK not in json.dumps(mine) and MARK not in capfd.readouterr().out
    calls = world.book.calls()
    assert not SECRET_MANAGER_WRITES & set(calls.get("secretmanager", {})) and not calls.get("kubernetes"), calls
    harness.count("cases tried")


def _costly_listed(world: Any, cluster_id: str) -> None:
    """A cluster listed deep (9,000 levels of spec, as the Go API serves) and bulky (2,500 labels, 190 KB): the
    list page's walk passes its budget on it."""
    body = gcp_cluster(cluster_id, generation=2)
    body["_nested"] = COSTLY_DEPTH
    body["labels"] = {f"pad-{i:04d}": MARK + "x" * 50 for i in range(2500)}
    world.hyperfleet.seed_cluster(cluster_id, body)


COSTLY = "cls-cost004"


@pytest.mark.pubsub
@pytest.mark.skipif(not AVAILABLE, reason=REASON)
def test_a_page_holding_a_cluster_too_costly_to_read_is_served_without_it_and_the_rotation_goes_on(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator, capfd: Any
) -> None:
    """The page keeps its length (the costly cluster's place stands empty), so the fan-out's keyset paging and the
    fleet's offset paging both reach the clusters after it; the costly one is left out and logged."""
    source_with_versions(admin)
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    adapter = adapter_factory(
        PUBSUB_EMULATOR_HOST=pubsub.address,
        ADAPTER_TOPIC=f"projects/{campaign.PROJECT}/topics/{TOPIC}",
        ROTATION_PUBLISH_RATE="1000",
    )
    clusters = [f"cls-cost{i:03d}" for i in range(150)]
    _costly_listed(world, COSTLY)
    for cid in clusters:
        if cid != COSTLY:
            campaign.seed_generation(world, cid, 1, namespace=False)
    others = set(clusters) - {COSTLY}
    capfd.readouterr()

    page, total = adapter.hyperfleet.list_clusters(page=1, size=100, order="id asc")
    assert [c.get("id") for c in page] == [c if c != COSTLY else None for c in clusters[:100]]
    assert total == 150
    listed = {c.get("id") for c in fleet.clusters(adapter, page_size=100)}
    assert others <= listed and COSTLY not in listed
    out = capfd.readouterr().out
    assert "too costly to read" in out and "left out of the listing" in out and MARK not in out

    results = [campaign.deliver_until_acknowledged(adapter, eventarc_attributes("n-1"), notification(), max_attempts=3)]
    published, pending = drain(pubsub)
    while pending:
        for envelope in pending:
            delivered = campaign.deliver_until_acknowledged(adapter, eventarc_attributes(), envelope, max_attempts=3)
            results.append(delivered)
        more, pending = drain(pubsub)
        published += more
    harness.count("cases tried")
    assert results[-1].result == "rotated", [(r.result, r.errors) for r in results]
    assert others <= set(published) and COSTLY not in published, f"{len(others & set(published))} of {len(others)}"
