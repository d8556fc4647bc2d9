"""Every interleaving (within bounds) of two or three reconciles of one cluster keeps the write protocol's invariants.

The deliveries run the real `SecretStore` (pullsecret/secretstore/versions.py) against in-memory services
(tests/protocol/world.py) in which every call is a scheduling point; `reconcile` below follows the order of
`Reconciler._provision` (own status, newest version, Kubernetes probe, store, Kubernetes apply beside the
generation re-read and the read-back, status). A
delivery that fails transiently is redelivered, and a redelivery reads the cluster again. When every delivery
is done, the invariants stated in pullsecret/secretstore/versions.py must hold:

1. the newest Secret Manager version is enabled and holds the newest generation's content;
2. the Kubernetes Secret holds it, recorded at that generation;
3. the last stored status reports that generation as applied;
4. no enabled version is destroyed while it is the only copy of the newest generation's content.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from pullsecret.errors import TransientError
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore, versions
from pullsecret.secretstore.pacing import WritePacer
from tests.protocol import scheduler
from tests.protocol.scheduler import Run, SchedEvent
from tests.protocol.world import PROJECT, FakeSecretManager, Secret, Version

SECRET_ID = "hyperfleet-cls-x-pull-secret"
SECRET = f"projects/{PROJECT}/secrets/{SECRET_ID}"
REDELIVERIES = 3


def content(tag: str) -> PullSecret:
    document = {"auths": {"registry.example.com": {"auth": f"dXNlcjp{tag}"}}}
    return PullSecret(canonical=json.dumps(document, sort_keys=True, separators=(",", ":")).encode(), registries=())


@dataclass
class World:
    """The cluster (at its newest generation), its Kubernetes Secret and its stored status."""

    run: Run
    newest: int
    contents: dict[int, PullSecret]
    sm: FakeSecretManager
    kube: tuple[int, bytes] = (0, b"")
    status: tuple[int, str] = (0, "none")
    problems: list[str] = field(default_factory=list)

    def read_generation(self) -> int:
        self.run.point("get cluster")
        return self.newest

    def own_status(self) -> int:
        self.run.point("list statuses")
        return self.status[0]

    def kube_probe(self) -> int:
        self.run.point("kube probe")
        return self.kube[0]

    def kube_apply(self, generation: int, data: bytes) -> bool:
        self.run.point("kube apply")
        if self.kube[0] > generation:
            return False  # stale: kubesecret.apply never goes back
        self.kube = (generation, data)
        return True

    def report(self, generation: int, kind: str, recorded: int = 0) -> None:
        self.run.point(f"report {kind}")
        if kind == "stale" and recorded <= generation:
            self.problems.append(f"generation {generation} reported stale against generation {recorded}")
        if generation >= self.status[0]:  # an older report is discarded by the API
            self.status = (generation, kind)

    def on_destroy(self, secret: Secret, version: Version) -> None:
        newest = self.contents[self.newest].canonical
        others = [v for v in secret.versions if v is not version and v.state == "ENABLED" and v.data == newest]
        if version.state == "ENABLED" and version.data == newest and not others:
            self.problems.append(f"version {version.number} destroyed while the only copy of the newest content")


def reconcile(world: World, store: SecretStore, generation: int) -> str:
    """One reconcile of the cluster as read at `generation`, in `Reconciler._provision`'s order."""
    secret = world.contents[generation]
    deadline = Deadline(60.0)
    reported = world.own_status()
    if reported > generation:
        world.report(generation, "stale", reported)
        return "stale"
    latest = store.latest(SECRET, deadline)
    recorded = world.kube_probe()
    if recorded > generation:
        world.report(generation, "stale", recorded)
        return "stale"
    stored = store.store(
        project=PROJECT,
        secret_id=SECRET_ID,
        secret=secret,
        generation=generation,
        labels={"managed-by": "hyperfleet"},
        deadline=deadline,
        latest=latest,
        current_generation=world.read_generation,
        owned=True,
    )
    if getattr(stored, "stale", False):
        world.report(generation, "stale", stored.recorded_generation)
        return "stale"
    # The apply runs beside the generation re-read and the read-back (Reconciler._apply); the apply first is
    # the order that lets Kubernetes take a version whose generation the re-read then finds superseded.
    applied = world.kube_apply(generation, secret.canonical)
    if stored.confirm is not None:
        stored.confirm()
    if stored.verify is not None:
        stored.verify()
    if not applied:
        world.report(generation, "stale", world.kube[0])
        return "stale"
    world.report(generation, "applied")
    return "applied"


