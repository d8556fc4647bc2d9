"""In-memory Kubernetes for the direct delivery: one Secret per (namespace, name), with the generation it records.

As pullsecret/delivery/direct/kubesecret.py and the admission policy have it: the Secret records the generation it
was applied for; an apply never goes back; a delete of an absent Secret is done. Two doubles: `Kube`, a whole
`Delivery` for the interleaving explorer (every call a scheduling point), and `FakeKubeSecrets` with `FakeClusters`,
the parts of the direct mode's own `DirectDelivery` that talk to GKE and the API server (the conformance kit).
"""

from __future__ import annotations

import json
import types as pytypes
from dataclasses import dataclass, field
from typing import Any

from pullsecret.delivery.base import Cleaned, Delivered, Desired, DryRun, Leaving, Stray, Where, Wording
from pullsecret.delivery.direct import kubesecret
from pullsecret.delivery.direct.kubesecret import DesiredSecret
from pullsecret.delivery.direct.mode import WORDING
from pullsecret.model.preconditions import Placement
from pullsecret.retrying import Deadline
from tests.fakes.scheduler import Run


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


class FakeClusters:
    """ManagementClusters: every management cluster's Secrets API is the one in-memory Kubernetes."""

    def api_for(self, cluster_name: str, deadline: Deadline) -> Any:
        return pytypes.SimpleNamespace(cluster=cluster_name)

    def invalidate(self, cluster_name: str) -> None:
        return None


@dataclass
class FakeKubeSecrets:
    """KubeSecrets over one in-memory Kubernetes: our Secrets by (namespace, name), as the API server stores them;
    an apply never goes back to an older generation (the admission policy's rule)."""

    secrets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def ensure_guarded(self, api: Any, deadline: Deadline) -> None:
        return None

    def probe(self, api: Any, ns: str, name: str, deadline: Deadline) -> kubesecret.Probed:
        return kubesecret.Probed(
            json.loads(json.dumps(self.secrets[(ns, name)])) if (ns, name) in self.secrets else None
        )

    def apply(self, api: Any, desired: DesiredSecret, deadline: Deadline, probed: kubesecret.Probed) -> Delivered:
        live = self.secrets.get((desired.namespace, desired.name))
        held = kubesecret.generation_of(((live or {}).get("metadata") or {}).get("annotations") or {})
        if live is not None and held > desired.generation:
            return Delivered(False, str(live["metadata"]["resourceVersion"]), stale=True, recorded_generation=held)
        if live is not None and not kubesecret.differs(live, desired):
            return Delivered(False, str(live["metadata"]["resourceVersion"]))
        version = int(((live or {}).get("metadata") or {}).get("resourceVersion") or 0) + 1
        self.secrets[(desired.namespace, desired.name)] = desired.manifest(kubesecret.now(), str(version))
        return Delivered(True, str(version))

    def delete(self, api: Any, namespace: str, name: str, deadline: Deadline) -> bool:
        return self.secrets.pop((namespace, name), None) is not None

    def read(self, api: Any, namespace: str, name: str, deadline: Deadline) -> dict[str, Any] | None:
        return self.secrets.get((namespace, name))
