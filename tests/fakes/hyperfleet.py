"""In-memory HyperFleet API: clusters, our stored status, soft and hard deletes; every call is a scheduling point of
the current `Run` (tests/fakes/scheduler.py; `Calm` when nothing is explored).

Each rule from its source (hyperfleet-api; emulators/hyperfleet/): a soft delete sets `deleted_time` and moves the
generation on; a cluster is hard-deleted only after the adapters reported Finalized=True; a gone cluster answers 404
NTF-001 (`get_cluster` None) and a status report to it 404 (the client's terminal `ClusterGone`); an older report is
discarded (pkg/services/adapter_status_validation.go). `list_clusters` supports `search=id > 'x'` and `order=id asc`
(the rotation fan-out's keyset paging), and page/size offsets.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pullsecret.errors import TerminalError
from tests.fakes.scheduler import Run, SchedEvent


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
