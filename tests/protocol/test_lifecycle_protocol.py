"""Every interleaving (within bounds) of a deletion with provisioning events and the service's own rotation keeps
the lifecycle invariants of pullsecret/reconcile/finalize.py (L1-L4), in service mode.

The actors run the product's own reconcile (pullsecret/reconcile/entry.py, with the real `SecretStore`,
`ServiceSource` and finalizer) against in-memory services whose every call is a scheduling point
(tests/fakes/; the world in tests/protocol/lifecycle.py); the pool runs inline on the actor's thread. An
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

import pytest

from tests.fakes import scheduler
from tests.fakes.hyperfleet import HyperFleet
from tests.fakes.kubernetes import Kube
from tests.fakes.pullsecretservice import Service
from tests.fakes.scheduler import Run
from tests.fakes.secretmanager import FakeSecretManager
from tests.protocol.lifecycle import CID, PROJECT, Lifecycle


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
    scheduled_flights: Callable[[Run], None],
    actors: str,
    provisioned: bool,
    preemptions: int,
) -> None:
    setup = build(scheduled_flights, actors, provisioned=provisioned)
    stats = scheduler.explore(setup, preemptions=preemptions, faults=0)
    print(f"explored {stats.runs} interleavings in {stats.seconds:.1f} s (longest: {stats.longest} choices)")
    assert stats.runs > 1
