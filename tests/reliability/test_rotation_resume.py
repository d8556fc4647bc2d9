"""Rotation fan-out through the Cloud SDK's Pub/Sub emulator: handed on when its slice runs out, resumed by a
redelivered notification, and never republished from page 1."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from emulators.pubsub import PubSubEmulator
from pullsecret.source.platform.rotation import CONTINUATION
from tests.reliability import campaign, harness
from tests.reliability.rotation_fanout import SUB, TOPIC, drain, notification, source_with_versions
from tests.support import eventarc_attributes

AVAILABLE, REASON = PubSubEmulator.available()
pytestmark = [pytest.mark.pubsub, pytest.mark.skipif(not AVAILABLE, reason=REASON)]


@pytest.fixture(scope="module")
def pubsub(stack: Any) -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(stack.book, project=campaign.PROJECT)
    emulator.start()
    yield emulator
    emulator.stop()


def test_redelivered_notifications_resume_and_publish_each_cluster_at_most_once_more(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator
) -> None:
    source_with_versions(admin)
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    adapter = adapter_factory(
        PUBSUB_EMULATOR_HOST=pubsub.address,
        ADAPTER_TOPIC=f"projects/{campaign.PROJECT}/topics/{TOPIC}",
        ROTATION_PUBLISH_RATE="60",
        ROTATION_SLICE="2",  # about 1.5 s of publishing per invocation: 250 clusters need several
    )
    clusters = [f"cls-rot{i:03d}" for i in range(250)]
    for cid in clusters:
        campaign.seed_generation(world, cid, 1, namespace=False)
    counts: Counter[str] = Counter()

    # 1. The notification: its invocation runs out of slice and hands on. Its continuation is lost
    #    (say the instance died right after saving its place).
    first = adapter.handle(eventarc_attributes("n-1"), notification())
    assert first.result == "continued"
    published, _lost = drain(pubsub)
    counts.update(published)
    assert 0 < len(published) < len(clusters)

    # 2. Pub/Sub redelivers the notification: it resumes where the first one stopped, not at page 1,
    #    and its own continuations carry it to the end.
    harness.count("deliveries")
    results = [adapter.handle(eventarc_attributes("n-1"), notification()).result]
    published, pending = drain(pubsub)
    assert published and published[0] not in counts, "the redelivery started over"
    counts.update(published)
    while pending:
        harness.count("deliveries", len(pending))
        for envelope in pending:
            results.append(adapter.handle(eventarc_attributes(), envelope).result)
        published, pending = drain(pubsub)
        counts.update(published)
    assert results[-1] == "rotated", results

    # 3. A second redelivery of the same notification: the fan-out is recorded as done.
    harness.count("deliveries")
    assert adapter.handle(eventarc_attributes("n-1"), notification()).result == "done"
    assert drain(pubsub) == ([], [])
    harness.count("cases tried")
    assert set(counts) == set(clusters)
    assert max(counts.values()) <= 2, counts.most_common(3)  # at most once more than needed
    assert sum(counts.values()) - len(clusters) <= 100  # repeats: at most the part of one page since the last save

    # 4. An older version's notification arriving late does not restart anything.
    assert adapter.handle(eventarc_attributes("n-0"), notification(version=1)).result == "ignored"
    assert drain(pubsub) == ([], [])


@pytest.mark.parametrize("code", ["UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL"])
def test_lost_answers_of_the_progress_record_neither_stall_nor_repeat_the_fan_out(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator, code: str
) -> None:
    """The record's CreateSecret / UpdateSecret land but their answers are lost: the record is read back."""
    source_with_versions(admin)
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    adapter = adapter_factory(
        PUBSUB_EMULATOR_HOST=pubsub.address,
        ADAPTER_TOPIC=f"projects/{campaign.PROJECT}/topics/{TOPIC}",
        ROTATION_PUBLISH_RATE="200",
    )
    clusters = [f"cls-rec{i:03d}" for i in range(150)]  # two pages: a create and two updates of the record
    for cid in clusters:
        campaign.seed_generation(world, cid, 1, namespace=False)
    for method in ("CreateSecret", "UpdateSecret"):
        admin.fault(service="secretmanager", method=method, code=code, count=1, lost_response=True)
    harness.count("faults injected", 2)
    harness.count("deliveries", 2)
    assert adapter.handle(eventarc_attributes("n-1"), notification()).result == "rotated"
    assert adapter.handle(eventarc_attributes("n-1"), notification()).result == "done"
    published, continuations = drain(pubsub)
    harness.count("cases tried")
    assert continuations == []
    assert sorted(published) == clusters  # each exactly once
    record = world.secretmanager.secret(campaign.PROJECT, "hyperfleet-_rotation_pullsecret-pull-secret")
    assert record is not None and record["versions"] == [] and record["labels"]["managed-by"] == "hyperfleet"


