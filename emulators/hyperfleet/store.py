"""The API's state: clusters (and raw overrides), adapter statuses and the status reports received, under one lock."""

from __future__ import annotations

import copy
import threading
from typing import Any

from emulators.hyperfleet.answers import rfc3339
from emulators.hyperfleet.conditions import aggregate
from emulators.hyperfleet.spec import BASE, cluster_schema_errors, load_spec


class ClusterStore:
    """Clusters and their adapter statuses; every cluster's ``status.conditions`` is kept aggregated.

    Invariant: after any change to a cluster, its statuses, ``status_method`` or ``required_adapters``, the
    cluster's conditions are recomputed (``aggregate``) under ``lock`` (except a seeded explicit ``status``).
    Readers take ``lock`` and copy what they hand out.
    """

    def __init__(self, *, status_method: str, required_adapters: list[str] | None) -> None:
        self.lock = threading.RLock()
        self.status_method = status_method
        self.required_adapters = required_adapters
        self.clusters: dict[str, dict[str, Any]] = {}
        self.invalid: set[str] = set()  # seeded clusters that violate the Cluster schema
        # Clusters served with their `spec` nested this deep (seeded with `_nested`). The real API is Go: its
        # encoding/json accepts nesting up to 10,000 levels (scanner.go maxNestingDepth), and PostgreSQL's jsonb
        # stores what it accepts; Python's decoder gives up near 1,000. Served as text, off-spec on purpose.
        self.nested: dict[str, int] = {}
        self.raw: dict[str, dict[str, Any]] = {}
        self.statuses: dict[str, dict[str, dict[str, Any]]] = {}
        self.reports: list[dict[str, Any]] = []

    def clear(self) -> None:
        with self.lock:
            self.clusters.clear()
            self.invalid.clear()
            self.nested.clear()
            self.raw.clear()
            self.statuses.clear()
            self.reports.clear()

    def state(self) -> dict[str, Any]:
        with self.lock:
            return {
                "clusters": copy.deepcopy(self.clusters),
                "raw_overrides": sorted(self.raw),
                "statuses": copy.deepcopy(self.statuses),
                "reports": len(self.reports),
            }

    def aggregate(self, cluster_id: str) -> None:
        """Recompute the cluster's status.conditions from its adapter statuses (lock held)."""
        aggregate(
            self.clusters[cluster_id],
            self.statuses.get(cluster_id, {}),
            required_adapters=self.required_adapters,
            status_method=self.status_method,
        )

    def set_status_method(self, wanted: str) -> None:
        load_spec(wanted)
        with self.lock:
            self.status_method = wanted
            for cluster_id in self.clusters:  # the aggregated condition names differ per version
                self.aggregate(cluster_id)

    # -- seeding (also the admin API) ------------------------------------------------------
    def seed_cluster(self, cluster_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a cluster, filling what the API would; returns {cluster, schema_errors}."""
        if "_raw" in body:
            raw = dict(body["_raw"])
            with self.lock:
                self.raw[cluster_id] = {
                    "status": int(raw.get("status", 200)),
                    "content_type": str(raw.get("content_type", "application/json")),
                    "body": raw.get("body", ""),
                }
            return {"raw": self.raw[cluster_id], "schema_errors": []}
        body = dict(body)
        nested = body.pop("_nested", None)
        now = rfc3339()
        cluster: dict[str, Any] = {
            "id": cluster_id,
            "kind": "Cluster",
            "href": f"{BASE}/clusters/{cluster_id}",
            "name": cluster_id,
            "labels": {},
            "spec": {},
            "generation": 1,
            "created_time": now,
            "updated_time": now,
            "created_by": "emulator@hyperfleet.local",
            "updated_by": "emulator@hyperfleet.local",
        }
        cluster.update(copy.deepcopy(body))
        if "deleted_time" in cluster and "deleted_by" not in cluster:
            cluster["deleted_by"] = cluster["updated_by"]
        with self.lock:
            self.raw.pop(cluster_id, None)
            self.clusters[cluster_id] = cluster
            self.statuses.setdefault(cluster_id, {})
            if "status" not in body:
                self.aggregate(cluster_id)
            errors = cluster_schema_errors(self.status_method, cluster)
            if isinstance(nested, int) and nested > 0:
                self.nested[cluster_id] = nested
            else:
                self.nested.pop(cluster_id, None)
            if errors or cluster_id in self.nested:
                self.invalid.add(cluster_id)
            else:
                self.invalid.discard(cluster_id)
            return {"cluster": copy.deepcopy(cluster), "schema_errors": errors}

    def seed_status(self, cluster_id: str, adapter: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store another adapter's status as if it had reported; raises KeyError for unknown clusters."""
        with self.lock:
            cluster = self.clusters[cluster_id]
            now = rfc3339()
            generation = int(body.get("observed_generation", cluster["generation"]))
            conditions = body.get("conditions") or [
                {"type": t, "status": "True", "reason": "Seeded", "message": "seeded by the emulator"}
                for t in ("Applied", "Available", "Health")
            ]
            status: dict[str, Any] = {
                "adapter": adapter,
                "observed_generation": generation,
                "conditions": [{"last_transition_time": now, **c} for c in conditions],
                "data": copy.deepcopy(body.get("data", {})),
                "created_time": body.get("created_time", now),
                "last_report_time": body.get("last_report_time", now),
            }
            if "metadata" in body:
                status["metadata"] = copy.deepcopy(body["metadata"])
            self.statuses.setdefault(cluster_id, {})[adapter] = status
            self.aggregate(cluster_id)
            return copy.deepcopy(status)

    def delete_cluster(self, cluster_id: str) -> bool:
        """Drop a cluster (or its raw override) and its statuses; False when there was none."""
        with self.lock:
            found = self.clusters.pop(cluster_id, None) is not None
            found = self.raw.pop(cluster_id, None) is not None or found
            self.statuses.pop(cluster_id, None)
            self.invalid.discard(cluster_id)
            self.nested.pop(cluster_id, None)
        return found

    def patch_cluster(self, cluster_id: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """A user edits the cluster: spec, labels, name, deletion; the generation moves on unless given."""
        with self.lock:
            cluster = self.clusters.get(cluster_id)
            if cluster is None:
                return None
            if "spec" in body:
                cluster["spec"] = copy.deepcopy(body["spec"])
            if "labels" in body:
                cluster["labels"] = copy.deepcopy(body["labels"])
            cluster["generation"] = int(body.get("generation", cluster["generation"] + 1))
            for key in ("deleted_time", "deleted_by", "name"):
                if key in body:
                    cluster[key] = body[key]
            cluster["updated_time"] = rfc3339()
            self.aggregate(cluster_id)
            return copy.deepcopy(cluster)

    def cluster(self, cluster_id: str) -> dict[str, Any] | None:
        with self.lock:
            cluster = self.clusters.get(cluster_id)
            return copy.deepcopy(cluster) if cluster else None

    # -- the status reports received -----------------------------------------------------------
    def add_report(self, report: dict[str, Any]) -> None:
        with self.lock:
            self.reports.append(report)

    def report_list(self) -> list[dict[str, Any]]:
        with self.lock:
            return copy.deepcopy(self.reports)

    def clear_reports(self) -> None:
        with self.lock:
            self.reports.clear()
