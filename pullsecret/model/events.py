"""CloudEvent / Pub/Sub envelope → `ReconcileRequest`, for every transport of docs/contract.md §1.

An event's `transport` is how it arrived (pubsub, direct, cli), not the delivery mode (KUBERNETES_DELIVERY).

1. Eventarc `google.cloud.pubsub.topic.v1.messagePublished` (binary mode), and 2. a plain Pub/Sub push
   envelope (functions-framework converts it to the same CloudEvent type): the Sentinel event is a
   structured-mode CloudEvent, JSON, base64 in `message.data`.
3. `gcloud functions call --cloud-event`: any of the above, or the Sentinel event itself.
4. A Sentinel CloudEvent delivered directly (binary or structured HTTP).

Anything that is not a cluster reconcile event becomes a `SkippedEvent` with a reason; parsing
never raises for bad input.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cloudevents import exceptions as ce_exceptions
from cloudevents.http import from_dict as cloudevent_from_dict

from pullsecret.logs import TraceContext, parse_trace

PUBSUB_MESSAGE_PUBLISHED = "google.cloud.pubsub.topic.v1.messagePublished"
# com.redhat.hyperfleet.cluster.reconcile, ...Cluster.reconcile (older Sentinels), ...reconcile.v1 (broker docs)
_SENTINEL_TYPE = re.compile(r"^com\.redhat\.hyperfleet\.([A-Za-z]+)\.reconcile(?:\.v1)?$")
# HyperFleet ids go into URL paths: refuse anything that could walk the path or the query.
_CLUSTER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]{0,254}$")
MAX_MESSAGE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ReconcileRequest:
    """One cluster reconcile request, whatever path it came by."""

    cluster_id: str
    generation: int | None
    event_id: str
    event_type: str
    transport: str
    trace: TraceContext | None = None
    published_at: datetime | None = None
    # The event's `generation` as sent, when it was there but no positive integer (dropped; a warning says so).
    unusable_generation: str | None = None


@dataclass(frozen=True)
class SkippedEvent:
    """An event this adapter acknowledges without acting (other kinds, unparseable data)."""

    reason: str
    event_id: str
    event_type: str
    transport: str
    trace: TraceContext | None = None


ParsedEvent = ReconcileRequest | SkippedEvent


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time (a date alone means its midnight UTC; no zone means UTC) as an aware datetime; None when
    `value` is not one. The one parser of the times events, the Pull Secret Service and the CLI write."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _as_object(data: Any) -> Any:
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    if isinstance(data, str):
        return json.loads(data)
    return data


def parse_event(attributes: Mapping[str, Any], data: Any, *, cloud_trace_context: str | None = None) -> ParsedEvent:
    """Turn one received CloudEvent (its attributes and data) into a request or a skip; never raises."""
    event_type = str(attributes.get("type") or "")
    outer_trace = parse_trace(_str_or_none(attributes.get("traceparent")), cloud_trace_context)

    if event_type == PUBSUB_MESSAGE_PUBLISHED:
        return _from_pubsub(attributes, data, outer_trace)
    return _from_sentinel(
        attributes,
        data,
        transport="direct",
        trace=outer_trace,
        published_at=parse_time(attributes.get("time")),
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _from_pubsub(attributes: Mapping[str, Any], data: Any, trace: TraceContext | None) -> ParsedEvent:
    event_id = str(attributes.get("id") or "")
    transport = "pubsub"

    def skip(reason: str) -> SkippedEvent:
        return SkippedEvent(reason, event_id, PUBSUB_MESSAGE_PUBLISHED, transport, trace)

    try:
        envelope = _as_object(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return skip("the Pub/Sub event data is not JSON")
    message = envelope.get("message") if isinstance(envelope, dict) else None
    if not isinstance(message, dict):
        return skip("the Pub/Sub event has no 'message' object")
    payload = _payload_of(message)
    if isinstance(payload, str):
        return skip(payload)
    message_attributes = message.get("attributes") if isinstance(message.get("attributes"), dict) else {}
    assert isinstance(message_attributes, dict)
    published = parse_time(message.get("publishTime")) or parse_time(attributes.get("time"))
    message_id = str(message.get("messageId") or message.get("message_id") or event_id)

    # Pub/Sub binary binding (ce-* attributes): the message data is the event data itself.
    if isinstance(message_attributes.get("ce-type"), str):
        inner_attributes = {k[3:]: v for k, v in message_attributes.items() if k.startswith("ce-")}
        inner_attributes.setdefault("id", message_id)
        return _from_sentinel(inner_attributes, payload, transport=transport, trace=trace, published_at=published)
    return _from_structured(payload, message_id, trace, published)


def _payload_of(message: dict[str, Any]) -> bytes | str:
    """The decoded `data` of a Pub/Sub message, or why there is none to use (the skip reason)."""
    raw = message.get("data")
    if not isinstance(raw, str) or not raw:
        return "the Pub/Sub message has no 'data'"
    if len(raw) > MAX_MESSAGE_BYTES * 4 // 3 + 4:
        return "the Pub/Sub message data is larger than any Sentinel event (over 256 KiB)"
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return "the Pub/Sub message data is not base64"


def _from_structured(
    payload: bytes, message_id: str, trace: TraceContext | None, published: datetime | None
) -> ParsedEvent:
    """Pub/Sub message data that is a structured-mode CloudEvent (JSON): the Sentinel event inside it."""
    transport = "pubsub"
    try:
        structured = json.loads(payload)
        if not isinstance(structured, dict):
            raise ValueError("not an object")
        inner = cloudevent_from_dict(structured)
    except (ce_exceptions.GenericException, UnicodeDecodeError, ValueError, TypeError, AttributeError, RecursionError):
        return SkippedEvent(
            "the Pub/Sub message data is not a structured-mode CloudEvent", message_id, "", transport, trace
        )
    inner_attributes = dict(inner.get_attributes())
    inner_trace = parse_trace(_str_or_none(inner_attributes.get("traceparent"))) or trace
    # The SDK stamps a missing `time` with "now"; Sentinel sets none, so only a time it sent counts.
    sent_time = parse_time(structured.get("time"))
    return _from_sentinel(
        inner_attributes,
        inner.get_data(),
        transport=transport,
        trace=inner_trace,
        published_at=sent_time or published,
    )


def _from_sentinel(
    attributes: Mapping[str, Any],
    data: Any,
    *,
    transport: str,
    trace: TraceContext | None,
    published_at: datetime | None,
) -> ParsedEvent:
    event_id = str(attributes.get("id") or "")
    event_type = str(attributes.get("type") or "")

    def skip(reason: str) -> SkippedEvent:
        return SkippedEvent(reason, event_id, event_type, transport, trace)

    match = _SENTINEL_TYPE.fullmatch(event_type)
    if match is None:
        return skip(f"event type {event_type[:120]!r} is not a HyperFleet reconcile event")
    kind = match.group(1).lower()
    if kind != "cluster":
        return skip(f"{match.group(1)} events are not handled by this adapter (clusters only)")
    try:
        body = _as_object(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        # RecursionError: JSON nested deeper than the parser's stack (a hostile or broken body).
        return skip("the Sentinel event data is not JSON")
    if not isinstance(body, dict):
        return skip("the Sentinel event data is not a JSON object")
    refusal = _kind_refusal(body)
    if refusal is not None:
        return skip(refusal)
    cluster_id = _cluster_id_of(body)
    if cluster_id is None:
        return skip("the event data has no usable cluster id ('id' or 'resource_id')")
    generation, unusable = _generation_of(body.get("generation"))
    return ReconcileRequest(
        cluster_id=cluster_id,
        generation=generation,
        event_id=event_id,
        event_type=event_type,
        transport=transport,
        trace=trace,
        published_at=published_at,
        unusable_generation=unusable,
    )


def _kind_refusal(body: dict[str, Any]) -> str | None:
    """Why the event data is not a cluster's (it names another kind); None when it is or names none."""
    data_kind = body.get("kind", body.get("resource_type"))
    if data_kind is not None and (not isinstance(data_kind, str) or data_kind.lower() != "cluster"):
        return f"the event data names kind {str(data_kind)[:60]!r}, not Cluster"
    return None


