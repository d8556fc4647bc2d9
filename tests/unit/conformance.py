"""The conformance suite: every registered delivery mode x source through one story, against in-memory services.

The story (`story`): a cluster is provisioned, its source's pull secret changes, its delivered copy is damaged and
repaired, and it is deleted. The product's own reconcile (pullsecret.reconcile.entry.run over an `Application`) runs it
with the real `SecretStore` over the in-memory Secret Manager of tests/protocol/world.py and the in-memory
HyperFleet of tests/protocol/lifecycle_world.py.

Each registered implementation has a kit here (`DELIVERY_KITS`, `SOURCE_KITS`, by registered name): it builds the
implementation with the external service its own client talks to faked in memory, and answers, in words every mode
shares, what the management cluster's namespace would see (`delivered`), how to damage it (`damage`), and, for a
source, how its pull secret changes (`change`) and whether it still holds a credential for the cluster (`holds`).
A kit where the implementation's own client is the thing faked builds the implementation from its own parts
(direct mode: its `DirectDelivery` over a fake GKE and Kubernetes writer; the Pull Secret Service: `ServiceSource`
over the fake service client); otherwise the registered factory builds it (external-secrets: the shared Secret
Manager client, here with its IAM policy methods; the platform source: the store).
"""

from __future__ import annotations

import base64
import json
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from google.iam.v1 import policy_pb2

from pullsecret.app import Application, Collaborators
from pullsecret.delivery import base as delivery_base
from pullsecret.delivery import modes
from pullsecret.delivery.base import Delivered, Delivery
from pullsecret.delivery.direct import kubesecret
from pullsecret.delivery.direct.kubesecret import DesiredSecret
from pullsecret.delivery.direct.mode import DirectDelivery
from pullsecret.delivery.external_secrets.settings import ExternalSecretsSettings
from pullsecret.identity.google import RuntimeIdentity
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
from tests.protocol.lifecycle_world import HyperFleet, InlineExecutor, NoRegistryChecks, Service, document
from tests.protocol.world import FakeSecretManager, Secret

PROJECT = "hf-project"
CID = "cls-conformance01"
SECRET = f"projects/{PROJECT}/secrets/hyperfleet-{CID}-pull-secret"
NAMESPACE, KUBE_NAME = f"clusters-{CID}", f"{CID}-pull-secret"
PLATFORM_SECRET = "projects/platform-project/secrets/platform-pull-secret"
ACCESSOR = "roles/secretmanager.secretAccessor"
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


class Calm:
    """A `Run` of the in-memory services with no scheduler: every call proceeds, every write answers."""

    def point(self, label: str) -> None:
        return None

    def fault(self, label: str) -> str:
        return "ok"


class SecretManager(FakeSecretManager):
    """The in-memory Secret Manager, with the IAM policy methods the external-secrets mode calls on the same client
    (GetIamPolicy / SetIamPolicy, https://cloud.google.com/secret-manager/docs/reference/rpc/google.iam.v1)."""

    def __init__(self) -> None:
        super().__init__(Calm())  # type: ignore[arg-type]
        self.policies: dict[str, bytes] = {}

    def get_iam_policy(self, *, request: dict[str, Any], **_: Any) -> policy_pb2.Policy:
        self._secret(request["resource"])  # NotFound when the secret is gone
        return policy_pb2.Policy.FromString(self.policies.get(request["resource"], b""))

    def set_iam_policy(self, *, request: dict[str, Any], **_: Any) -> policy_pb2.Policy:
        self._secret(request["resource"])
        self.policies[request["resource"]] = request["policy"].SerializeToString()
        return request["policy"]

    def members(self, secret_name: str) -> set[str]:
        policy = policy_pb2.Policy.FromString(self.policies.get(secret_name, b""))
        return {m for b in policy.bindings if b.role == ACCESSOR and not b.HasField("condition") for m in b.members}

    def latest(self, secret_name: str) -> bytes | None:
        version = self.newest(secret_name)
        return version.data if version is not None and version.state == "ENABLED" else None


@dataclass
class World:
    """The in-memory services one story runs against."""

    sm: SecretManager = field(default_factory=SecretManager)
    hyperfleet: HyperFleet = field(default_factory=lambda: HyperFleet(Calm()))  # type: ignore[arg-type]
    service: Service = field(default_factory=lambda: Service(Calm()))  # type: ignore[arg-type]
    platform_serial: int = 0

    def store(self) -> SecretStore:
        return SecretStore(self.sm, pacer=WritePacer(sleep=lambda s: None))  # type: ignore[arg-type]


