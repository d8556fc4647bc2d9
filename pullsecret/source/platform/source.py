"""PULL_SECRET_SOURCE: one Secret Manager secret version shared by every cluster (the platform pull secret).

The bytes come through this source's own cache (pullsecret.source.platform.secret, a short TTL); a new version's
notification clears it and fans out one reconcile event per cluster (`notified`, pullsecret.source.platform.rotation),
and the bytes are parsed once per distinct content. Its part of `rekey` is that fan-out, driven from the operator's
process (pullsecret.source.platform.rekey).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from pullsecret.doctor.kit import DoctorCheck
from pullsecret.errors import ConfigError
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.logs import log, protect
from pullsecret.model import dockerconfig
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.model.events import SecretVersionAdded
from pullsecret.model.preconditions import Act
from pullsecret.model.status_data import OwnData
from pullsecret.publishing import Publisher
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.reads import Latest
from pullsecret.settings.common import Settings
from pullsecret.source.base import Notified, Source, Wiring
from pullsecret.source.platform import doctor, rotation
from pullsecret.source.platform.rekey import PlatformRekeying
from pullsecret.source.platform.secret import PlatformSecret
from pullsecret.source.platform.settings import NAME, PlatformSettings


@dataclass(frozen=True)
class PlatformFetch:
    """One event's platform pull secret: the cached bytes when the cache held them at the start, else a read."""

    source: PlatformSource
    cached: bytes | None = field(repr=False)

    @property
    def ready(self) -> bool:
        return self.cached is not None

    @property
    def wrote(self) -> bool:
        return False  # a shared secret: nothing is created for one cluster

    def pull_secret(
        self, act: Act, deadline: Deadline, *, create: bool = True, newest: Callable[[], Latest] | None = None
    ) -> PullSecret:
        del newest  # one secret for every cluster: nothing of a cluster's own to check against its stored version
        raw = self.cached
        if raw is None:
            with log.step("secretmanager.read_source"):
                raw = self.source.secret.read(self.source.version_name, deadline)
        try:
            platform = self.source.parsed(raw)
        except dockerconfig.InvalidPullSecret:
            protect(dockerconfig.sensitive_strings_of(raw))
            raise
        protect(platform.sensitive_strings())
        return platform

    def status_data(self) -> OwnData:
        return {}


class PlatformSource(Source):
    """The platform pull secret of PULL_SECRET_SOURCE, its cache, and its fan-out to every cluster."""

    name = NAME
    own_credentials = False  # one platform pull secret shared by every cluster

    def __init__(
        self, settings: Settings, store: SecretStore, secret: PlatformSecret, identity: RuntimeIdentity | None = None
    ) -> None:
        version = settings.of(PlatformSettings).version
        assert version is not None  # build: only when it is set
        self.settings = settings
        self.store = store  # the fan-out's progress record
        self.secret = secret
        self.version_name = version
        self.identity = identity
        self._parsed: tuple[bytes, PullSecret] | None = None
        self._publisher: Publisher | None = None
        self._lock = threading.Lock()

    def start(self, cluster_id: str, deadline: Deadline, *, first: bool = False) -> PlatformFetch:
        """No call: the cache's bytes, if it holds them (a first provisioning reads the same source)."""
        return PlatformFetch(self, self.secret.cached(self.version_name))

    def parsed(self, raw: bytes) -> PullSecret:
        """The platform pull secret, parsed once per distinct content (the bytes are cached for a TTL)."""
        parsed = self._parsed
        if parsed is None or parsed[0] != raw:
            parsed = (raw, dockerconfig.parse(raw, source="PULL_SECRET_SOURCE"))
            self._parsed = parsed  # one assignment: concurrent events see the old or the new pair
        return parsed[1]

    def revoke(self, cluster_id: str, deadline: Deadline) -> OwnData:
        """Shared by every cluster: nothing to remove for one."""
        return {}

    def doctor_checks(self) -> list[DoctorCheck]:
        return [DoctorCheck("pull-secret-source", lambda ctx: doctor.pull_secret_source(ctx, self.secret))]

    def notified(
        self, notification: SecretVersionAdded, *, hyperfleet: HyperFleetClient, deadline: Deadline
    ) -> Notified:
        """A new version of PULL_SECRET_SOURCE (or a fan-out's continuation): drop the cache, fan out one reconcile
        event per cluster (pullsecret.source.platform.rotation); raises TransientError (Held) to be redelivered."""
        result, published = self.fan_out(
            notification, hyperfleet=hyperfleet, publisher=self.publisher(), deadline=deadline
        )
        return Notified(result, published)

    def fan_out(
        self,
        notification: SecretVersionAdded,
        *,
        hyperfleet: HyperFleetClient,
        publisher: Publisher,
        deadline: Deadline,
    ) -> tuple[str, int]:
        """The rotation fan-out of `notification` (the function's or the operator's `rekey`): (result, published)."""
        return rotation.fan_out(
            self.settings,
            notification,
            hyperfleet=hyperfleet,
            store=self.store,
            secret=self.secret,
            publisher=publisher,
            deadline=deadline,
            state_project=self.state_project(),
        )

    def publisher(self) -> Publisher:
        """The Pub/Sub publisher of the fan-out, built on first use (no client at cold start), once."""
        with self._lock:
            if self._publisher is None:
                self._publisher = Publisher(self.identity.credentials if self.identity is not None else None)
            return self._publisher

    def state_project(self) -> str | None:
        """The runtime identity's project: the progress record's when SECRET_PROJECT_ID is unset."""
        return self.identity.project_id if self.identity is not None else None

    def rekeying(self) -> PlatformRekeying:
        return PlatformRekeying(self)


def build(wiring: Wiring) -> PlatformSource:
    """The platform source of PULL_SECRET_SOURCE (its cache over the store's Secret Manager client); raises
    ConfigError for a Settings built without it."""
    settings = wiring.settings
    own = settings.of(PlatformSettings)
    if not own.version:
        raise ConfigError("PULL_SECRET_SOURCE is required with the platform source")
    secret = PlatformSecret(wiring.store.calls, ttl_s=own.ttl_s)
    return PlatformSource(settings, wiring.store, secret, wiring.identity)
