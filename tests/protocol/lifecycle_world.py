"""In-memory HyperFleet API, Pull Secret Service and Kubernetes delivery for the lifecycle explorer; every call is a
scheduling point of the current `Run`. The reconcile under test is the product's own `Reconciler`.

Each rule from its source:
- HyperFleet (hyperfleet-api; emulators/hyperfleet/): a soft delete sets `deleted_time` and moves the generation
  on; a cluster is hard-deleted only after the adapters reported Finalized=True; a gone cluster answers 404
  NTF-001 (`get_cluster` None) and a status report to it 404 (the client's terminal `ClusterGone`); an older
  report is discarded. `list_clusters` supports `search=id > 'x'` and `order=id asc` (the rotation fan-out's
  keyset paging), and page/size offsets.
- The Pull Secret Service (DDR §3.2): GET answers what it holds or 404; POST generates or retrieves
  (idempotent); DELETE revokes (404 counts as done); a rotation replaces the credentials of a cluster it holds.
- Kubernetes (pullsecret/delivery/direct/kubesecret.py): the Secret records the generation it was applied for; an apply
  never goes back; a delete of an absent Secret is done.
"""

from __future__ import annotations

import copy
import json
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from pullsecret.delivery.base import Cleaned, Delivered, Desired, DryRun, Leaving, Stray, Where, Wording
from pullsecret.delivery.direct.mode import WORDING
from pullsecret.errors import TerminalError
from pullsecret.model import dockerconfig
from pullsecret.model.preconditions import Placement
from pullsecret.source.service.api import ServiceAnswer
from tests.protocol.scheduler import Run, SchedEvent


class InlineExecutor(Executor):
    """The reconcile's pool, run on the calling actor's thread (so every call stays a scheduling point)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


class NoRegistryChecks:
    def start(self, *_: Any, **__: Any) -> None:
        return None


@dataclass
class HyperFleet:
    run: Run
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    ours: dict[str, dict[str, Any]] = field(default_factory=dict)  # cluster id -> our last stored status
    finalized: dict[str, SchedEvent] = field(default_factory=dict)  # set when Finalized=True is stored

    def add(self, cluster_id: str, project: str) -> None:
        self.clusters[cluster_id] = {
            "id": cluster_id,
            "name": cluster_id,
            "generation": 1,
            "spec": {"platform": {"type": "gcp", "gcp": {"projectID": project, "region": "us-central1"}}},
        }
        self.finalized[cluster_id] = SchedEvent(self.run)

    def create(self, cluster_id: str, project: str) -> None:
        self.run.point(f"create {cluster_id}")
        self.add(cluster_id, project)

    def get_cluster(self, cluster_id: str) -> dict[str, Any] | None:
        self.run.point(f"get {cluster_id}")
        cluster = self.clusters.get(cluster_id)
        return copy.deepcopy(cluster) if cluster is not None else None

    def list_statuses(self, cluster_id: str) -> list[dict[str, Any]]:
        self.run.point(f"statuses {cluster_id}")
        own = self.ours.get(cluster_id)
        return [copy.deepcopy(own)] if own is not None and cluster_id in self.clusters else []

    def report_status(self, cluster_id: str, body: dict[str, Any]) -> int:
        self.run.point(f"report {cluster_id}")
        if cluster_id not in self.clusters:
            raise TerminalError("the cluster no longer exists", reason="ClusterGone", service="hyperfleet")
        held = self.ours.get(cluster_id)
        if held is not None and held["observed_generation"] > body["observed_generation"]:
            return 204
        self.ours[cluster_id] = copy.deepcopy(body)
        if any(c["type"] == "Finalized" and c["status"] == "True" for c in body["conditions"]):
            self.finalized[cluster_id].set()
        return 201

    def soft_delete(self, cluster_id: str) -> None:
        self.run.point(f"delete {cluster_id}")
        cluster = self.clusters[cluster_id]
        cluster["deleted_time"] = "2026-01-01T00:00:00Z"
        cluster["generation"] += 1

    def hard_delete(self, cluster_id: str) -> None:
        """HyperFleet removes a deleted cluster once Finalized=True is stored (else: nothing yet)."""
        self.run.point(f"hard delete {cluster_id}")
        if self.finalized[cluster_id].is_set():
            self.clusters.pop(cluster_id, None)

    def list_clusters(
        self, *, page: int, size: int, search: str | None = None, order: str | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        self.run.point("list clusters")
        ids = sorted(self.clusters)
        if search:
            after = search.split("'")[1]
            ids = [i for i in ids if i > after]
        chosen = ids[(page - 1) * size : page * size]
        return [copy.deepcopy(self.clusters[i]) for i in chosen], len(ids)


def document(serial: int) -> dockerconfig.PullSecret:
    auth = f"robot{serial}:token{serial}"
    import base64

    entry = {"auth": base64.b64encode(auth.encode()).decode()}
    return dockerconfig.parse({"auths": {"quay.io": entry}}, source="test")


@dataclass
class Service:
    """The Pull Secret Service client (get, generate, delete) and the service's own rotation."""

    run: Run
    held: dict[str, int] = field(default_factory=dict)  # cluster id -> the serial of its live credential
    minted: int = 0

    def _answer(self, cluster_id: str) -> ServiceAnswer:
        return ServiceAnswer(cluster_id=cluster_id, pull_secret=document(self.held[cluster_id]))

    def get(self, cluster_id: str, *_: Any, **__: Any) -> ServiceAnswer | None:
        self.run.point(f"service GET {cluster_id}")
        return self._answer(cluster_id) if cluster_id in self.held else None

    def generate(self, cluster_id: str, *_: Any, **__: Any) -> ServiceAnswer:
        self.run.point(f"service POST {cluster_id}")
        if cluster_id not in self.held:
            self.minted += 1
            self.held[cluster_id] = self.minted
        return self._answer(cluster_id)

    def delete(self, cluster_id: str, *_: Any, **__: Any) -> bool:
        self.run.point(f"service DELETE {cluster_id}")
        return self.held.pop(cluster_id, None) is not None

    def rotate(self, cluster_id: str) -> None:
        self.run.point(f"service rotation {cluster_id}")
        if cluster_id in self.held:
            self.minted += 1
            self.held[cluster_id] = self.minted