def _cluster_id_of(body: dict[str, Any]) -> str | None:
    """The event data's cluster id (`id`, else `resource_id`) when it is a usable one."""
    cluster_id = body.get("id", body.get("resource_id"))
    if not isinstance(cluster_id, str) or not _CLUSTER_ID.fullmatch(cluster_id):
        return None
    return cluster_id


def _generation_of(generation: Any) -> tuple[int | None, str | None]:
    """(the generation, None) when it is a positive integer, else (None, what was sent, for the log; None if absent)."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 1:
        return None, None if generation is None else json.dumps(generation)[:40]
    return generation, None


def event_age_s(request: ReconcileRequest, now: datetime | None = None) -> float | None:
    """Seconds since the event was published, when the transport says."""
    if request.published_at is None:
        return None
    now = now or datetime.now(UTC)
    return (now - request.published_at).total_seconds()


# -- Secret Manager event notifications (source rotation, see pullsecret.source.platform.rotation) --------
_SECRET_NAME = re.compile(r"^projects/[^/\s]{1,100}/secrets/[A-Za-z0-9_-]{1,255}$")


@dataclass(frozen=True)
class SecretVersionAdded:
    """A Secret Manager notification: a version was added to `secret` (projects/P/secrets/S)."""

    secret: str
    version: str
    event_id: str
    transport: str
    trace: TraceContext | None = None
    continuation: str | None = None  # a handed-on fan-out's nonce (pullsecret.source.platform.rotation)


CONTINUATION = "hyperfleetContinuation"  # message attribute of a handed-on rotation fan-out: its nonce


def _message_of(data: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A Pub/Sub push envelope's message and its attributes; None when the data holds no such message."""
    try:
        envelope = _as_object(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    message = envelope.get("message") if isinstance(envelope, dict) else None
    message_attributes = message.get("attributes") if isinstance(message, dict) else None
    if not isinstance(message, dict) or not isinstance(message_attributes, dict):
        return None
    return message, message_attributes


def parse_notification(
    attributes: Mapping[str, Any], data: Any, *, cloud_trace_context: str | None = None
) -> SecretVersionAdded | SkippedEvent | None:
    """A Secret Manager notification inside a Pub/Sub message, or None when this is not one; never raises.

    Notifications carry the message attributes `eventType` and `secretId` (data is the Secret resource).
    """
    if str(attributes.get("type") or "") != PUBSUB_MESSAGE_PUBLISHED:
        return None
    found = _message_of(data)
    if found is None:
        return None
    message, message_attributes = found
    event_type = message_attributes.get("eventType")
    secret = message_attributes.get("secretId")
    if not isinstance(event_type, str) or not isinstance(secret, str):
        return None
    event_id = str(message.get("messageId") or attributes.get("id") or "")
    trace = parse_trace(_str_or_none(attributes.get("traceparent")), cloud_trace_context)
    if event_type != "SECRET_VERSION_ADD":
        reason = f"Secret Manager {event_type[:40]} notifications need no action"
        return SkippedEvent(reason, event_id, event_type[:40], "pubsub", trace)
    if not _SECRET_NAME.match(secret):
        return SkippedEvent("the notification names no valid secret", event_id, event_type, "pubsub", trace)
    version = message_attributes.get("versionId")
    continuation = message_attributes.get(CONTINUATION)
    return SecretVersionAdded(
        secret=secret,
        version=version if isinstance(version, str) else "",
        event_id=event_id,
        transport="pubsub",
        trace=trace,
        continuation=None if continuation is None else str(continuation)[:200],
    )