def _rotation_adapter(adapter_factory: Any, pubsub: PubSubEmulator) -> Any:
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    return adapter_factory(
        PUBSUB_EMULATOR_HOST=pubsub.address,
        ADAPTER_TOPIC=f"projects/{campaign.PROJECT}/topics/{TOPIC}",
        ROTATION_PUBLISH_RATE="200",
    )


def test_a_forged_version_number_cannot_silence_later_rotations(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator
) -> None:
    """A SECRET_VERSION_ADD naming versions/999999999 (anyone who may publish to the topic can send it) used to
    be recorded, and every real rotation after it was `ignored` as older."""
    source_with_versions(admin)
    adapter = _rotation_adapter(adapter_factory, pubsub)
    clusters = [f"cls-forge{i}" for i in range(3)]
    for cid in clusters:
        campaign.seed_generation(world, cid, 1, namespace=False)
    harness.count("deliveries", 2)
    assert adapter.handle(eventarc_attributes("f-1"), notification(999999999)).result == "ignored"
    assert drain(pubsub) == ([], [])
    assert adapter.handle(eventarc_attributes("f-2"), notification(2)).result == "rotated"
    published, _ = drain(pubsub)
    harness.count("cases tried")
    assert sorted(published) == clusters


def test_a_recreated_source_rotates_although_its_numbering_restarted(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator
) -> None:
    """The source deleted and created again numbers its versions from 1: its rotations are not `ignored`."""
    source_with_versions(admin, 3)
    adapter = _rotation_adapter(adapter_factory, pubsub)
    campaign.seed_generation(world, "cls-recreate", 1, namespace=False)
    assert adapter.handle(eventarc_attributes("r-1"), notification(3)).result == "rotated"
    drain(pubsub)
    source_with_versions(admin, 1)  # recreated: one version, numbered 1
    harness.count("deliveries", 2)
    assert adapter.handle(eventarc_attributes("r-2"), notification(1)).result == "rotated"
    published, _ = drain(pubsub)
    harness.count("cases tried")
    assert published == ["cls-recreate"]


def test_a_continuation_without_the_record_nonce_is_refused(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator
) -> None:
    """A handed-on notification must carry the nonce the progress record holds; a forged one publishes nothing."""
    source_with_versions(admin)
    adapter = _rotation_adapter(adapter_factory, pubsub)
    campaign.seed_generation(world, "cls-nonce", 1, namespace=False)
    for forged in ("1:0", ""):
        envelope = notification()
        envelope["message"]["attributes"][CONTINUATION] = forged
        harness.count("deliveries")
        assert adapter.handle(eventarc_attributes("c-1"), envelope).result == "refused"
    harness.count("cases tried")
    assert drain(pubsub) == ([], [])


@pytest.mark.parametrize("nonce", ["n\u00f6nce-\u2713", "\udc80", "wrong-but-ascii"])
def test_a_forged_continuation_is_refused_cleanly_whatever_its_nonce(
    adapter_factory: Any, world: Any, admin: Any, pubsub: PubSubEmulator, nonce: str
) -> None:
    """Anyone with publish rights can send a continuation: a non-ASCII nonce is a refusal, not a crash."""
    source_with_versions(admin)
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    adapter = adapter_factory(
        PUBSUB_EMULATOR_HOST=pubsub.address,
        ADAPTER_TOPIC=f"projects/{campaign.PROJECT}/topics/{TOPIC}",
        ROTATION_PUBLISH_RATE="60",
        ROTATION_SLICE="1",
    )
    for cid in [f"cls-forge{i:03d}" for i in range(150)]:
        campaign.seed_generation(world, cid, 1, namespace=False)
    # The genuine notification first: a transient answer (a record write past its deadline on a loaded machine) is
    # redelivered, as Pub/Sub would; the case under test is the forged continuation below.
    assert (
        campaign.deliver_until_acknowledged(adapter, eventarc_attributes("n-1"), notification(), max_attempts=3).result
        == "continued"
    )
    _published, pending = drain(pubsub)
    assert pending
    forged = json.loads(json.dumps(pending[0]))
    forged["message"]["attributes"][CONTINUATION] = nonce
    harness.count("cases tried")
    harness.count("deliveries")
    assert adapter.handle(eventarc_attributes("forged"), forged).result == "refused"
    assert drain(pubsub) == ([], [])