class DeliveryKit(Protocol):
    def settings(self, settings: Settings) -> Settings: ...

    def build(self, world: World, settings: Settings) -> Delivery: ...

    def delivered(self, world: World) -> bytes | None:
        """What the cluster's namespace would hold as its pull secret (None: nothing)."""

    def damage(self, world: World) -> None: ...


class SourceKit(Protocol):
    def settings(self, settings: Settings) -> Settings: ...

    def build(self, world: World, settings: Settings) -> Source: ...

    def change(self, world: World) -> None: ...

    def holds(self, world: World) -> bool:
        """The source still holds a credential of the cluster's own (always False for a shared one)."""


# -- delivery kits -------------------------------------------------------------------------------------------------


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


@dataclass
class DirectKit:
    kube: FakeKubeSecrets = field(default_factory=FakeKubeSecrets)

    def settings(self, settings: Settings) -> Settings:
        return replace(settings, kubernetes_delivery="direct")

    def build(self, world: World, settings: Settings) -> Delivery:
        return DirectDelivery(FakeClusters(), self.kube)  # type: ignore[arg-type]

    def delivered(self, world: World) -> bytes | None:
        live = self.kube.secrets.get((NAMESPACE, KUBE_NAME))
        return None if live is None else base64.b64decode(live["data"][kubesecret.KEY])

    def damage(self, world: World) -> None:
        """Someone deletes our Secret on the management cluster."""
        del self.kube.secrets[(NAMESPACE, KUBE_NAME)]


class ExternalSecretsKit:
    def settings(self, settings: Settings) -> Settings:
        return replace(settings, kubernetes_delivery="external-secrets")

    def build(self, world: World, settings: Settings) -> Delivery:
        return modes.build(delivery_base.Wiring(settings, RuntimeIdentity("p", "fn@p.iam"), world.sm))

    def delivered(self, world: World) -> bytes | None:
        """External Secrets Operator syncs the latest version when the namespace's principal may access it."""
        principal = SETTINGS.of(ExternalSecretsSettings).principal_template.format(namespace=NAMESPACE)  # type: ignore[union-attr]
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
        world.sm.secrets.setdefault(PLATFORM_SECRET, Secret(labels={}))
        self.change(world)
        store = world.store()
        return sources.build(source_base.Wiring(settings, store, InlineExecutor()))  # type: ignore[arg-type]

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
        return replace(settings, source="service").with_own(ServiceSettings("http://pull-secret-service.invalid"))

    def build(self, world: World, settings: Settings) -> Source:
        return ServiceSource(world.service, ("quay.io",))  # type: ignore[arg-type]

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


def story(delivery_kit: DeliveryKit, source_kit: SourceKit) -> None:
    """Provisioning, a change at the source, a repair of the delivered copy, a deletion: each leaves the cluster's
    namespace holding what Secret Manager stores (nothing once deleted), and reports it in the mode's words."""
    world = World()
    settings = source_kit.settings(delivery_kit.settings(SETTINGS))
    delivery, source = delivery_kit.build(world, settings), source_kit.build(world, settings)
    world.hyperfleet.add(CID, PROJECT)
    run = reconciler(world, delivery, source, settings)

    outcome = run(CID, Deadline(30.0))
    first = world.sm.latest(SECRET)
    assert first is not None and delivery_kit.delivered(world) == first, ("provisioning", outcome)
    available = condition(world, "Available")
    assert available["status"] == "True", available
    assert available["message"] == delivery.wording.available(own_credentials=source.own_credentials)

    source_kit.change(world)
    outcome = run(CID, Deadline(30.0))
    changed = world.sm.latest(SECRET)
    assert changed is not None and changed != first, ("change", outcome)
    assert delivery_kit.delivered(world) == changed, ("change", outcome)

    delivery_kit.damage(world)
    assert delivery_kit.delivered(world) != changed
    outcome = run(CID, Deadline(30.0))
    assert delivery_kit.delivered(world) == changed == world.sm.latest(SECRET), ("repair", outcome)

    world.hyperfleet.soft_delete(CID)
    outcome = run(CID, Deadline(30.0))
    finalized = condition(world, "Finalized")
    assert finalized["status"] == "True", ("deletion", outcome, finalized)
    assert SECRET not in world.sm.secrets, ("deletion", outcome)
    assert delivery_kit.delivered(world) is None and not source_kit.holds(world), ("deletion", outcome)
