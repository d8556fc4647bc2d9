"""The process object: the settings, the runtime identity and the collaborators built from them on first use, once.

One `Application` per process (the handler's `Adapter` is one, with the event intake on top). Its collaborators
(`Collaborators.build`: the HyperFleet client, the Secret Manager parts, the delivery, the source, the registry
verifier, the pool) are built on first use (not at import: the cold start stays short), once, under a lock, and
shared by every event. `Collaborators.build` is the one place that chooses the delivery mode
(pullsecret.delivery.modes) and the pull-secret source (pullsecret.source.sources). The reconcile's steps, the
operator CLI, the doctor and the rotation take the `Application` and use the collaborators they need from it; what
one event holds is the reconcile's own (pullsecret.reconcile.provisioning.Provisioning).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from pullsecret import configured
from pullsecret.delivery import base as delivery_base
from pullsecret.delivery import modes
from pullsecret.delivery.base import Delivery
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.identity.google import RuntimeIdentity, secret_manager_client
from pullsecret.logs import log
from pullsecret.registry.verification import RegistryVerifier
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.settings.common import Settings
from pullsecret.source import base as source_base
from pullsecret.source import sources
from pullsecret.source.base import Source

POOL_WORKERS = 128
T = TypeVar("T")


@dataclass
class Collaborators:
    """What the process's events share: clients, the delivery, the source, the pool (a value: no behaviour; the
    bench swaps `registries` for a fresh, cold one)."""

    hyperfleet: HyperFleetClient
    store: SecretStore
    secret_manager: Any  # SecretManagerServiceClient, shared by the store and the external-secrets delivery
    delivery: Delivery
    source: Source
    registries: RegistryVerifier
    pool: ThreadPoolExecutor
    created_by: str  # the delivered object's hyperfleet.io/created-by: the runtime identity

    @classmethod
    def build(cls, settings: Settings, identity: RuntimeIdentity) -> Collaborators:
        """Every client of this configuration (no call is made: each connects on first use)."""
        log.configure(project_id=identity.project_id)
        pool = ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix="pullsecret")
        secrets = secret_manager_client(identity, settings.secret_manager_emulator_host)
        store = SecretStore(
            secrets,
            replication_locations=settings.secret_replication_locations,
            kms_key=settings.secret_kms_key,
        )
        return cls(
            hyperfleet=HyperFleetClient(settings, identity=identity),
            store=store,
            secret_manager=secrets,
            delivery=modes.build(delivery_base.Wiring(settings=settings, identity=identity, secret_manager=secrets)),
            source=sources.build(source_base.Wiring(settings=settings, store=store, pool=pool, identity=identity)),
            registries=RegistryVerifier(settings),
            pool=pool,
            created_by=identity.email or f"hyperfleet-{settings.adapter_name}-adapter",
        )


class Application:
    """The one per-process object: settings, identity, and the collaborators built on first use (`collaborators`).

    `collaborators` given: the process runs over them (in-memory services in tests/fakes/conformance.py); none:
    `Collaborators.build` makes them on the first access to any of them."""

    def __init__(
        self, settings: Settings, identity: RuntimeIdentity | None = None, *, collaborators: Collaborators | None = None
    ) -> None:
        self.settings = settings
        self.identity = identity or RuntimeIdentity()
        self._lock = threading.Lock()
        self._collaborators = collaborators

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Self:
        return cls(configured.load(env))

    @property
    def collaborators(self) -> Collaborators:
        """Built on first use, once, under a lock (a build that raises is tried again by the next use)."""
        built = self._collaborators
        if built is not None:
            return built
        with self._lock:
            if self._collaborators is None:
                self._collaborators = Collaborators.build(self.settings, self.identity)
            return self._collaborators

    @property
    def hyperfleet(self) -> HyperFleetClient:
        return self.collaborators.hyperfleet

    @property
    def store(self) -> SecretStore:
        return self.collaborators.store

    @property
    def secret_manager(self) -> Any:
        return self.collaborators.secret_manager

    @property
    def delivery(self) -> Delivery:
        return self.collaborators.delivery

    @property
    def source(self) -> Source:
        return self.collaborators.source

    @property
    def registries(self) -> RegistryVerifier:
        return self.collaborators.registries

    @property
    def pool(self) -> ThreadPoolExecutor:
        return self.collaborators.pool

    @property
    def created_by(self) -> str:
        return self.collaborators.created_by

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run on the shared pool with this event's log context (labels, trace, redaction)."""
        context = contextvars.copy_context()
        return self.pool.submit(context.run, fn, *args)


def settle(futures: list[Future[Any]], deadline: Deadline) -> None:
    """Cancel work not started yet and wait for work already running, bounded by the deadline.

    No work outlives its event: Cloud Run gives an instance no CPU after the response, so a call left
    running would stall half-way and land (or not) during some later request.
    """
    for future in futures:
        future.cancel()
    wait(futures, timeout=deadline.remaining() + 1.0)
