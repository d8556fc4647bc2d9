"""Pure parsing of every delivery path and Sentinel variant into a ReconcileRequest or a skip."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from pullsecret.model.events import ReconcileRequest, SkippedEvent, event_age_s, parse_event

FIXTURES = Path(__file__).parent.parent / "fixtures" / "events"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def pubsub_attributes() -> dict[str, Any]:
    return {"id": "9876543210", "type": "google.cloud.pubsub.topic.v1.messagePublished", "source": "//pubsub"}


def test_pubsub_envelope_yields_the_sentinel_event() -> None:
    body = load("pubsub-push.json")["body"]
    parsed = parse_event(pubsub_attributes(), {"message": body["message"]})
    assert isinstance(parsed, ReconcileRequest)
    assert (parsed.cluster_id, parsed.generation, parsed.transport) == ("cls-abc123", 5, "pubsub")
    assert parsed.event_id == "0192f0c2-7b1e-7cc4-9a51-2f1e7d8f0b11"
    assert parsed.published_at is not None and parsed.published_at.year == 2026


@pytest.mark.parametrize(
    "name", ["sentinel-structured.json", "sentinel-variant-capital-kind.json", "sentinel-variant-v1.json"]
)
def test_direct_sentinel_variants(name: str) -> None:
    event = load(name)["body"]
    attributes = {k: v for k, v in event.items() if k != "data"}
    parsed = parse_event(attributes, event["data"])
    assert isinstance(parsed, ReconcileRequest), parsed
    assert parsed.cluster_id == "cls-abc123"
    assert parsed.generation == 5


def test_traceparent_extension_and_cloud_trace_header() -> None:
    event = load("sentinel-binary.json")
    attributes = {
        "id": "e1",
        "type": "com.redhat.hyperfleet.cluster.reconcile",
        "source": "s",
        "traceparent": event["headers"]["ce-traceparent"],
    }
    parsed = parse_event(attributes, event["body"])
    assert parsed.trace is not None and parsed.trace.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    parsed = parse_event(
        {"id": "e1", "type": "com.redhat.hyperfleet.cluster.reconcile"},
        event["body"],
        cloud_trace_context="105445aa7843bc8bf206b12000100000/1;o=1",
    )
    assert parsed.trace is not None and parsed.trace.trace_id == "105445aa7843bc8bf206b12000100000"
    assert parsed.trace.sampled


def test_nodepool_events_are_skipped_with_a_reason() -> None:
    body = load("nodepool-push.json")["body"]
    parsed = parse_event(pubsub_attributes(), {"message": body["message"]})
    assert isinstance(parsed, SkippedEvent)
    assert "clusters only" in parsed.reason


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("not json", "not JSON"),
        ({"nomessage": 1}, "no 'message'"),
        ({"message": {}}, "no 'data'"),
        ({"message": {"data": "%%%not-base64"}}, "not base64"),
        ({"message": {"data": b64(b"\x00\xffgarbage")}}, "not a structured-mode CloudEvent"),
        ({"message": {"data": b64(b'{"id": "x"}')}}, "not a structured-mode CloudEvent"),
        ({"message": {"data": "A" * 400_000}}, "larger than"),
    ],
)
def test_bad_envelopes_are_skipped(data: Any, reason: str) -> None:
    parsed = parse_event(pubsub_attributes(), data)
    assert isinstance(parsed, SkippedEvent)
    assert reason in parsed.reason


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"kind": "Cluster"}, "no usable cluster id"),
        ({"id": "../etc"}, "no usable cluster id"),
        ({"id": "a/b"}, "no usable cluster id"),
        ({"id": 42}, "no usable cluster id"),
        ({"id": "c1", "kind": "NodePool"}, "not Cluster"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_bad_sentinel_data_is_skipped(data: Any, reason: str) -> None:
    parsed = parse_event({"id": "e", "type": "com.redhat.hyperfleet.cluster.reconcile"}, data)
    assert isinstance(parsed, SkippedEvent)
    assert reason in parsed.reason


def test_unknown_event_types_are_skipped() -> None:
    parsed = parse_event({"id": "e", "type": "com.example.other"}, {"id": "c1"})
    assert isinstance(parsed, SkippedEvent)
    assert "not a HyperFleet reconcile event" in parsed.reason


def test_bad_generation_is_ignored_not_fatal() -> None:
    for generation in (0, -1, "5", True, None):
        parsed = parse_event(
            {"id": "e", "type": "com.redhat.hyperfleet.cluster.reconcile"}, {"id": "c1", "generation": generation}
        )
        assert isinstance(parsed, ReconcileRequest)
        assert parsed.generation is None
        # Kept as sent for the handler's warning; an absent generation is no mistake and warns nothing.
        assert parsed.unusable_generation == (None if generation is None else json.dumps(generation))


def test_pubsub_binary_binding_with_ce_attributes() -> None:
    message = {
        "data": b64(b'{"id": "c9", "generation": 2}'),
        "messageId": "m1",
        "attributes": {"ce-type": "com.redhat.hyperfleet.cluster.reconcile", "ce-id": "ev-9", "ce-source": "s"},
    }
    parsed = parse_event(pubsub_attributes(), {"message": message})
    assert isinstance(parsed, ReconcileRequest)
    assert (parsed.cluster_id, parsed.event_id, parsed.generation) == ("c9", "ev-9", 2)


def test_event_age() -> None:
    body = load("pubsub-push.json")["body"]
    parsed = parse_event(pubsub_attributes(), {"message": body["message"]})
    assert isinstance(parsed, ReconcileRequest)
    age = event_age_s(parsed)
    assert age is not None and age > 0
