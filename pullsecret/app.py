"""The wiring: one process's collaborators, built once from the settings and the runtime identity.

`Application.build` is the one place that chooses the delivery mode (pullsecret.delivery.modes) and the pull-secret
source (pullsecret.source.sources) and hands them to the reconcile; the handler, the operator CLI, the doctor and
the rotation take the `Application` and use the collaborators they need from it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pullsecret.clients import RuntimeIdentity, secret_manager_client
from pullsecret.config import Settings
from pullsecret.delivery import base as delivery_base
from pullsecret.delivery import modes
from pullsecret.delivery.base import Delivery
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.logs import log
from pullsecret.reconcile import Reconciler
from pullsecret.registry.verification import RegistryVerifier
from pullsecret.secretstore import SecretStore
from pullsecret.source import base as source_base
from pullsecret.source import sources
from pullsecret.source.base import Source

POOL_WORKERS = 128


@dataclass(frozen=True)
class Application:
    """Per-process collaborators (clients, the delivery, the source, the pool), shared by every event."""

    settings: Settings
    identity: RuntimeIdentity
    hyperfleet: HyperFleetClient
    store: SecretStore
    secret_manager: Any  # SecretManagerServiceClient, shared by the store and the external-secrets delivery
    delivery: Delivery
    source: Source
    registries: RegistryVerifier
    pool: ThreadPoolExecutor
    reconciler: Reconciler

    @classmethod
    def build(cls, settings: Settings, identity: RuntimeIdentity) -> Application:
        """Every client of this configuration (no call is made: each connects on first use)."""
        log.configure(project_id=identity.project_id)
        pool = ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix="pullsecret")
        secrets = secret_manager_client(identity, settings.secret_manager_emulator_host)
        hyperfleet = HyperFleetClient(settings, identity=identity)
        store = SecretStore(
            secrets,
            replication_locations=settings.secret_replication_locations,
            kms_key=settings.secret_kms_key,
        )
        delivery = modes.build(delivery_base.Wiring(settings=settings, identity=identity, secret_manager=secrets))
        source = sources.build(source_base.Wiring(settings=settings, store=store, pool=pool, identity=identity))
        registries = RegistryVerifier(settings)
        reconciler = Reconciler(
            settings,
            hyperfleet=hyperfleet,
            store=store,
            delivery=delivery,
            source=source,
            registries=registries,
            pool=pool,
            created_by=identity.email or f"hyperfleet-{settings.adapter_name}-adapter",
        )
        return cls(
            settings=settings,
            identity=identity,
            hyperfleet=hyperfleet,
            store=store,
            secret_manager=secrets,
            delivery=delivery,
            source=source,
            registries=registries,
            pool=pool,
            reconciler=reconciler,
        )
