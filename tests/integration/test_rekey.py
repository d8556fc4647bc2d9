"""`python -m pullsecret rekey` in service mode, through the Pull Secret Service, Pub/Sub and registry emulators.

Outcomes asserted: the service's rotations and live credentials, the events on ADAPTER_TOPIC, what each cluster's
Kubernetes Secret holds after its event, the registry's answer to the old and new credentials, the progress
record's effect on a resumed and a repeated run.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from emulators.pubsub import PubSubEmulator
from pullsecret.handler import Adapter
from pullsecret.operator import convergence, rekey
from pullsecret.publishing import Publisher
from tests.integration.service_mode import registry_accepts, service_env
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

AVAILABLE, REASON = PubSubEmulator.available()
pytestmark = [pytest.mark.pubsub, pytest.mark.skipif(not AVAILABLE, reason=REASON)]
PROJECT = "hf-demo-project"
TOPIC = "pullsecret-adapter"
SUB = "pullsecret-adapter-pull"
CLUSTERS = ["cls-rk01", "cls-rk02", "cls-rk03", "cls-rk04", "cls-rk05"]


@pytest.fixture(scope="module")
def pubsub(stack: Any) -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(stack.book, project=PROJECT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def adapter(make_adapter: Any, world: Any, admin: Admin, pubsub: PubSubEmulator) -> Adapter:
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    built: Adapter = make_adapter(
        {
            **service_env(world, "google-id-token"),
            "PUBSUB_EMULATOR_HOST": pubsub.address,
            "ADAPTER_TOPIC": f"projects/{PROJECT}/topics/{TOPIC}",
            "ROTATION_PUBLISH_RATE": "5",
            "SECRET_PROJECT_ID": PROJECT,
        }
    )
    for cid in CLUSTERS:
        seed_ready_cluster(admin, cid)
        assert built.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cid))).result == "applied"
    return built


def auth_of(world: Any, cid: str) -> str:
    """The quay credential the cluster's Kubernetes Secret holds."""
    secret = world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret")
    document = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    auth: str = document["auths"][world.registry.hosts()["basic"]]["auth"]
    return auth


def rotations(admin: Admin, cid: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = admin.get("/pullsecretservice/state")["rotations"].get(cid, [])
    return found


def deliver_published(adapter: Adapter, pubsub: PubSubEmulator) -> list[str]:
    """Hand every published event to the function, as the trigger would; the cluster ids, in order."""
    ids = []
    for message in pubsub.pull(SUB, 100):
        event = json.loads(base64.b64decode(message["message"]["data"]))
        ids.append(event["data"]["id"])
        envelope = {"message": message["message"], "subscription": f"projects/{PROJECT}/subscriptions/{SUB}"}
        assert adapter.handle(eventarc_attributes(), envelope).result in ("applied", "unchanged")
    return ids


def run(adapter: Adapter, lines: list[str], **asked: Any) -> int:
    seams = asked.pop("_seams", {})
    return rekey.run(adapter, rekey.Request(**asked), out=lines.append, **seams)


def test_a_compromise_rekey_revokes_the_old_credentials_at_once_and_each_cluster_gets_the_new_set(
    adapter: Adapter, admin: Admin, world: Any, pubsub: PubSubEmulator
) -> None:
    old = {cid: auth_of(world, cid) for cid in CLUSTERS}
    lines: list[str] = []
    assert run(adapter, lines, compromise=True) == 0
    assert "5 rotated" in lines[-1] or any("5 rotated" in line for line in lines)
    for cid in CLUSTERS:
        assert [r["reason"] for r in rotations(admin, cid)] == ["compromise"]
        assert not registry_accepts(world, old[cid])  # revoked at once, before the cluster has the new set
    assert sorted(deliver_published(adapter, pubsub)) == CLUSTERS
    app = adapter
    for cid in CLUSTERS:
        new = auth_of(world, cid)
        assert new != old[cid] and registry_accepts(world, new)
        ours = next(s for s in app.hyperfleet.list_statuses(cid) if s.get("adapter") == "pullsecret")
        assert convergence.held(app, cid, ours).state == "current"
    watched: list[str] = []
    assert rekey.watch(app, rekey.Request(watch_timeout_s=0), watched.append, time.sleep) == 0
    assert watched[-1].startswith("watch: 5 of 5 hold the current credentials")


def test_events_go_out_at_the_publish_rate(adapter: Adapter, pubsub: PubSubEmulator) -> None:
    lines: list[str] = []
    began = time.monotonic()
    assert run(adapter, lines) == 0
    assert time.monotonic() - began >= (len(CLUSTERS) - 1) / 5 - 0.05  # ROTATION_PUBLISH_RATE=5/s
    assert len(pubsub.pull(SUB, 100)) == len(CLUSTERS)


def test_a_slow_service_does_not_set_the_pace(adapter: Adapter, admin: Admin, pubsub: PubSubEmulator) -> None:
    # Each cluster's GET and rotation POST take 0.3 s together, longer than the 0.2 s publish slot (5/s): done one
    # after the other before each publish, they set the pace and no publish ever waits for its slot. Started ahead
    # of their clusters, they are ready when the slot comes, and the publishes wait for the publish rate.
    admin.fault(service="pullsecretservice", method="get", latency_ms=150)
    admin.fault(service="pullsecretservice", method="rotations.post", latency_ms=150)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    assert run(adapter, [], _seams={"sleep": sleep}) == 0
    assert len(waits) >= len(CLUSTERS) - 2, waits  # the first goes at once; the rest wait for their slots
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1] * len(CLUSTERS)
    assert len(pubsub.pull(SUB, 100)) == len(CLUSTERS)


