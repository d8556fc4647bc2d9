"""Every interleaving (within bounds) of two rotation deliveries keeps the fan-out invariants of source/rotation.py.

The real `fan_out` runs against in-memory services whose every call is a scheduling point: the progress record
and the source in Secret Manager (tests/fakes/secretmanager.py), the HyperFleet cluster list, Pub/Sub. The wall clock
moves one second per call, and a redelivery after a transient failure comes BACKOFF_S later. When every delivery
is done (redelivered and continued to completion), R1-R3 must hold:

- every cluster that exists got an event of the newest rotation (R3);
- repeats of one rotation stay within one page (the clusters since the last save) (R1, R3).

Not checked: "no event of an older rotation after one of a newer" holds only while no holder stalls past its
lease between its lease check and its publish; the scheduler can stall an actor for ever, and then finds that
order (a lease is no fence). It does not decide the content: the events carry no source, and each reconcile
reads the source's newest version.
"""

from __future__ import annotations

import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pullsecret.errors import TransientError
from pullsecret.model.events import SecretVersionAdded
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.pacing import WritePacer
from pullsecret.source.platform import rotation
from pullsecret.source.platform.secret import PlatformSecret
from pullsecret.source.platform.settings import PlatformSettings
from tests.fakes import scheduler
from tests.fakes.scheduler import Run, SchedEvent
from tests.fakes.secretmanager import PROJECT, FakeSecretManager, Secret, Version

SOURCE = f"projects/{PROJECT}/secrets/platform"
PAGE = 2
BACKOFF_S = 50.0  # Pub/Sub redelivery backoff; shorter than a lease, so a live holder is not overtaken
ATTEMPTS = 12  # redeliveries outlast a lease: a stalled holder is taken over


class _Deadline:
    def __init__(self, world: RotationWorld, seconds: float) -> None:
        self._world, self._end = world, world.now + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - self._world.now)

    def expired(self) -> bool:
        return self.remaining() <= 0

    def call_timeout(self) -> float:
        return max(min(self.remaining(), 20.0), 0.5)  # as retrying.Deadline.call_timeout


