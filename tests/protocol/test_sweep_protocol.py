"""Every interleaving (within bounds) of `fleet --fix` with HyperFleet's hard delete of a finalized cluster and the
creation and provisioning of a new one keeps the sweep's promise (S1-S3 of pullsecret/operator/sweep.py): a sweep
never removes what a live cluster uses.

The sweep is the product's own `fleet.main` (its view and its fixes) over the real `SecretStore`, reconcile and
`ServiceSource`, against the in-memory services of tests/fakes/, one cluster per page (so a
cluster leaving the list between two pages is one of the orders explored). Actors:

- S: `fleet --fix`, page size 1;
- H: HyperFleet hard-deletes cluster A (deleted, finalized: nothing of it is left);
- C: a cluster created during the sweep, then provisioned by its first event.

Invariant: once every actor is done, each live cluster whose stored status says Available=True still has its
Secret Manager secret with an enabled version, its Kubernetes Secret and its credential at the service.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pullsecret.delivery.direct.mode import WORDING
from pullsecret.model import status
from pullsecret.operator import fleet
from pullsecret.retrying import Deadline
from pullsecret.secretstore import sm_labels
from tests.fakes import scheduler
from tests.fakes.hyperfleet import HyperFleet
from tests.fakes.kubernetes import Kube
from tests.fakes.pullsecretservice import Service, document
from tests.fakes.scheduler import Run
from tests.fakes.secretmanager import FakeSecretManager, Secret, Version
from tests.protocol.lifecycle import PROJECT, SETTINGS, Lifecycle

A, B, C = "cls-a", "cls-b", "cls-c"


def _secret(cluster_id: str) -> str:
    return f"projects/{PROJECT}/secrets/hyperfleet-{cluster_id}-pull-secret"


def _kube(cluster_id: str) -> tuple[str, str]:
    return (f"clusters-{cluster_id}", f"{cluster_id}-pull-secret")


def _provisioned(world: Lifecycle, cluster_id: str) -> None:
    """A cluster provisioned before the sweep: everywhere, and Available=True in its status."""
    world.hyperfleet.add(cluster_id, PROJECT)
    world.service.minted += 1
    world.service.held[cluster_id] = world.service.minted
    content = document(world.service.minted).canonical
    labels = sm_labels(
        adapter="pullsecret", cluster_id=cluster_id, cluster_name=cluster_id, deployment=SETTINGS.deployment_id
    )
    world.sm.secrets[_secret(cluster_id)] = Secret(labels=labels, versions=[Version(1, content)])
    world.kube.secrets[_kube(cluster_id)] = (1, content)
    words = WORDING  # the direct mode's, for the service's own credentials
    body = status.provisioned(
        1, applied=words.applied(changed=True), available=words.available(own_credentials=True), data={}
    )
    world.hyperfleet.ours[cluster_id] = body.body("pullsecret")


def _finalized(world: Lifecycle, cluster_id: str) -> None:
    """A cluster deleted and finalized: nothing of it is left; HyperFleet has yet to hard-delete it."""
    world.hyperfleet.add(cluster_id, PROJECT)
    world.hyperfleet.clusters[cluster_id].update(deleted_time="2026-01-01T00:00:00Z", generation=2)
    body = status.finalized(2, "cleanup confirmed", {})
    world.hyperfleet.ours[cluster_id] = body.body("pullsecret")
    world.hyperfleet.finalized[cluster_id].set()


def build(bind: Callable[[Run], None], actors: str) -> Callable[[Run], Callable[[], None]]:
    def setup(run: Run) -> Callable[[], None]:
        bind(run)
        world = Lifecycle(run, HyperFleet(run), Service(run), FakeSecretManager(run), Kube(run))
        _finalized(world, A)
        _provisioned(world, B)
        app = world.application()
        printed: list[str] = []

        def create_and_provision() -> None:
            world.hyperfleet.create(C, PROJECT)
            outcome = world.reconciler()(C, Deadline(60.0))
            assert outcome.result == "applied", outcome

        bodies: dict[str, Callable[[], object]] = {
            "S": lambda: fleet.main(app, fix=True, page_size=1, out=printed.append),
            "H": lambda: world.hyperfleet.hard_delete(A),
            "C": create_and_provision,
        }
        for name in actors:
            run.spawn(name, bodies[name])

        def check() -> None:
            for cluster_id, cluster in world.hyperfleet.clusters.items():
                ours = world.hyperfleet.ours.get(cluster_id) or {}
                available = {c["type"]: c["status"] for c in ours.get("conditions", [])}.get("Available")
                if cluster.get("deleted_time") or available != "True":
                    continue
                top = world.sm.newest(_secret(cluster_id))
                missing = [
                    what
                    for what, held in (
                        ("its Secret Manager version", top is not None and top.state == "ENABLED"),
                        ("its Kubernetes Secret", _kube(cluster_id) in world.kube.secrets),
                        ("its credential at the service", cluster_id in world.service.held),
                    )
                    if not held
                ]
                assert not missing, (
                    f"the sweep removed live cluster {cluster_id}'s " + ", ".join(missing) + ("\n" + "\n".join(printed))
                )

        return check

    return setup


# (name, actors, preemption bound)
SCENARIOS = [
    ("sweep-vs-hard-delete", "SH", 2),
    ("sweep-vs-hard-delete-and-creation", "SHC", 1),
]


@pytest.mark.parametrize(("actors", "preemptions"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_a_sweep_never_removes_what_a_live_cluster_uses(
    scheduled_flights: Callable[[Run], None],
    actors: str,
    preemptions: int,
) -> None:
    stats = scheduler.explore(build(scheduled_flights, actors), preemptions=preemptions, faults=0)
    print(f"explored {stats.runs} interleavings in {stats.seconds:.1f} s (longest: {stats.longest} choices)")
    assert stats.runs > 1