@dataclass
class _Probed:
    kube: Kube
    key: tuple[str, str]
    present: bool
    recorded_generation: int
    recorded_lineage: str | None = None

    def apply(self, desired: Desired, deadline: Any) -> Delivered:
        return self.kube.apply(self.key, desired)

    def dry_run(self, desired: Desired, *, store_writes: bool) -> DryRun:
        return DryRun(writes=True, lines=[])


@dataclass
class Kube:
    """The direct delivery: one Kubernetes Secret per (namespace, name), with the generation it records."""

    run: Run
    secrets: dict[tuple[str, str], tuple[int, bytes]] = field(default_factory=dict)
    mode: str = "direct"
    wording: Wording = WORDING  # the direct mode's words

    def probe(self, where: Where, deadline: Any) -> _Probed:
        self.run.point(f"kube probe {where.kube_name}")
        key = (where.placement.namespace, where.kube_name)
        held = self.secrets.get(key)
        return _Probed(self, key, held is not None, held[0] if held else 0)

    def apply(self, key: tuple[str, str], desired: Desired) -> Delivered:
        self.run.point(f"kube apply {key[1]}")
        held = self.secrets.get(key)
        if held is not None and held[0] > desired.generation:
            return Delivered(False, "1", stale=True, recorded_generation=held[0])
        if held == (desired.generation, desired.content):
            return Delivered(False, "1")
        self.secrets[key] = (desired.generation, desired.content)
        return Delivered(True, "2")

    def cleanup(self, leaving: Leaving, deadline: Any) -> Cleaned:
        if leaving.placement is None:
            return Cleaned({"kubernetes_cleanup": "no placement known"}, "no placement known")
        self.run.point(f"kube delete {leaving.kube_name}")
        found = self.secrets.pop((leaving.placement.namespace, leaving.kube_name), None)
        said = "Kubernetes Secret deleted" if found else "Kubernetes Secret absent"
        return Cleaned({"kubernetes_cleanup": "deleted" if found else "absent"}, said)

    def inspect(self, placement: Placement, kube_name: str, deadline: Any) -> dict[str, Any]:
        self.run.point(f"kube get {kube_name}")
        held = self.secrets.get((placement.namespace, kube_name))
        return {"exists": held is not None}

    def status_data(self, where: Where, applied: Delivered, *, stored_written: bool) -> dict[str, Any]:
        return {}

    def after_transient(self, placement: Placement, error: Any) -> None:
        return None

    def doctor_checks(self) -> list[Any]:
        return []

    def strays(self, where: Where, deadline: Any) -> list[Stray]:
        return []

    def left_behind(self, cluster_id: str, leaving: Leaving, deadline: Any) -> list[Stray]:
        return []

    def fleet_notes(self) -> list[str]:
        return []

    def holds(self, namespace: str, name: str) -> str:
        held = self.secrets.get((namespace, name))
        return "absent" if held is None else json.loads(held[1])["auths"]["quay.io"]["auth"]
