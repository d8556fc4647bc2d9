"""In-memory Kubernetes for the direct delivery: one Secret per (namespace, name), with the generation it records.

As pullsecret/delivery/direct/kubesecret.py and the admission policy have it: the Secret records the generation it
was applied for; an apply never goes back; a delete of an absent Secret is done. Two doubles: `Kube`, a whole
`Delivery` for the interleaving explorer (every call a scheduling point), and `ControlPlane`, a management cluster's
API server in this process (the Kubernetes emulator's own request handling behind an `InProcessPool`, no socket),
which the direct mode's own `DirectDelivery`, as its registered factory builds it, reaches through `InProcessClusters`
in place of GKE and the network (the conformance kit).
"""

from __future__ import annotations

import http
import io
import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import urllib3

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.manifests import render
from pullsecret.delivery.base import Cleaned, Delivered, Desired, DryRun, Leaving, Stray, Where, Wording
from pullsecret.delivery.direct.kubeapi import SecretsApi
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


class InProcessPool:
    """urllib3's PoolManager for an API server in this process (httpx's MockTransport, one layer down): the
    official client builds and sends each request as over the network, and the Kubernetes emulator's own `serve`
    (emulators/kubernetes: RBAC, the admission policy, server-side apply) answers it, with no socket and no TLS."""

    def __init__(self, emulator: KubernetesEmulator) -> None:
        self.emulator = emulator

    def request(self, method: str, url: str, *, body: Any = None, headers: Any = None, **_: Any) -> Any:
        split = urllib.parse.urlsplit(url)
        sent = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
        raw = body.encode() if isinstance(body, str) else bytes(body or b"")
        code, payload, extra = self.emulator.serve(method, split.path, split.query, sent, raw)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        kind = "text/plain; charset=utf-8" if isinstance(payload, bytes) else "application/json"
        return urllib3.HTTPResponse(
            body=io.BytesIO(data),
            status=code,
            reason=http.HTTPStatus(code).phrase,
            headers={"Content-Type": kind, **extra},
            preload_content=False,
        )


class ControlPlane:
    """One management cluster's API server in this process: the Kubernetes emulator holding the namespaces of the
    clusters, with the RBAC and admission policy Terraform renders for `runtime` (terraform/kubernetes), and an
    operator granted every right (who runs inspect and fleet with their own credentials); reached through the
    product's own SecretsApi with the runtime's or the operator's token over an `InProcessPool`."""

    RUNTIME_TOKEN = "ya29.runtime-in-process"
    OPERATOR_TOKEN = "ya29.operator-in-process"
    OPERATOR = "operator@example.com"

    def __init__(self, runtime: str, namespaces: tuple[str, ...]) -> None:
        tokens = {self.RUNTIME_TOKEN: runtime, self.OPERATOR_TOKEN: self.OPERATOR}
        self.emulator = KubernetesEmulator(FaultBook(), authenticate=tokens.get)
        for namespace in namespaces:
            self.emulator.add_namespace(namespace)
        self.emulator.apply_manifests(render(runtime))
        self.emulator.grant(self.OPERATOR)

    def api(self, cluster_name: str, *, token: str = RUNTIME_TOKEN) -> SecretsApi:
        """The product's SecretsApi of the cluster, sending `token`, answered in this process."""
        from kubernetes.client.configuration import Configuration

        configuration = Configuration(
            host=f"https://{cluster_name.rsplit('/', 1)[-1]}.in-process.invalid",
            api_key={"authorization": f"Bearer {token}"},
        )
        api = SecretsApi(configuration)
        api._rest.pool_manager = InProcessPool(self.emulator)  # type: ignore[attr-defined]
        return api


@dataclass
class InProcessClusters:
    """ClusterApis: every management cluster is the one in-process `ControlPlane` (no GKE call, no connection),
    called with one identity's token."""

    plane: ControlPlane
    token: str = ControlPlane.RUNTIME_TOKEN

    def api_for(self, cluster_name: str, deadline: Deadline) -> SecretsApi:
        return self.plane.api(cluster_name, token=self.token)

    def invalidate(self, cluster_name: str) -> None:
        return None
