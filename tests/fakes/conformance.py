"""The conformance kits and stories: every registered delivery mode x source through one story, against the
in-memory services of this package.

The story (`story`): a cluster is provisioned, its source's pull secret changes, its delivered copy is damaged and
repaired, and it is deleted. The product's own reconcile (pullsecret.reconcile.entry.run over an `Application`) runs
it with the real `SecretStore` over the in-memory Secret Manager (tests/fakes/secretmanager.py) and HyperFleet
(tests/fakes/hyperfleet.py). The operator's side, in stories of its own: the dry run (`dry_run_story`: what it says,
and that it writes nothing), inspect, strays and left-behind (`operator_story`), the doctor's checks
(`doctor_story`: none fails before the first provisioning, all pass after it, none writes) and rekeying
(`rekey_story`: the source's rotation, delivered by the next reconcile).

Each registered implementation has a kit here (`DELIVERY_KITS`, `SOURCE_KITS`, by registered name): it builds the
implementation through its registration's factory (REGISTRATION in pullsecret/delivery/*/registration.py and
pullsecret/source/*/registration.py) and hands it the in-memory double of the external service its own client
talks to, and answers, in words every mode shares, what the management cluster's namespace would see
(`delivered`), how to damage it (`damage`), and, for a source, how its pull secret changes (`change`) and whether it
still holds a credential for the cluster (`holds`). Where the factory builds a network client from the settings, the
kit puts the double in that client's place on what the factory built: the direct mode's GKE lookup and connection
(`DirectDelivery.clusters`: the factory's own Secrets writer and admission-policy guard then talk, through the
product's SecretsApi, to a management cluster's API server in this process, tests/fakes/kubernetes.py), and the Pull
Secret Service's HTTP client (`ServiceSource.client`); the external-secrets mode and the platform source take the
shared Secret Manager client and the store from their wiring.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import time
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pullsecret.app import Application, Collaborators
from pullsecret.delivery import base as delivery_base
from pullsecret.delivery import modes
from pullsecret.delivery.base import Delivery, Leaving, Where
from pullsecret.delivery.direct import kubesecret
from pullsecret.delivery.direct.mode import DirectDelivery
from pullsecret.delivery.external_secrets.settings import ExternalSecretsSettings
from pullsecret.doctor.kit import Context, guarded
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.model import dockerconfig, preconditions
from pullsecret.operator import dryrun, inspect
from pullsecret.reconcile import entry
from pullsecret.reconcile.outcome import Outcome
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.pacing import WritePacer
from pullsecret.settings.common import Settings
from pullsecret.source import base as source_base
from pullsecret.source import sources
from pullsecret.source.base import Source
from pullsecret.source.platform.settings import PlatformSettings
from pullsecret.source.service.settings import ServiceSettings
from pullsecret.source.service.source import ServiceSource
from tests.fakes.hyperfleet import HyperFleet
from tests.fakes.kubernetes import ControlPlane, InProcessClusters
from tests.fakes.pullsecretservice import Service, document
from tests.fakes.runtime import Calm, InlineExecutor, NoRegistryChecks
from tests.fakes.secretmanager import Secret, SecretManager

PROJECT = "hf-project"
CID = "cls-conformance01"
SECRET = f"projects/{PROJECT}/secrets/hyperfleet-{CID}-pull-secret"
NAMESPACE, KUBE_NAME = f"clusters-{CID}", f"{CID}-pull-secret"
PLATFORM_SECRET = "projects/platform-project/secrets/platform-pull-secret"
SETTINGS = Settings(
    hyperfleet_api_url="http://hyperfleet.invalid",
    precondition_adapters=(),
    secret_project_id=PROJECT,
    management_cluster="projects/hf-project/locations/us-central1/clusters/mgmt-1",
    registry_verification="off",
    deployment_id="d-test",
    own=(
        PlatformSettings(ttl_s=0.0),
        ExternalSecretsSettings(
            "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p.svc.id.goog"
            "/subject/ns/{namespace}/sa/external-secrets"
        ),
    ),
)


RUNTIME = "fn@p.iam.gserviceaccount.com"
# The runtime identity's credentials as the factories read them (its e-mail; no token is asked for: no client here
# calls Google with it).
IDENTITY = RuntimeIdentity(pytypes.SimpleNamespace(service_account_email=RUNTIME), "p")  # type: ignore[arg-type]


@dataclass
class World:
    """The in-memory services one story runs against."""

    sm: SecretManager = field(default_factory=SecretManager)
    hyperfleet: HyperFleet = field(default_factory=lambda: HyperFleet(Calm()))  # type: ignore[arg-type]
    service: Service = field(default_factory=lambda: Service(Calm()))  # type: ignore[arg-type]
    platform_serial: int = 0

    def store(self) -> SecretStore:
        return SecretStore(self.sm, pacer=WritePacer(sleep=lambda s: None))  # type: ignore[arg-type]

    def written(self) -> str:
        """Everything the services hold, as one string: equal before and after a step that writes nothing."""
        return repr((self.sm.secrets, self.sm.policies, self.hyperfleet.ours, self.service.held))


class DeliveryKit(Protocol):
    def settings(self, settings: Settings) -> Settings: ...

    def build(self, world: World, settings: Settings) -> Delivery:
        """The mode as the function builds it (its registration's factory), calling as the runtime identity."""

    def operator(self, world: World, settings: Settings) -> Delivery:
        """The mode as the operator's CLI builds it, calling with the operator's own credentials (inspect and fleet
        read what the runtime identity may not)."""

    def delivered(self, world: World) -> bytes | None:
        """What the cluster's namespace would hold as its pull secret (None: nothing)."""

    def damage(self, world: World) -> None: ...


class SourceKit(Protocol):
    def settings(self, settings: Settings) -> Settings: ...

    def build(self, world: World, settings: Settings) -> Source: ...

    def change(self, world: World) -> None: ...

    def holds(self, world: World) -> bool:
        """The source still holds a credential of the cluster's own (always False for a shared one)."""


def registered_mode(name: str) -> delivery_base.Factory:
    """The factory a mode's registration names (pullsecret.delivery.modes.MODES)."""
    return modes.registration(name).build


def registered_source(name: str) -> source_base.Factory:
    """The factory a source's registration names (pullsecret.source.sources.SOURCES)."""
    return sources.registration(name).build


def delivery_wiring(world: World, settings: Settings) -> delivery_base.Wiring:
    return delivery_base.Wiring(settings, IDENTITY, world.sm)


def source_wiring(world: World, settings: Settings) -> source_base.Wiring:
    return source_base.Wiring(settings, world.store(), InlineExecutor(), IDENTITY)  # type: ignore[arg-type]


# -- delivery kits -------------------------------------------------------------------------------------------------


@dataclass
class DirectKit:
    plane: ControlPlane = field(default_factory=lambda: ControlPlane(RUNTIME, (NAMESPACE,)))

    def settings(self, settings: Settings) -> Settings:
        return replace(settings, kubernetes_delivery="direct")

    def build(self, world: World, settings: Settings) -> Delivery:
        """The registered factory's `DirectDelivery` (its Secrets writer and admission-policy guard as built), its
        GKE lookup and connection replaced by the in-process control plane, called as the runtime identity."""
        return self._built(world, settings, ControlPlane.RUNTIME_TOKEN)

    def operator(self, world: World, settings: Settings) -> Delivery:
        """The same, as the operator's CLI calls it: with the operator's own credentials (who may read Secrets)."""
        return self._built(world, settings, ControlPlane.OPERATOR_TOKEN)

    def _built(self, world: World, settings: Settings, token: str) -> Delivery:
        built = registered_mode("direct")(delivery_wiring(world, settings))
        assert isinstance(built, DirectDelivery), built
        built.clusters = InProcessClusters(self.plane, token)
        return built

    def delivered(self, world: World) -> bytes | None:
        live = self.plane.emulator.get_secret(NAMESPACE, KUBE_NAME)
        return None if live is None else base64.b64decode(live["data"][kubesecret.KEY])

    def damage(self, world: World) -> None:
        """Someone deletes our Secret on the management cluster."""
        assert self.plane.emulator.delete_secret(NAMESPACE, KUBE_NAME)


class ExternalSecretsKit:
    def settings(self, settings: Settings) -> Settings:
        return replace(settings, kubernetes_delivery="external-secrets")

    def build(self, world: World, settings: Settings) -> Delivery:
        """The registered factory's, over the shared Secret Manager client (its IAM policy methods faked too)."""
        return registered_mode("external-secrets")(delivery_wiring(world, settings))

    def operator(self, world: World, settings: Settings) -> Delivery:
        """As the operator's CLI builds it: the same (this mode calls Secret Manager only)."""
        return self.build(world, settings)

    def delivered(self, world: World) -> bytes | None:
        """External Secrets Operator syncs the latest version when the namespace's principal may access it."""
        principal = SETTINGS.of(ExternalSecretsSettings).principal_template.format(namespace=NAMESPACE)
        return world.sm.latest(SECRET) if principal in world.sm.members(SECRET) else None

    def damage(self, world: World) -> None:
        """Someone removes the access binding."""
        world.sm.policies[SECRET] = b""


# -- source kits ---------------------------------------------------------------------------------------------------


class PlatformKit:
    def settings(self, settings: Settings) -> Settings:
        return replace(settings, source="platform").with_own(
            PlatformSettings(f"{PLATFORM_SECRET}/versions/latest", 0.0)
        )

    def build(self, world: World, settings: Settings) -> Source:
        """The registered factory's, over the store's Secret Manager client."""
        world.sm.secrets.setdefault(PLATFORM_SECRET, Secret(labels={}))
        self.change(world)
        return registered_source("platform")(source_wiring(world, settings))

    def change(self, world: World) -> None:
        """The platform team adds a version of the platform pull secret."""
        world.platform_serial += 1
        world.sm.add_secret_version(
            parent=PLATFORM_SECRET,
            payload=pytypes.SimpleNamespace(data=document(100 + world.platform_serial).canonical),
        )

    def holds(self, world: World) -> bool:
        return False


class ServiceKit:
    def settings(self, settings: Settings) -> Settings:
        service = ServiceSettings("http://pull-secret-service.invalid", registries=("quay.io",))
        return replace(settings, source="service").with_own(service)

    def build(self, world: World, settings: Settings) -> Source:
        """The registered factory's `ServiceSource`, its HTTP client replaced by the in-memory service's."""
        built = registered_source("service")(source_wiring(world, settings))
        assert isinstance(built, ServiceSource), built
        built.client = world.service  # type: ignore[assignment]
        return built

    def change(self, world: World) -> None:
        """The service rotates the cluster's credentials."""
        world.service.rotate(CID)

    def holds(self, world: World) -> bool:
        return CID in world.service.held


# By registered name: a new mode or source registers its kit here (the suite fails for one without a kit).
DELIVERY_KITS: dict[str, Callable[[], DeliveryKit]] = {"direct": DirectKit, "external-secrets": ExternalSecretsKit}
SOURCE_KITS: dict[str, Callable[[], SourceKit]] = {"platform": PlatformKit, "service": ServiceKit}


def application(hyperfleet: Any, store: Any, delivery: Delivery, source: Source, settings: Settings) -> Application:
    """One instance of the function (its process object) over the in-memory services."""
    return Application(
        settings,
        collaborators=Collaborators(
            hyperfleet=hyperfleet,
            store=store,
            secret_manager=None,
            delivery=delivery,
            source=source,
            registries=NoRegistryChecks(),  # type: ignore[arg-type]
            pool=InlineExecutor(),  # type: ignore[arg-type]
            created_by="pullsecret@test",
        ),
    )


def reconciler(world: World, delivery: Delivery, source: Source, settings: Settings) -> Callable[..., Outcome]:
    """One instance of the function over the in-memory services: its reconcile of one cluster."""
    app = application(world.hyperfleet, world.store(), delivery, source, settings)
    return lambda cluster_id, deadline: entry.run(app, cluster_id, deadline)


def condition(world: World, kind: str) -> dict[str, Any]:
    """Our last stored status's condition `kind`."""
    return next(c for c in world.hyperfleet.ours[CID]["conditions"] if c["type"] == kind)


@dataclass
class Staged:
    """One story's world, its kits, and the function built by the registered factories."""

    world: World
    delivery_kit: DeliveryKit
    source_kit: SourceKit
    settings: Settings
    delivery: Delivery
    source: Source
    app: Application

    def operator(self) -> Application:
        """The operator's CLI over the same services: the same mode built with the operator's own credentials."""
        delivery = self.delivery_kit.operator(self.world, self.settings)
        return application(self.world.hyperfleet, self.world.store(), delivery, self.source, self.settings)

    def reconcile(self) -> Outcome:
        return entry.run(self.app, CID, Deadline(30.0))

    def state(self) -> tuple[str, bytes | None]:
        """What the services hold and what the namespace would see: equal before and after a step that writes
        nothing."""
        return self.world.written(), self.delivery_kit.delivered(self.world)

    def credentials(self) -> list[str]:
        """Every credential string the cluster's stored pull secret holds (none may be shown)."""
        stored = self.world.sm.latest(SECRET)
        return [] if stored is None else sorted(dockerconfig.parse(stored, source="test").sensitive_strings())


def staged(delivery_kit: DeliveryKit, source_kit: SourceKit) -> Staged:
    """A world holding one cluster (not provisioned yet) and the function built for the kits' mode and source."""
    world = World()
    settings = source_kit.settings(delivery_kit.settings(SETTINGS))
    delivery, source = delivery_kit.build(world, settings), source_kit.build(world, settings)
    world.hyperfleet.add(CID, PROJECT)
    app = application(world.hyperfleet, world.store(), delivery, source, settings)
    return Staged(world, delivery_kit, source_kit, settings, delivery, source, app)


def story(delivery_kit: DeliveryKit, source_kit: SourceKit) -> None:
    """Provisioning, a change at the source, a repair of the delivered copy, a deletion: each leaves the cluster's
    namespace holding what Secret Manager stores (nothing once deleted), and reports it in the mode's words."""
    stage = staged(delivery_kit, source_kit)
    world, delivery, source = stage.world, stage.delivery, stage.source

    outcome = stage.reconcile()
    first = world.sm.latest(SECRET)
    assert first is not None and delivery_kit.delivered(world) == first, ("provisioning", outcome)
    available = condition(world, "Available")
    assert available["status"] == "True", available
    assert available["message"] == delivery.wording.available(own_credentials=source.own_credentials)

    source_kit.change(world)
    outcome = stage.reconcile()
    changed = world.sm.latest(SECRET)
    assert changed is not None and changed != first, ("change", outcome)
    assert delivery_kit.delivered(world) == changed, ("change", outcome)

    delivery_kit.damage(world)
    assert delivery_kit.delivered(world) != changed
    outcome = stage.reconcile()
    assert delivery_kit.delivered(world) == changed == world.sm.latest(SECRET), ("repair", outcome)

    world.hyperfleet.soft_delete(CID)
    outcome = stage.reconcile()
    finalized = condition(world, "Finalized")
    assert finalized["status"] == "True", ("deletion", outcome, finalized)
    assert SECRET not in world.sm.secrets, ("deletion", outcome)
    assert delivery_kit.delivered(world) is None and not source_kit.holds(world), ("deletion", outcome)


def dry_run_story(delivery_kit: DeliveryKit, source_kit: SourceKit) -> None:
    """`reconcile --dry-run` (pullsecret.operator.dryrun.plan) before the first provisioning, in the steady state,
    after a change at the source and after the delivered copy was damaged: it says whether the reconcile would write,
    and writes nothing itself."""
    stage = staged(delivery_kit, source_kit)
    world = stage.world

    def planned() -> dryrun.Plan:
        before = stage.state()
        plan = dryrun.plan(stage.app, CID)
        assert stage.state() == before, ("dry run wrote", plan)
        assert not any(secret in line for line in plan.lines for secret in stage.credentials()), plan.lines
        return plan

    plan = planned()
    assert plan.result == "would-write", ("first provisioning", plan)
    stage.reconcile()
    plan = planned()
    assert plan.result == "unchanged", ("steady", plan)
    source_kit.change(world)
    plan = planned()
    assert plan.result == "would-write", ("change", plan)
    stage.reconcile()
    assert planned().result == "unchanged"
    delivery_kit.damage(world)
    planned()  # what it says depends on what the mode can see of the damage; it repairs nothing
    assert delivery_kit.delivered(world) != world.sm.latest(SECRET), "the dry run repaired the delivered copy"


def where(stage: Staged) -> Where:
    """Where the cluster's pull secret goes, as the reconcile places it (its statuses' placement)."""
    statuses = stage.world.hyperfleet.list_statuses(CID)
    placement = preconditions.placement_of(CID, statuses, stage.settings)
    return Where(CID, SECRET, placement, KUBE_NAME)


def operator_story(delivery_kit: DeliveryKit, source_kit: SourceKit) -> None:
    """The operator's views (their CLI, their own credentials) of a provisioned cluster, then of its deletion:
    inspect shows the delivery in sync (or says the mode has no view of the delivered content) and no credential;
    fleet's strays on the live cluster and what the finalized cluster left behind are none; none of it writes."""
    stage = staged(delivery_kit, source_kit)
    operator = stage.operator()
    world, delivery = stage.world, operator.delivery
    stage.reconcile()
    target = where(stage)
    before = stage.state()

    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        assert inspect.run(operator, CID) == inspect.EXIT_OK
    report = json.loads(shown.getvalue())
    assert report["in_sync"] in (True, inspect.NOT_APPLICABLE), report
    assert "error" not in report["kubernetes"] and report["secret_manager"]["name"] == SECRET, report
    assert not [secret for secret in stage.credentials() if secret in shown.getvalue()], "inspect showed a credential"

    assert delivery.strays(target, Deadline(30.0)) == [], "strays on a freshly provisioned cluster"
    assert stage.state() == before, "inspect or strays wrote"

    world.hyperfleet.soft_delete(CID)
    stage.reconcile()
    assert condition(world, "Finalized")["status"] == "True"
    leaving = Leaving(SECRET, target.placement, KUBE_NAME)
    assert delivery.left_behind(CID, leaving, Deadline(30.0)) == [], "left behind by a finalized cluster"


def doctor_story(delivery_kit: DeliveryKit, source_kit: SourceKit) -> None:
    """The doctor's checks the mode and the source declare (pullsecret.doctor.run runs them as the runtime
    identity), against services set up as Terraform sets them up: before the first provisioning none fails (a
    check with nothing to look at yet says so), after it every one passes; none writes anything."""
    stage = staged(delivery_kit, source_kit)
    world = stage.world
    checks = [*stage.delivery.doctor_checks(), *stage.source.doctor_checks()]
    assert checks, "neither the mode nor the source declares a doctor check"
    for provisioned in (False, True):
        if provisioned:
            stage.reconcile()
        ctx = Context(stage.settings, RUNTIME, world.hyperfleet, world.sm, NoRegistryChecks())  # type: ignore[arg-type]
        ctx.cluster_projects = {CID: PROJECT}  # what the hyperfleet-api check learns from the listed clusters
        before = stage.state()
        lines = [line for check in checks for line in guarded(check.run, ctx, check.name)]
        assert stage.state() == before, "a doctor check wrote"
        assert lines, "the checks answered no line"
        wanted = (True,) if provisioned else (True, None)
        failed = [f"{line.check}: {line.ok} {line.text} ({line.fix})" for line in lines if line.ok not in wanted]
        assert not failed, ("provisioned" if provisioned else "before the first provisioning", failed)


def rekey_story(delivery_kit: DeliveryKit, source_kit: SourceKit) -> None:
    """The source's part of `rekey` (its `Rekeying`): a plain rekey is never refused; a cluster's own credentials,
    all created before the cutoff, are rotated (a shared source has none: "current"), its dry run's words write
    nothing, and the next reconcile delivers what the source then holds, which the CREDS column
    then calls current ("-" for a shared source)."""
    stage = staged(delivery_kit, source_kit)
    world, rekeying = stage.world, stage.source.rekeying()
    stage.reconcile()
    first = world.sm.latest(SECRET)
    assert rekeying.refusal(created_before=False, compromise=False) is None
    cutoff = time.time() + 60.0

    before = stage.state()
    assert rekeying.preview(CID, cutoff=cutoff, compromise=False), "the dry run's words are empty"
    assert stage.state() == before, "rekey's dry run wrote"

    rekeyed = rekeying.rotate(CID, cutoff=cutoff, compromise=False)
    assert rekeyed.counted == ("rotated" if stage.source.own_credentials else "current"), rekeyed
    stage.reconcile()
    now = world.sm.latest(SECRET)
    assert now is not None and delivery_kit.delivered(world) == now, "the reconcile after the rekey did not deliver"
    assert (now != first) == (rekeyed.counted == "rotated"), ("a rotation changes the content", rekeyed)
    held = rekeying.held(CID, world.hyperfleet.ours[CID])
    assert held.state == ("current" if stage.source.own_credentials else "-"), held