@dataclass
class RotationWorld:
    run: Run
    clusters: list[str]
    sm: FakeSecretManager
    now: float = 1_000.0
    events: dict[str, list[int]] = field(default_factory=dict)  # cluster id -> rotation versions, in publish order
    problems: list[str] = field(default_factory=list)

    def tick(self, label: str) -> None:
        self.run.point(label)
        self.now += 1.0

    def list_clusters(
        self, *, page: int, size: int, search: str | None = None, order: str | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        self.tick("list clusters")
        ids = sorted(self.clusters)
        if search:
            after = search.split("'")[1]
            ids = [i for i in ids if i > after]
        chosen = ids[(page - 1) * size : page * size]
        return [{"id": i, "kind": "Cluster", "generation": 1} for i in chosen], len(ids)

    def delete(self, cluster_id: str) -> None:
        self.tick(f"delete {cluster_id}")
        self.clusters.remove(cluster_id)

    def add_source_version(self) -> None:
        self.tick("add source version")
        secret = self.sm.secrets[SOURCE]
        secret.versions.append(Version(secret.versions[-1].number + 1, b'{"auths":{}}'))


class _Publisher:
    """Pub/Sub as one rotation delivery sees it: publishes are recorded with the delivery's version."""

    def __init__(self, world: RotationWorld, version: int) -> None:
        self.world, self.version = world, version
        self.nonces: list[str] = []

    def publish(self, topic: str, event: dict[str, Any]) -> Any:
        self.world.tick("publish")
        self.world.events.setdefault(event["data"]["id"], []).append(self.version)
        return pytypes.SimpleNamespace(result=lambda timeout=None: None)

    def publish_raw(self, topic: str, data: bytes, attributes: dict[str, str]) -> Any:
        self.world.tick("hand on")
        self.nonces.append(attributes[rotation.CONTINUATION])
        return pytypes.SimpleNamespace(result=lambda timeout=None: None)


SETTINGS = pytypes.SimpleNamespace(
    of=lambda kind: PlatformSettings(f"{SOURCE}/versions/latest"),  # the platform source's own settings
    adapter_topic="projects/p/topics/reconcile",
    secret_project_id=PROJECT,
    secret_id_template="hyperfleet-{cluster_id}-pull-secret",
    adapter_name="pullsecret",
    rotation_slice_s=1_000.0,  # a lease (slice + margin) outlasts the redeliveries below: no live holder is overtaken
    publish_rate=lambda: 1e9,
)


def delivery(world: RotationWorld, store: SecretStore, version: int, *, adds: bool = False) -> Callable[[], str]:
    """One notification of `version`, redelivered after a transient failure and followed through its hand-ons."""

    def body() -> str:
        if adds:
            world.add_source_version()
        publisher = _Publisher(world, version)
        continuation: str | None = None
        held = False
        for _ in range(ATTEMPTS):
            notification = SecretVersionAdded(
                SOURCE, f"{SOURCE}/versions/{version}", "m-1", "pubsub", None, continuation
            )
            try:
                result, _ = rotation.fan_out(
                    SETTINGS,  # type: ignore[arg-type]
                    notification,
                    hyperfleet=world,  # type: ignore[arg-type]
                    store=store,
                    secret=PlatformSecret(store.calls, ttl_s=0.0),
                    publisher=publisher,  # type: ignore[arg-type]
                    deadline=_Deadline(world, SETTINGS.rotation_slice_s),  # type: ignore[arg-type]
                    clock=lambda: world.now,
                )
            except rotation.Held:
                # Redelivered when the record changes, or (nothing else moving) once the lease ran out.
                changed = SchedEvent(world.run)
                world.sm.on_update.append(changed.set)
                if not changed.wait():
                    world.now += SETTINGS.rotation_slice_s + rotation.LEASE_MARGIN_S
                world.sm.on_update.remove(changed.set)
                held = True
                continue
            except TransientError:
                world.now += BACKOFF_S
                held = False
                continue
            if result != "continued":
                return result
            continuation = publisher.nonces[-1]
        if held:
            return "held"  # Pub/Sub goes on redelivering while the holder lives; the checks judge its work
        world.problems.append(f"the notification of version {version} never finished")
        return "failed"

    return body


def build(
    *, rotations: list[tuple[int, bool]], clusters: int, delete: str | None = None
) -> Callable[[Run], Callable[[], None]]:
    """`rotations`: (version notified, whether its actor first adds that version to the source)."""

    def setup(run: Run) -> Callable[[], None]:
        sm = FakeSecretManager(run)
        first = min(v for v, _ in rotations)
        sm.secrets[SOURCE] = Secret(labels={}, versions=[Version(n, b'{"auths":{}}') for n in range(1, first + 1)])
        world = RotationWorld(run, [f"cls-{i}" for i in range(clusters)], sm)
        for index, (version, adds) in enumerate(rotations):
            store = SecretStore(sm, pacer=WritePacer(sleep=lambda s: None))
            run.spawn(f"N{index + 1}(v{version})", delivery(world, store, version, adds=adds))
        if delete is not None:
            run.spawn("deleter", lambda: world.delete(delete))

        def check() -> None:
            assert not world.problems, world.problems
            newest = max(v for v, _ in rotations)
            assert world.clusters, "no cluster left"
            for cid in world.clusters:
                got = world.events.get(cid, [])
                assert newest in got, f"{cid} never got an event of rotation {newest}: {got}"
            repeats = sum(got.count(newest) for got in world.events.values()) - clusters
            # The documented bound: the clusters since the last save (one page), plus the one publish a holder
            # stalled past its lease may still make after its check.
            assert repeats <= PAGE + 1, f"{repeats} repeated events of rotation {newest} (bound: {PAGE + 1})"

        return check

    return setup


SCENARIOS = [
    # Two deliveries of one notification (Pub/Sub duplicates): the second must stop, not follow in lockstep.
    ("duplicate-delivery", {"rotations": [(2, False), (2, False)], "clusters": 5}, 1, 1),
    # An older rotation still running when a newer one arrives: the newer must not give up.
    ("newer-rotation", {"rotations": [(2, False), (3, True)], "clusters": 5}, 2, 0),
    # A cluster deleted during the fan-out: the ones after it are not skipped.
    ("deletion", {"rotations": [(2, False)], "clusters": 5, "delete": "cls-0"}, 3, 0),
]


@pytest.mark.parametrize(("spec", "preemptions", "faults"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_every_interleaving_reaches_every_cluster_with_the_newest_rotation(
    monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any], preemptions: int, faults: int
) -> None:
    monkeypatch.setattr(rotation, "PAGE_SIZE", PAGE)
    stats = scheduler.explore(build(**spec), preemptions=preemptions, faults=faults)
    print(f"explored {stats.runs} interleavings in {stats.seconds:.1f} s (longest: {stats.longest} choices)")
    assert stats.runs > 1
