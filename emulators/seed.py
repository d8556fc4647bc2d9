"""Seeding a running stack (a cluster whose every precondition is met, the platform pull secret) and the event.

One definition of "ready" for the admin API (`PUT /ready_clusters/{id}`), `make up`, `make demo` and the
tests (`tests.support.seed_ready_cluster`):

- the HyperFleet cluster, generation N, with `spec.platform.type=gcp` and `spec.platform.gcp.projectID`;
- the `validation`, `dns` and `placement` adapters reporting Applied/Available/Health True at generation N,
  placement's `data` naming the management cluster and the namespace (see docs/contract.md §2);
- the namespace `clusters-<id>` on the Kubernetes emulator;
- the platform pull secret `projects/hf-demo-project/secrets/platform-pull-secret` with one version, when
  it does not exist yet (an existing one is left as it is).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from emulators.world import MANAGEMENT_CLUSTER, PROJECT_ID

if TYPE_CHECKING:
    from emulators.hyperfleet import HyperFleetEmulator
    from emulators.kubernetes import KubernetesEmulator
    from emulators.secretmanager import SecretManagerEmulator


class Stack(Protocol):
    """What seeding needs of a running stack (emulators.stack.Stack): the three emulators it writes to."""

    @property
    def hyperfleet(self) -> HyperFleetEmulator: ...
    @property
    def kubernetes(self) -> KubernetesEmulator: ...
    @property
    def secretmanager(self) -> SecretManagerEmulator: ...


SOURCE_SECRET = "platform-pull-secret"
SOURCE_VERSION = f"projects/{PROJECT_ID}/secrets/{SOURCE_SECRET}/versions/latest"
# A made-up credential: the demo never prints it, and checks that the function's logs do not either.
DEMO_PASSWORD = "demo-Pa55w0rd-not-real"
DEMO_PULL_SECRET = {
    "auths": {
        "registry.redhat.io": {"auth": base64.b64encode(f"demo-robot:{DEMO_PASSWORD}".encode()).decode()},
        "quay.io": {"auth": base64.b64encode(f"demo-robot:{DEMO_PASSWORD}".encode()).decode()},
    }
}
PRECONDITION_ADAPTERS = ("validation", "dns")  # plus placement, which also carries data
REPORTING_ADAPTERS = (*PRECONDITION_ADAPTERS, "placement")  # every adapter a seeded cluster has a status of


def unreported_preconditions(settings: Mapping[str, str]) -> list[str]:
    """The adapters PRECONDITION_ADAPTERS names (the function's default: these three) that no seeded cluster has a
    status of: a misspelt name (`placment`) keeps every reconcile waiting on its preconditions."""
    named = [name.strip() for name in settings.get("PRECONDITION_ADAPTERS", "").split(",") if name.strip()]
    return [name for name in named if name not in REPORTING_ADAPTERS]


def platform_pull_secret(stack: Stack, content: dict[str, Any] | None = None) -> bool:
    """Seed the platform pull secret unless it exists; True when this call created it."""
    if stack.secretmanager.secret(PROJECT_ID, SOURCE_SECRET) is not None:
        return False
    payload = base64.b64encode(json.dumps(content or DEMO_PULL_SECRET).encode()).decode()
    status, answer = stack.secretmanager.handle_admin(
        "PUT",
        f"/projects/{PROJECT_ID}/secrets/{SOURCE_SECRET}",
        {"labels": {"owner": "platform"}, "versions": [payload]},
    )
    if status >= 300:
        raise ValueError(f"seeding the platform pull secret failed: {status} {answer}")
    return True


def ready_cluster(
    stack: Stack,
    cluster_id: str,
    *,
    generation: int = 1,
    project: str = PROJECT_ID,
    namespace: bool = True,
    placement_data: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
    platform_secret: bool = True,
) -> dict[str, Any]:
    """Seed everything a reconcile of `cluster_id` needs to succeed; returns what was seeded.

    `placement_data` None names the default management cluster and `clusters-<id>`; `{}` leaves both to the
    function's own defaults (MANAGEMENT_CLUSTER, MANAGEMENT_NAMESPACE_TEMPLATE). `cluster` adds or replaces
    fields of the cluster body (e.g. `deleted_time`, `spec`).
    """
    namespace_name = f"clusters-{cluster_id}"
    body: dict[str, Any] = {
        "name": cluster_id,
        "generation": generation,
        "spec": {"platform": {"type": "gcp", "gcp": {"projectID": project, "region": "us-central1"}}},
    }
    body.update(cluster or {})
    seeded = stack.hyperfleet.seed_cluster(cluster_id, body)
    for adapter in PRECONDITION_ADAPTERS:
        stack.hyperfleet.seed_status(cluster_id, adapter, {"observed_generation": generation})
    placement = (
        {"managementCluster": MANAGEMENT_CLUSTER, "namespace": namespace_name}
        if placement_data is None
        else placement_data
    )
    stack.hyperfleet.seed_status(cluster_id, "placement", {"observed_generation": generation, "data": placement})
    if namespace:
        status, answer = stack.kubernetes.handle_admin("PUT", f"/namespaces/{namespace_name}", {})
        if status >= 300:
            raise ValueError(f"creating namespace {namespace_name} failed: {status} {answer}")
    created_source = platform_pull_secret(stack) if platform_secret else False
    return {
        "cluster": seeded.get("cluster", seeded),
        "schema_errors": seeded.get("schema_errors", []),
        "statuses": [*PRECONDITION_ADAPTERS, "placement"],
        "placement": placement,
        "namespace": namespace_name if namespace else None,
        "platform_pull_secret": SOURCE_VERSION if platform_secret else None,
        "platform_pull_secret_created": created_source,
    }


def sentinel_event(cluster_id: str, generation: int = 1, *, event_id: str | None = None) -> dict[str, Any]:
    """A reconcile event exactly as HyperFleet Sentinel emits it (structured CloudEvent, no `time`)."""
    return {
        "specversion": "1.0",
        "type": "com.redhat.hyperfleet.cluster.reconcile",
        "source": "hyperfleet-sentinel",
        "id": event_id or str(uuid.uuid4()),
        "datacontenttype": "application/json",
        "data": {
            "id": cluster_id,
            "kind": "Cluster",
            "href": f"/api/hyperfleet/v1/clusters/{cluster_id}",
            "generation": generation,
        },
    }
