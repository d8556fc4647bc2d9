"""The platform source's rotation fan-out against the emulator stack: the Secret Manager notification of a new source
version, the source given that many versions, and the reconcile events and continuations the fan-out published on the
adapter topic (TOPIC, read through SUB)."""

from __future__ import annotations

import base64
import json
from typing import Any

from emulators.pubsub import PubSubEmulator
from pullsecret.source.platform.rotation import CONTINUATION
from tests.reliability import campaign
from tests.support import PLATFORM_SOURCE_SECRET

TOPIC = "pullsecret-reconcile"
SUB = "pullsecret-reconcile-pull"


def notification(version: int = 2) -> dict[str, Any]:
    """What Secret Manager publishes for a new source version (names use the project number)."""
    secret = f"projects/123456789012/secrets/{PLATFORM_SOURCE_SECRET}"
    return {
        "message": {
            "data": base64.b64encode(json.dumps({"name": secret}).encode()).decode(),
            "attributes": {
                "eventType": "SECRET_VERSION_ADD",
                "secretId": secret,
                "versionId": f"{secret}/versions/{version}",
                "dataFormat": "JSON_API_V1",
            },
            "messageId": "7001",
            "publishTime": "2099-01-01T00:00:00Z",
        },
        "subscription": f"projects/{campaign.PROJECT}/subscriptions/source-rotation",
    }


def source_with_versions(admin: Any, count: int = 2) -> None:
    """Give the platform source `count` versions, so that `notification(count)` names its newest one."""
    path = f"/secretmanager/projects/{campaign.PROJECT}/secrets/{PLATFORM_SOURCE_SECRET}"
    payloads = [v["payload_b64"] for v in admin.get(path)["versions"]][:count]
    admin.call("PUT", path, {"versions": payloads + [payloads[-1]] * (count - len(payloads))})


def drain(pubsub: PubSubEmulator) -> tuple[list[str], list[dict[str, Any]]]:
    """Every message on the adapter topic: the cluster ids of reconcile events, and the continuations."""
    published: list[str] = []
    continuations: list[dict[str, Any]] = []
    while batch := pubsub.pull(SUB, 100):
        for received in batch:
            message = received["message"]
            if CONTINUATION in (message.get("attributes") or {}):
                continuations.append(
                    {"message": message, "subscription": f"projects/{campaign.PROJECT}/subscriptions/{SUB}"}
                )
            else:
                published.append(json.loads(base64.b64decode(message["data"]))["data"]["id"])
    return published, continuations
