"""PULL_SECRET_SOURCE: one Secret Manager secret version shared by every cluster (the platform pull secret).

The bytes come through the secret store's cache (SecretStore.cached_source / read_source, a short TTL; a new
version's notification clears it, pullsecret.source.platform.rotation), and are parsed once per distinct content.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pullsecret.logs import log, protect
from pullsecret.model import dockerconfig
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.model.preconditions import Act
from pullsecret.model.status_data import StatusData
from pullsecret.preflight import DoctorCheck
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.source.base import Registration, Wiring
from pullsecret.source.platform import checks

NAME = "platform"


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

    def pull_secret(self, act: Act, deadline: Deadline, *, create: bool = True) -> PullSecret:
        raw = self.cached
        if raw is None:
            with log.step("secretmanager.read_source"):
                raw = self.source.store.read_source(self.source.version_name, deadline)
        try:
            platform = self.source.parsed(raw)
        except dockerconfig.InvalidPullSecret:
            protect(dockerconfig.sensitive_strings_of(raw))
            raise
        protect(platform.sensitive_strings())
        return platform

    def status_data(self) -> StatusData:
        return {}


class PlatformSource:
    """The platform pull secret of PULL_SECRET_SOURCE."""

    name = NAME
    own_credentials = False  # one platform pull secret shared by every cluster

    def __init__(self, store: SecretStore, version_name: str) -> None:
        self.store = store
        self.version_name = version_name
        self._parsed: tuple[bytes, PullSecret] | None = None

    def start(self, cluster_id: str, deadline: Deadline, *, first: bool = False) -> PlatformFetch:
        """No call: the cache's bytes, if it holds them (a first provisioning reads the same source)."""
        return PlatformFetch(self, self.store.cached_source(self.version_name))

    def parsed(self, raw: bytes) -> PullSecret:
        """The platform pull secret, parsed once per distinct content (the bytes are cached for a TTL)."""
        parsed = self._parsed
        if parsed is None or parsed[0] != raw:
            parsed = (raw, dockerconfig.parse(raw, source="PULL_SECRET_SOURCE"))
            self._parsed = parsed  # one assignment: concurrent events see the old or the new pair
        return parsed[1]

    def revoke(self, cluster_id: str, deadline: Deadline) -> StatusData:
        """Shared by every cluster: nothing to remove for one."""
        return {}

    def doctor_checks(self) -> list[DoctorCheck]:
        return [DoctorCheck("pull-secret-source", checks.pull_secret_source)]


def build(wiring: Wiring) -> PlatformSource | None:
    """The platform source when PULL_SECRET_SOURCE is set."""
    name = wiring.settings.pull_secret_source
    return PlatformSource(wiring.store, name) if name else None


REGISTRATION = Registration(NAME, PlatformSource.own_credentials, build)
