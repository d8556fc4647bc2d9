"""The pull-secret source seam: where the platform's part of a cluster's pull secret comes from.

A source is one package implementing `Source` (and a factory answering None when its configuration is absent,
registered as its REGISTRATION) and one line in pullsecret.source.sources.SOURCES. The reconcile calls it in this
order, and knows nothing else of it:

- `start(cluster_id, deadline, first=...)` at the read step, before the other reads are waited for: no call is
  needed to start; a source that must ask a service may start its call here (on the shared pool) and answer
  `ready=False`. `first` says our status records no stored version (pullsecret.model.status_data.first_provisioning):
  a source may ask for what a first provisioning needs at once (the service's generate-or-retrieve);
- `Fetch.pull_secret(act, deadline, create=True)`: the source's pull secret for the cluster (None: it has none),
  its strings registered for redaction (logs.protect) before anything can print them; pullsecret.merge merges it
  with the cluster's own `spec.pullSecret`; `create=False` (`reconcile --dry-run`) reads only, and raises
  `WouldCreate` where the reconcile would create something at the source (nothing started with `first` creates
  either: a dry run never asks for the first provisioning's generate-or-retrieve);
- `Fetch.status_data()`: what the source adds to the status `data` of a provisioned cluster;
- `Fetch.wrote`: whether `pull_secret` created something at the source (then the reconcile reads the cluster
  again before answering, L1 of pullsecret.finalize);
- `revoke(cluster_id, deadline)` on deletion, last (after the delivery's cleanup and the Secret Manager secret):
  the status `data` of what it removed (nothing for a shared platform secret);
- `doctor_checks()`: what the preflight checks for this source, writing nothing.

`Fetch.ready` is True when `pull_secret` makes no call (the steady state of a cached platform secret): the
reconcile then reads the newest Secret Manager version on its own thread instead of handing it to the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from pullsecret.clients import RuntimeIdentity
from pullsecret.config import Settings
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.model.preconditions import Act
from pullsecret.model.status_data import StatusData
from pullsecret.preflight import DoctorCheck
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore


class Fetch(Protocol):
    """One event's use of the source."""

    @property
    def ready(self) -> bool:
        """True when `pull_secret` makes no call."""

    @property
    def wrote(self) -> bool:
        """True when `pull_secret` created something at the source (L1 of pullsecret.finalize)."""

    def pull_secret(self, act: Act, deadline: Deadline, *, create: bool = True) -> PullSecret | None:
        """`create=False` (a dry run): read only; raises WouldCreate when the source would create it."""

    def status_data(self) -> StatusData: ...


class WouldCreate(Exception):
    """A dry run's read found nothing at the source, which the reconcile would create (the service's POST)."""


class Source(Protocol):
    """One pull-secret source; thread-safe (one per process, shared by every event)."""

    name: str
    own_credentials: bool  # its pull secret holds the cluster's own registry credentials (not one shared by all)

    def start(self, cluster_id: str, deadline: Deadline, *, first: bool = False) -> Fetch: ...

    def revoke(self, cluster_id: str, deadline: Deadline) -> StatusData: ...

    def doctor_checks(self) -> list[DoctorCheck]:
        """The preflight checks this source needs (pullsecret.operator.doctor), reading only."""


@dataclass(frozen=True)
class Wiring:
    """What a source's factory may build from: the settings, the secret store, the shared pool, the runtime identity."""

    settings: Settings
    store: SecretStore
    pool: ThreadPoolExecutor
    identity: RuntimeIdentity | None = None  # a ServiceAccount token is minted with its GKE access


Factory = Callable[[Wiring], Source | None]  # None: this source is not configured
SettingsReader = Callable[[Mapping[str, str]], dict[str, Any]]  # Settings fields by name; raises ConfigError


@dataclass(frozen=True)
class Registration:
    """A source as pullsecret.source.sources lists it: its name, whether its pull secret holds a cluster's own
    registry credentials (the delivery's words differ), and its factory (mypy checks what it builds)."""

    name: str
    own_credentials: bool
    build: Factory
    settings: SettingsReader | None = None  # its own settings, checked at cold start (pullsecret.configured)
