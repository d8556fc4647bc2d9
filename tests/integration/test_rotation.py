"""Source rotation through the real Pub/Sub emulator: a SECRET_VERSION_ADD fans out reconcile events."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from emulators.pubsub import PubSubEmulator
from pullsecret.handler import Adapter
from tests.support import (
    CLUSTER_AUTH,
    PLATFORM_SOURCE_SECRET,
    Admin,
    eventarc_attributes,
    seed_ready_cluster,
)

AVAILABLE, REASON = PubSubEmulator.available()
pytestmark = [pytest.mark.pubsub, pytest.mark.skipif(not AVAILABLE, reason=REASON)]
PROJECT = "hf-demo-project"
TOPIC = "pullsecret-reconcile"
SUB = "pullsecret-reconcile-pull"


@pytest.fixture(scope="module")
def pubsub(stack: Any) -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(stack.book, project=PROJECT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def rotation_env(
    function_env: dict[str, str], pubsub: PubSubEmulator, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    env = {
        "PUBSUB_EMULATOR_HOST": pubsub.address,
        "ADAPTER_TOPIC": f"projects/{PROJECT}/topics/{TOPIC}",
        "ROTATION_PUBLISH_RATE": "5",
        "PULL_SECRET_SOURCE_TTL": "3600",  # only the notification may refresh the cached source
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return {**function_env, **env}


def notification(secret_id: str = PLATFORM_SOURCE_SECRET, event_type: str = "SECRET_VERSION_ADD") -> dict[str, Any]:
    """What Secret Manager publishes (names use the project number), as the trigger delivers it."""
    secret = f"projects/123456789012/secrets/{secret_id}"
    return {
        "message": {
            "data": base64.b64encode(json.dumps({"name": secret}).encode()).decode(),
            "attributes": {
                "eventType": event_type,
                "secretId": secret,
                "versionId": f"{secret}/versions/2",
                "dataFormat": "JSON_API_V1",
                "timestamp": "2026-11-21T10:00:00Z",
            },
            "messageId": "9001",
            "publishTime": "2099-01-01T00:00:00Z",
        },
        "subscription": "projects/hf-demo-project/subscriptions/source-rotation",
    }


def new_platform_version(admin: Admin) -> None:
    rotated = {"auths": {"quay.io": {"auth": CLUSTER_AUTH}, "registry.redhat.io": {"auth": CLUSTER_AUTH}}}
    current = admin.get(f"/secretmanager/projects/{PROJECT}/secrets/{PLATFORM_SOURCE_SECRET}")
    payloads = [v["payload_b64"] for v in current["versions"]]
    payloads.append(base64.b64encode(json.dumps(rotated).encode()).decode())
    admin.call("PUT", f"/secretmanager/projects/{PROJECT}/secrets/{PLATFORM_SOURCE_SECRET}", {"versions": payloads})


def test_source_rotation_reaches_every_live_cluster_at_a_bounded_rate(
    rotation_env: dict[str, str], pubsub: PubSubEmulator, admin: Admin, world: Any
) -> None:
    adapter = Adapter.from_environment()
    clusters = ["cls-rot1", "cls-rot2", "cls-rot3"]
    for cid in clusters:
        seed_ready_cluster(admin, cid)
        assert adapter.handle(eventarc_attributes(), _reconcile_envelope(cid)).result == "applied"
    seed_ready_cluster(admin, "cls-rotdel")
    admin.patch_cluster("cls-rotdel", {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z"})
    new_platform_version(admin)

    started = time.monotonic()
    outcome = adapter.handle(eventarc_attributes("n-1"), notification())
    elapsed = time.monotonic() - started
    assert outcome.result == "rotated"
    assert elapsed >= (len(clusters) - 1) / 5 - 0.05  # ROTATION_PUBLISH_RATE=5/s

    received = pubsub.pull(SUB, 10)
    events = [json.loads(base64.b64decode(m["message"]["data"])) for m in received]
    assert sorted(e["data"]["id"] for e in events) == clusters  # the deleted cluster is skipped
    for message, event in zip(received, events, strict=True):
        assert event["type"] == "com.redhat.hyperfleet.cluster.reconcile" and event["data"]["kind"] == "Cluster"
        assert message["message"]["attributes"] == {"_watermill_message_uuid": event["id"]}

    # Delivering the published events as the trigger would: every cluster gets the new content at once,
    # although the source cache TTL is an hour (the notification dropped it).
    for message in received:
        envelope = {"message": message["message"], "subscription": f"projects/{PROJECT}/subscriptions/{SUB}"}
        assert adapter.handle(eventarc_attributes(), envelope).result == "applied"
    for cid in clusters:
        stored = world.secretmanager.versions(PROJECT, f"hyperfleet-{cid}-pull-secret")
        assert len(stored) == 2
        payload = json.loads(base64.b64decode(stored[-1]["payload_b64"]))
        assert payload["auths"]["quay.io"]["auth"] == CLUSTER_AUTH


def test_other_notifications_publish_nothing(
    rotation_env: dict[str, str], pubsub: PubSubEmulator, admin: Admin, world: Any
) -> None:
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, "cls-rot1")
    assert adapter.handle(eventarc_attributes(), notification("some-other-secret")).result == "ignored"
    assert adapter.handle(eventarc_attributes(), notification(event_type="SECRET_UPDATE")).result == "ignored"
    assert pubsub.pull(SUB, 10) == []


def test_publish_failure_is_transient(
    rotation_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    from pullsecret.errors import TransientError

    monkeypatch.setenv("ADAPTER_TOPIC", f"projects/{PROJECT}/topics/no-such-topic")
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, "cls-rot1")
    new_platform_version(admin)  # the notification names the newest version: it is acted on
    with pytest.raises(TransientError, match="publishing reconcile events failed"):
        adapter.handle(eventarc_attributes(), notification())


def _reconcile_envelope(cluster_id: str) -> dict[str, Any]:
    from tests.support import pubsub_envelope, sentinel_event

    return pubsub_envelope(sentinel_event(cluster_id))


def test_a_source_that_follows_no_secret_ignores_a_notification(
    rotation_env: dict[str, str],
    pubsub: PubSubEmulator,
    admin: Admin,
    world: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Service mode: the platform secret's notification (a stray subscription) is acknowledged, nothing published.
    monkeypatch.delenv("PULL_SECRET_SOURCE", raising=False)
    monkeypatch.setenv("PULL_SECRET_SERVICE_URL", world.pullsecretservice.url)
    monkeypatch.setenv("PULL_SECRET_SERVICE_AUTH", "google-id-token")
    adapter = Adapter.from_environment()
    seed_ready_cluster(admin, "cls-rot1")
    new_platform_version(admin)
    capsys.readouterr()
    assert adapter.handle(eventarc_attributes(), notification()).result == "ignored"
    assert pubsub.pull(SUB, 10) == []
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    final = [line for line in lines if line.get("operation") == "rotation" and "result" in line]
    assert [(line["result"], line["published"], line["severity"]) for line in final] == [("ignored", 0, "INFO")]


def test_rekey_in_platform_mode_fans_out_the_newest_version_and_refuses_a_compromise(
    rotation_env: dict[str, str], pubsub: PubSubEmulator, admin: Admin, world: Any
) -> None:
    from pullsecret.operator import rekey

    adapter = Adapter.from_environment()
    clusters = ["cls-rk1", "cls-rk2"]
    for cid in clusters:
        seed_ready_cluster(admin, cid)
    app = adapter
    lines: list[str] = []
    assert rekey.run(app, rekey.Request(compromise=True), out=lines.append) == rekey.EXIT_USAGE
    assert lines == ["error: --compromise needs service mode: in platform mode add a new version of PULL_SECRET_SOURCE"]
    assert rekey.run(app, rekey.Request(watch=True, watch_timeout_s=0), out=lines.append, sleep=lambda s: None) == 0
    assert "rekey (platform): every cluster's reconcile event is published (2 by this run)" in lines
    assert lines[-1].startswith("watch: every cluster was published for version")
    events = [json.loads(base64.b64decode(m["message"]["data"])) for m in pubsub.pull(SUB, 10)]
    assert sorted(e["data"]["id"] for e in events) == clusters
    again: list[str] = []  # no new version: nothing new to fan out, said with its fix, and exit 4 (nothing done)
    assert rekey.run(app, rekey.Request(), out=again.append) == rekey.EXIT_NOTHING_DONE
    assert "nothing new; to re-key, add a new version of PULL_SECRET_SOURCE first" in again[-1]
    dry: list[str] = []
    assert rekey.run(app, rekey.Request(dry_run=True), out=dry.append) == 0
    assert dry[:2] == ["  cls-rk1: reconcile event", "  cls-rk2: reconcile event"]