def delivery(world: World, store: SecretStore, generation: int) -> Callable[[], str]:
    """A delivery of an event whose first reconcile read the cluster at `generation`; redelivered on failure."""

    def body() -> str:
        read = generation
        for attempt in range(1 + REDELIVERIES):
            if attempt:
                read = world.read_generation()
            try:
                return reconcile(world, store, read)
            except TransientError:
                continue
        world.problems.append(f"a delivery of generation {generation} still failed after {REDELIVERIES} redeliveries")
        return "failed"

    return body


@pytest.fixture
def scheduled_flights(monkeypatch: pytest.MonkeyPatch) -> Callable[[Run], None]:
    """The store's single-flight waits become scheduling points of the current run (no real blocking)."""
    current: list[Run] = []

    class Flight(versions.Flight):
        def __init__(self) -> None:
            super().__init__()
            self.done = SchedEvent(current[-1])

    monkeypatch.setattr(versions, "Flight", Flight)
    monkeypatch.setattr(random, "uniform", lambda a, b: 0.0)  # backoff sleeps: zero, so runs stay deterministic
    return current.append


def build(
    bind: Callable[[Run], None],
    *,
    actors: list[tuple[int, str]],
    contents: dict[int, str],
) -> Callable[[Run], Callable[[], None]]:
    """Actors are (generation first read, process); deliveries in one process share one SecretStore."""

    def setup(run: Run) -> Callable[[], None]:
        bind(run)
        secrets = {g: content(tag) for g, tag in contents.items()}
        world = World(run, max(secrets), secrets, FakeSecretManager(run))
        world.sm.on_destroy = world.on_destroy
        world.sm.secrets[SECRET] = Secret(
            labels={"managed-by": "hyperfleet"}, versions=[Version(1, secrets[0].canonical)]
        )
        world.kube, world.status = (0, secrets[0].canonical), (0, "applied")
        stores: dict[str, SecretStore] = {}
        for index, (generation, process) in enumerate(actors):
            if process not in stores:
                stores[process] = SecretStore(world.sm, pacer=WritePacer(sleep=lambda s: None))
            run.spawn(f"E{index + 1}(g{generation}@{process})", delivery(world, stores[process], generation))

        def check() -> None:
            newest = secrets[world.newest].canonical
            assert not world.problems, world.problems
            top = world.sm.newest(SECRET)
            assert top is not None and top.state == "ENABLED", f"newest version unusable: {top}"
            assert top.data == newest, (
                f"Secret Manager's newest version {top.number} holds "
                f"{next(t for g, t in contents.items() if secrets[g].canonical == top.data)}, "
                f"not generation {world.newest}'s content"
            )
            assert world.kube == (world.newest, newest), f"Kubernetes holds generation {world.kube[0]}"
            assert world.status == (world.newest, "applied"), f"the stored status is {world.status}"

        return check

    return setup


# (name, actors, contents by generation, preemption bound, fault bound)
SCENARIOS = [
    # A slow older event: generation 1's delivery read the cluster before generation 2 existed.
    ("older-and-newer", [(1, "a"), (2, "b")], {0: "g0", 1: "g1", 2: "g2"}, 2, 1),
    # Three writers of three generations (the restore must not bury the newest).
    ("three-generations", [(1, "a"), (2, "b"), (3, "c")], {0: "g0", 1: "g1", 2: "g2", 3: "g3"}, 2, 0),
    # One process: generation 3 and 4 carry the same content (single flight), generation 2 elsewhere.
    ("single-flight", [(2, "a"), (3, "b"), (4, "b")], {0: "g0", 2: "Y", 3: "X", 4: "X"}, 2, 0),
    # Duplicates of the newest generation in two processes, and an older one.
    ("duplicates", [(2, "a"), (2, "b"), (1, "c")], {0: "g0", 1: "g1", 2: "g2"}, 1, 1),
]


@pytest.mark.parametrize(
    ("actors", "contents", "preemptions", "faults"),
    [s[1:] for s in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_every_interleaving_ends_with_the_newest_generation_everywhere(
    scheduled_flights: Callable[[Run], None],
    actors: list[tuple[int, str]],
    contents: dict[int, str],
    preemptions: int,
    faults: int,
) -> None:
    stats = scheduler.explore(
        build(scheduled_flights, actors=actors, contents=contents), preemptions=preemptions, faults=faults
    )
    print(f"explored {stats.runs} interleavings in {stats.seconds:.1f} s (longest: {stats.longest} choices)")
    assert stats.runs > 1
