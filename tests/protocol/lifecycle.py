"""The lifecycle explorer's world (tests/protocol/test_lifecycle_protocol.py, test_sweep_protocol.py): one cluster's
in-memory services in service mode, the function built over them as the conformance kits build it (its source
through the registered factory), and the check that no credential outlives the cluster's Finalized report (L1-L4
of pullsecret/reconcile/finalize.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pullsecret.app import Application
from pullsecret.errors import TerminalError, TransientError
from pullsecret.reconcile import entry
from pullsecret.reconcile.outcome import Outcome
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.pacing import WritePacer
from pullsecret.settings.common import Settings
from pullsecret.source.service.settings import ServiceSettings
from tests.fakes import conformance
from tests.fakes.hyperfleet import HyperFleet
from tests.fakes.kubernetes import Kube
from tests.fakes.pullsecretservice import Service
from tests.fakes.scheduler import Run
from tests.fakes.secretmanager import FakeSecretManager

PROJECT = "hf-project"
CID = "cls-lifecycle01"
SECRET = f"projects/{PROJECT}/secrets/hyperfleet-{CID}-pull-secret"
NAMESPACE, KUBE_NAME = f"clusters-{CID}", f"{CID}-pull-secret"
REDELIVERIES = 3
SETTINGS = Settings(
    hyperfleet_api_url="http://hyperfleet.invalid",
    source="service",
    own=(ServiceSettings("http://pull-secret-service.invalid"),),
    precondition_adapters=(),
    secret_project_id=PROJECT,
    management_cluster="projects/hf-project/locations/us-central1/clusters/mgmt-1",
    registry_verification="off",
    deployment_id="d-test",
)


@dataclass
class Lifecycle:
    run: Run
    hyperfleet: HyperFleet
    service: Service
    sm: FakeSecretManager
    kube: Kube
    problems: list[str] = field(default_factory=list)

    def application(self) -> Application:
        """One instance of the function: its own store, pool and source (the service source as its kit builds it,
        through the registered factory, over this world's service)."""
        services = conformance.World(sm=self.sm, hyperfleet=self.hyperfleet, service=self.service)  # type: ignore[arg-type]
        return conformance.application(
            self.hyperfleet,
            SecretStore(self.sm, pacer=WritePacer(sleep=lambda s: None)),  # type: ignore[arg-type]
            self.kube,  # type: ignore[arg-type]
            conformance.ServiceKit().build(services, SETTINGS),
            SETTINGS,
        )

    def reconciler(self) -> Callable[[str, Deadline], Outcome]:
        """One instance of the function: its reconcile of one cluster."""
        app = self.application()
        return lambda cluster_id, deadline: entry.run(app, cluster_id, deadline)

    def event(self, name: str) -> str:
        """One event of the cluster on an instance of its own, redelivered after a transient failure."""
        reconciler = self.reconciler()
        for _ in range(1 + REDELIVERIES):
            try:
                return reconciler(CID, Deadline(60.0)).result
            except TransientError:
                continue
            except TerminalError as exc:  # acknowledged by the handler (e.g. ClusterGone: hard-deleted meanwhile)
                return f"terminal {exc.reason}"
        self.problems.append(f"{name} still failed after {REDELIVERIES} redeliveries")
        return "failed"

    def check(self) -> None:
        assert not self.problems, self.problems
        finalized = self.hyperfleet.finalized[CID].is_set() or CID not in self.hyperfleet.clusters
        if not finalized:
            return
        left = []
        if CID in self.service.held:
            left.append(f"a credential at the service (serial {self.service.held[CID]})")
        if SECRET in self.sm.secrets:
            left.append("the Secret Manager secret")
        if (NAMESPACE, KUBE_NAME) in self.kube.secrets:
            left.append("the Kubernetes Secret")
        assert not left, "outlived the cluster's Finalized report: " + ", ".join(left)
