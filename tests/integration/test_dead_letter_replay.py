"""terraform/README.md's dead-letter replay recipe, run as written (bash and the real gcloud) against the Cloud
SDK's Pub/Sub emulator: each dead-lettered event reaches the cluster events topic byte for byte, and nothing is
acknowledged before its copy is published."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators.faults import FaultBook
from emulators.pubsub import PubSubEmulator
from tests.support import sentinel_event

AVAILABLE, REASON = PubSubEmulator.available()
pytestmark = [pytest.mark.pubsub, pytest.mark.skipif(not AVAILABLE, reason=REASON)]

README = Path(__file__).resolve().parents[2] / "terraform" / "README.md"
PROJECT = "hf-demo-project"
ACK_DEADLINE_S = 10  # Pub/Sub's minimum: an unacknowledged message is redelivered after it


def replay_recipe() -> str:
    """The fenced block that follows "Replay dead-lettered events" in terraform/README.md."""
    match = re.search(r"Replay dead-lettered events[^\n]*\n\n```sh\n(.*?)```", README.read_text(), re.DOTALL)
    assert match, "terraform/README.md has no replay recipe"
    return match.group(1)


@pytest.fixture
def pubsub() -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(FaultBook(), project=PROJECT)
    emulator.start()
    try:
        emulator.create_topic("dead-letter")
        emulator.create_pull_subscription("dead-letter", "dead-letter", ack_deadline=ACK_DEADLINE_S)
        emulator.create_topic("cluster-events")
        emulator.create_pull_subscription("cluster-events", "events-check")
        yield emulator
    finally:
        emulator.stop()


def run_recipe(pubsub: PubSubEmulator, tmp_path: Path, *, topic: str) -> subprocess.CompletedProcess[str]:
    # `terraform output -raw NAME` answers what an apply would print; everything else runs as written.
    outputs = {
        "dead_letter_subscription": pubsub.subscription_path("dead-letter"),
        "cluster_events_topic": pubsub.topic_path(topic),
    }
    cases = "\n".join(f'    {name}) printf %s "{value}";;' for name, value in outputs.items())
    preamble = f'terraform() {{\n  case "$3" in\n{cases}\n  esac\n}}\n'
    env = {
        **os.environ,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB": f"http://{pubsub.address}/",
        "CLOUDSDK_CORE_PROJECT": PROJECT,
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
    }
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run(
        [bash, "-o", "pipefail", "-c", preamble + replay_recipe()],
        cwd=README.parent,  # the recipe runs where `terraform output` works
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_replay_recipe_republishes_each_event_once_decoded(pubsub: PubSubEmulator, tmp_path: Path) -> None:
    events = [sentinel_event(f"cls-replay{i}", i + 1) for i in range(2)]
    for event in events:
        pubsub.publish_sentinel_event("dead-letter", event)
    result = run_recipe(pubsub, tmp_path, topic="cluster-events")
    assert result.returncode == 0, result.stderr
    republished = [m["message"]["data"] for m in pubsub.pull("events-check")]
    # Byte for byte what was dead-lettered: decoded once, not republished as base64 text.
    received = [json.loads(base64.b64decode(d)) for d in republished]
    assert sorted(received, key=lambda e: e["id"]) == sorted(events, key=lambda e: e["id"])
    time.sleep(ACK_DEADLINE_S + 2)  # an unacknowledged message would be back by now
    assert pubsub.pull("dead-letter") == [], "the recipe left dead-lettered events unacknowledged"


def urlsafe_event(cluster_id: str, generation: int) -> dict[str, object]:
    """A Sentinel event whose JSON's base64 holds both `-` and `_` in the URL-safe alphabet (`+` and `/` in the
    standard one: `base64 -d` stops there), with an href query and non-ASCII text."""
    event = sentinel_event(cluster_id, generation)
    for extra in range(400):
        event["data"]["href"] = f"https://api.example.com/clusters/{cluster_id}?x=1&pad={'~' * extra}"
        event["data"]["note"] = "café ✓ ~?>"
        encoded = base64.b64encode(json.dumps(event, separators=(",", ":")).encode()).decode()
        if "+" in encoded and "/" in encoded:
            return event
    raise AssertionError("no padding gave an encoding with both + and /")


def test_events_whose_encoding_holds_dash_and_underscore_are_replayed_whole(
    pubsub: PubSubEmulator, tmp_path: Path
) -> None:
    events = [urlsafe_event(f"cls-urlsafe{i}", i + 1) for i in range(2)]
    for event in events:
        pubsub.publish_sentinel_event("dead-letter", event)
    result = run_recipe(pubsub, tmp_path, topic="cluster-events")
    assert result.returncode == 0, result.stderr
    received = [json.loads(base64.b64decode(m["message"]["data"])) for m in pubsub.pull("events-check")]
    assert sorted(received, key=lambda e: e["id"]) == sorted(events, key=lambda e: e["id"])
    time.sleep(ACK_DEADLINE_S + 2)
    assert pubsub.pull("dead-letter") == []


def test_a_message_that_does_not_decode_is_neither_published_nor_acknowledged(
    pubsub: PubSubEmulator, tmp_path: Path
) -> None:
    good = sentinel_event("cls-replayok", 1)
    pubsub.publish_sentinel_event("dead-letter", good)
    pubsub.publish("dead-letter", b"\xff\xfe not text", {})  # not UTF-8: `--message` cannot carry it
    result = run_recipe(pubsub, tmp_path, topic="cluster-events")
    assert result.returncode == 1 and "does not decode" in result.stderr, result.stderr
    received = [json.loads(base64.b64decode(m["message"]["data"])) for m in pubsub.pull("events-check")]
    assert received == [good]
    time.sleep(ACK_DEADLINE_S + 2)
    kept = pubsub.pull("dead-letter")
    assert [base64.b64decode(m["message"]["data"]) for m in kept] == [b"\xff\xfe not text"]


def test_a_failed_republish_leaves_the_event_in_the_dead_letter_subscription(
    pubsub: PubSubEmulator, tmp_path: Path
) -> None:
    event = sentinel_event("cls-replayx", 3)
    pubsub.publish_sentinel_event("dead-letter", event)
    result = run_recipe(pubsub, tmp_path, topic="no-such-topic")  # the publish fails: NOT_FOUND
    assert result.returncode != 0
    time.sleep(ACK_DEADLINE_S + 2)
    kept = pubsub.pull("dead-letter")
    assert [json.loads(base64.b64decode(m["message"]["data"])) for m in kept] == [event]