def test_an_interrupted_run_resumes_and_rotates_no_cluster_twice(
    adapter: Adapter, admin: Admin, pubsub: PubSubEmulator
) -> None:
    publisher = Publisher(adapter.identity.credentials)
    published: list[str] = []

    def interrupting_publish(topic: str, event: dict[str, Any]) -> Any:
        if len(published) == 3:  # the fourth cluster at its slot: rotated, its event not yet published
            raise KeyboardInterrupt
        published.append(str(event["data"]["id"]))
        return publisher.publish(topic, event)

    lines: list[str] = []
    interrupting = SimpleNamespace(publish=interrupting_publish)
    assert run(adapter, lines, page_size=2, _seams={"publisher": interrupting}) == 3
    assert "interrupted" in lines[-1] and "progress saved after cls-rk03" in lines[-1]
    # The fifth was rotated too, its service step begun ahead of its slot (rekey.LOOKAHEAD); neither has its event.
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1, 1, 1, 1, 1]
    first = sorted(deliver_published(adapter, pubsub))
    assert first == CLUSTERS[:3]

    resumed: list[str] = []
    assert run(adapter, resumed, page_size=2) == 0
    assert resumed[0].startswith("rekey: resuming after cls-rk03")
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1, 1, 1, 1, 1]  # none twice
    assert sorted(deliver_published(adapter, pubsub)) == CLUSTERS[3:]


def test_a_second_run_does_nothing_new(adapter: Adapter, admin: Admin, pubsub: PubSubEmulator) -> None:
    assert run(adapter, []) == 0
    pubsub.pull(SUB, 100)
    again: list[str] = []
    assert run(adapter, again) == 0
    assert "nothing new" in again[-1]
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1] * len(CLUSTERS)
    assert pubsub.pull(SUB, 100) == []


def test_a_dry_run_rotates_and_publishes_nothing(adapter: Adapter, admin: Admin, pubsub: PubSubEmulator) -> None:
    lines: list[str] = []
    assert run(adapter, lines, dry_run=True, compromise=True) == 0
    assert sum("compromise rotation" in line for line in lines) == len(CLUSTERS)
    assert all(rotations(admin, cid) == [] for cid in CLUSTERS)
    assert pubsub.pull(SUB, 100) == []
