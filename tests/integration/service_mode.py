"""Service mode against the emulator stack: the function's settings for the Pull Secret Service emulator, one
cluster's names, an event delivered to an Adapter, and what Secret Manager, the service and the registry hold."""

from __future__ import annotations

import json
from typing import Any

import requests

from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, sentinel_event

CID = "cls-svc01"
PROJECT = "hf-demo-project"
SECRET_ID = f"hyperfleet-{CID}-pull-secret"
NAMESPACE = f"clusters-{CID}"
KUBE_NAME = f"{CID}-pull-secret"
ESO_TEMPLATE = (
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
    "hf-demo-project.svc.id.goog/subject/ns/{namespace}/sa/external-secrets"
)


def service_env(world: Any, auth: str) -> dict[str, str | None]:
    env: dict[str, str | None] = {
        "PULL_SECRET_SOURCE": None,
        "PULL_SECRET_SERVICE_URL": world.pullsecretservice.url,
        "PULL_SECRET_SERVICE_AUTH": auth,
        "REGISTRY_VERIFICATION": "report",
    }
    if auth == "token-file":
        env["PULL_SECRET_SERVICE_TOKEN_FILE"] = world.service_token_file
    return env


def deliver(adapter: Adapter, generation: int = 1) -> str:
    """The outcome; "transient" when the handler raises for redelivery (Pub/Sub would send the event again)."""
    try:
        return str(adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation))).result)
    except TransientError:
        return "transient"


def stored(world: Any) -> dict[str, Any]:
    payload = world.secretmanager.payload(PROJECT, SECRET_ID)
    assert payload is not None
    document: dict[str, Any] = json.loads(payload)
    return document


def accounts(admin: Admin) -> dict[str, str]:
    """The service's live credentials for the cluster: registry id -> username (the state shows no token)."""
    state = admin.get("/pullsecretservice/state")
    found: dict[str, str] = {}
    for cluster in state.get("clusters", []) if isinstance(state.get("clusters"), list) else []:
        if cluster.get("cluster_id") == CID:
            for credential in cluster.get("credentials", []):
                found[credential["registry_id"]] = credential["username"]
    if isinstance(state.get("clusters"), dict):
        for credential in state["clusters"].get(CID, {}).get("credentials", []):
            found[credential["registry_id"]] = credential["username"]
    return found


def registry_accepts(world: Any, auth: str) -> bool:
    """The registry emulator's `basic` host (the service's quay) answers /v2/ with this credential."""
    host = world.registry.hosts()["basic"]
    answer = requests.get(
        f"https://{host}/v2/", headers={"Authorization": f"Basic {auth}"}, verify=world.registry_ca_file, timeout=5
    )
    return answer.status_code == 200
