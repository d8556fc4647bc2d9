"""Every interleaving (within bounds) of a deletion with provisioning events and the service's own rotation keeps
the lifecycle invariants of pullsecret/reconcile/finalize.py (L1-L4), in service mode.

The actors run the product's own reconcile (pullsecret/reconcile/entry.py, with the real `SecretStore`,
`ServiceSource` and finalizer) against in-memory services whose every call is a scheduling point
(tests/protocol/world.py, tests/protocol/lifecycle_world.py); the pool runs inline on the actor's thread. An
event that fails transiently is redelivered, and a redelivery reads the cluster afresh. Actors:

- P: a provisioning event of the cluster (it read the cluster live: a Sentinel event);
- D: the deletion (soft delete: `deleted_time`, the generation moves on) and its event;
- H: HyperFleet's hard delete, once Finalized=True is stored;
- R: a rotation at the service (new credentials for a cluster it holds).

Invariant: no credential outlives its cluster's Finalized report. Once every actor is done, if Finalized=True was
stored (or the cluster is gone): the service holds no credential for it, Secret Manager holds no secret of it,
and Kubernetes no Secret.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from pullsecret.app import Application
from pullsecret.errors import TerminalError, TransientError
from pullsecret.reconcile import entry
from pullsecret.reconcile.outcome import Outcome
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.pacing import WritePacer
from pullsecret.settings.common import Settings
from pullsecret.source.service.settings import ServiceSettings
from pullsecret.source.service.source import ServiceSource
from tests.protocol import scheduler
from tests.protocol.lifecycle_world import HyperFleet, Kube, Service
from tests.protocol.scheduler import Run
from tests.protocol.test_write_protocol import scheduled_flights  # noqa: F401 - a fixture
from tests.protocol.world import FakeSecretManager

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
        """One instance of the function: its own store, source and pool."""
        from tests.unit import conformance

        return conformance.application(
            self.hyperfleet,
            SecretStore(self.sm, pacer=WritePacer(sleep=lambda s: None)),  # type: ignore[arg-type]
            self.kube,  # type: ignore[arg-type]
            ServiceSource(self.service, ("quay",)),  # type: ignore[arg-type]
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


def _actors(world: Lifecycle, names: str) -> None:
    bodies: dict[str, Callable[[], object]] = {
        "P": lambda: world.event("P"),
        "D": lambda: (world.hyperfleet.soft_delete(CID), world.event("D")),
        "H": lambda: (world.hyperfleet.finalized[CID].wait(), world.hyperfleet.hard_delete(CID)),
        "R": lambda: world.service.rotate(CID),
    }
    for name in names:
        world.run.spawn(name, bodies[name])


def build(bind: Callable[[Run], None], actors: str, *, provisioned: bool) -> Callable[[Run], Callable[[], None]]:
    def setup(run: Run) -> Callable[[], None]:
        bind(run)
        world = Lifecycle(run, HyperFleet(run), Service(run), FakeSecretManager(run), Kube(run))
        world.hyperfleet.add(CID, PROJECT)
        if provisioned:  # the cluster was provisioned before: its credential at the service, and everywhere
            world.service.held[CID] = world.service.minted = 1
        _actors(world, actors)
        return world.check

    return setup


# (name, actors, provisioned before, preemption bound)
SCENARIOS = [
    # The first provisioning's POST against the deletion and the hard delete (the race).
    ("first-provisioning-vs-deletion", "PDH", False, 2),
    # A rotation at the service, the event that delivers it, and the deletion.
    ("rotation-vs-deletion", "RPD", True, 2),
    # A repair/steady event of a provisioned cluster against the deletion and the hard delete.
    ("repair-vs-deletion", "PDH", True, 2),
]


@pytest.mark.parametrize(
    ("actors", "provisioned", "preemptions"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
def test_no_credential_outlives_its_clusters_finalized_report(
    scheduled_flights: Callable[[Run], None],  # noqa: F811 - the fixture imported above
    actors: str,
    provisioned: bool,
    preemptions: int,
) -> None:
    setup = build(scheduled_flights, actors, provisioned=provisioned)
    stats = scheduler.explore(setup, preemptions=preemptions, faults=0)
    print(f"explored {stats.runs} interleavings in {stats.seconds:.1f} s (longest: {stats.longest} choices)")
    assert stats.runs > 1
