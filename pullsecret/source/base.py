"""The pull-secret source seam: where the platform's part of a cluster's pull secret comes from.

A source is one package implementing `Source` (its `registration` module's REGISTRATION: its name, the variable
that selects it, its settings record, what it declares, its factory) and one line in
pullsecret.source.sources.SOURCES. The reconcile calls it in this
order, and knows nothing else of it:

- `start(cluster_id, deadline, first=...)` at the read step, before the other reads are waited for: no call is
  needed to start; a source that must ask a service may start its call here (on the shared pool) and answer
  `ready=False`. `first` says our status records no stored version (pullsecret.model.status_data.first_provisioning):
  a source may ask for what a first provisioning needs at once (the service's generate-or-retrieve);
- `Fetch.pull_secret(act, deadline, create=True, newest=...)`: the source's pull secret for the cluster (None: it
  has none; `newest` waits for the reconcile's own read of the cluster's newest stored version, for a source that
  checks what it keeps against it without reading it again),
  its strings registered for redaction (logs.protect) before anything can print them; reconcile/merge.py merges it
  with the cluster's own `spec.pullSecret`; `create=False` (`reconcile --dry-run`) reads only, and raises
  `WouldCreate` where the reconcile would create something at the source (nothing started with `first` creates
  either: a dry run never asks for the first provisioning's generate-or-retrieve);
- `Fetch.status_data()`: what the source adds to the status `data` of a provisioned cluster;
- `Fetch.wrote`: whether `pull_secret` created something at the source (then the reconcile reads the cluster
  again before answering, L1 of pullsecret.reconcile.finalize);
- `revoke(cluster_id, deadline)` on deletion, last (after the delivery's cleanup and the Secret Manager secret):
  the status `data` of what it removed (nothing for a shared platform secret);
- `doctor_checks()`: what the doctor checks for this source, writing nothing.

Outside the reconcile, two parts are optional (the base `Source` has a default; a source subclassing it inherits it):

- `notified(notification, hyperfleet=, deadline=)`: a Secret Manager notification (a new secret version, or a
  fan-out's continuation) for the source to act on; the handler logs the `Notified` it answers. Default: a secret
  this source does not follow (`ignored`);
- `rekeying()`: its part of the operator's `rekey` and of `fleet`'s CREDS column (`Rekeying`). Default
  (`SharedKeys`): no credential of a cluster's own to rotate or compare;
- `forget(cluster_id, rekeyed=)`: the handler's word that the cluster's next read must ask the source (the event
  failed, or `rekey` published it: pullsecret.publishing.REKEY_ATTRIBUTE). Default: nothing kept, nothing to forget.

`Fetch.ready` is True when `pull_secret` makes no call (the steady state of a cached platform secret): the
reconcile then reads the newest Secret Manager version on its own thread instead of handing it to the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from pullsecret.doctor.kit import DoctorCheck
from pullsecret.hyperfleet.client import HyperFleetClient
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.logs import log
from pullsecret.model.dockerconfig import PullSecret
from pullsecret.model.events import SecretVersionAdded
from pullsecret.model.preconditions import Act
from pullsecret.model.status import Declared
from pullsecret.model.status_data import OwnData
from pullsecret.publishing import Publisher
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.secretstore.reads import Latest
from pullsecret.settings.common import Settings

Out = Callable[[str], None]  # where the operator's lines go


class Fetch(Protocol):
    """One event's use of the source."""

    @property
    def ready(self) -> bool:
        """True when `pull_secret` makes no call."""

    @property
    def wrote(self) -> bool:
        """True when `pull_secret` created something at the source (L1 of pullsecret.reconcile.finalize)."""

    def pull_secret(
        self, act: Act, deadline: Deadline, *, create: bool = True, newest: Callable[[], Latest] | None = None
    ) -> PullSecret | None:
        """`create=False` (a dry run): read only; raises WouldCreate when the source would create it. `newest`:
        the reconcile's read of the cluster's newest stored version (None: the source reads it if it must)."""

    def status_data(self) -> OwnData: ...


class WouldCreate(Exception):
    """A dry run's read found nothing at the source, which the reconcile would create (the service's POST)."""


@dataclass(frozen=True)
class Notified:
    """What a source did with a notification: `result` (rotated, continued, done, superseded, refused, ignored) as
    the event's outcome and its `rotation` line say it, and how many reconcile events it published."""

    result: str
    published: int = 0


@dataclass(frozen=True)
class Held:
    """One cluster's credentials against its source's current ones (`fleet`'s CREDS, `rekey --watch`): `state` is
    current, behind, none, ? (the source did not say) or - (no credential of the cluster's own)."""

    state: str
    why: str = ""
    created_at: str | None = None  # the newest current credential's creation time, as the source says it
    retry_after_s: float | None = None  # the service refused for its rate limit (429): how long it asks to wait


@dataclass(frozen=True)
class RateLimits:
    """What a source's service allows one caller identity (the Pull Secret Service's DDR §3.5 by default: 100
    requests a minute on every endpoint, 10 an hour on `/rotations`); `rekey --service-limits` says otherwise."""

    per_minute: float = 100.0
    rotations_per_hour: float = 10.0


DDR_LIMITS = RateLimits()  # the Pull Secret Service's DDR §3.5, per ServiceAccount


@dataclass(frozen=True)
class Budget:
    """One limit a rekey run keeps: what it is, whose budget it spends, the requests a cluster costs it, and the
    requests a second the run may spend of it (its share, less what the fleet's steady state spends)."""

    limit: str
    whose: str
    per_cluster: float
    per_second: float

    @property
    def clusters_per_second(self) -> float:
        return max(self.per_second, 0.0) / self.per_cluster


@dataclass(frozen=True)
class Rekeyed:
    """One cluster's rekey at its source: `counted` is "rotated" or "current"; None when it failed, with `why`."""

    counted: str | None
    why: str = ""


class Rekeying(Protocol):
    """A source's part of `python -m pullsecret rekey` (pullsecret.operator.rekey) and of `fleet`'s CREDS column.

    The command keeps what every source shares: its record, its pace, its progress lines, the reconcile events it
    publishes on ADAPTER_TOPIC, and following the clusters (`held`) with `--watch`.
    """

    def refusal(self, *, created_before: bool, compromise: bool) -> str | None:
        """Why a rekey asking --created-before / --compromise cannot run with this source (a usage error), or None."""

    def rotate(self, cluster_id: str, *, cutoff: float, compromise: bool, check: bool = True) -> Rekeyed:
        """Rotate the cluster's credentials at the source when they were created before `cutoff` (unix seconds);
        `check=False`: they are known to be (a compromise run's cluster it has not handled yet), no read first.
        Raises TransientError when the source is unavailable (the run stops, and resumes when asked again)."""

    def budgets(self, *, compromise: bool, clusters: int, own_identity: bool, limits: RateLimits) -> list[Budget]:
        """The source's service limits a rekey of `clusters` spends (none: only Secret Manager's write quota)."""

    def preview(self, cluster_id: str, *, cutoff: float, compromise: bool) -> str:
        """The dry run's words for the cluster (nothing rotated, nothing published)."""

    def whole_fleet(
        self,
        hyperfleet: HyperFleetClient,
        publisher: Publisher,
        *,
        out: Out,
        sleep: Callable[[float], None],
        watch_s: float | None,
    ) -> int | None:
        """Rekey every cluster the source's own way, then follow it for `watch_s` seconds when given: the exit
        code (0 done, 1 not done, 3 try again); None when it has no way of its own (the command then goes
        cluster by cluster, with its record)."""

    def held(self, cluster_id: str, ours: dict[str, Any]) -> Held:
        """The cluster's credentials, as our status `ours` records them, against the source's current ones; never
        raises for the source."""


class SharedKeys:
    """The default `Rekeying`: no credential of a cluster's own to rotate or compare; a rekey publishes each
    selected cluster's reconcile event and nothing more."""

    def __init__(self, name: str) -> None:
        self.name = name

    def refusal(self, *, created_before: bool, compromise: bool) -> str | None:
        asked = "--created-before" if created_before else "--compromise" if compromise else None
        if asked is None:
            return None
        return f"{asked} needs a source that holds each cluster's own credentials; the {self.name} source does not"

    def rotate(self, cluster_id: str, *, cutoff: float, compromise: bool, check: bool = True) -> Rekeyed:
        return Rekeyed("current")

    def budgets(self, *, compromise: bool, clusters: int, own_identity: bool, limits: RateLimits) -> list[Budget]:
        return []

    def preview(self, cluster_id: str, *, cutoff: float, compromise: bool) -> str:
        return "reconcile event"

    def whole_fleet(
        self,
        hyperfleet: HyperFleetClient,
        publisher: Publisher,
        *,
        out: Out,
        sleep: Callable[[float], None],
        watch_s: float | None,
    ) -> int | None:
        return None

    def held(self, cluster_id: str, ours: dict[str, Any]) -> Held:
        return Held("-", f"the {self.name} source holds no credential of the cluster's own")


class Source(Protocol):
    """One pull-secret source; thread-safe (one per process, shared by every event)."""

    name: str
    own_credentials: bool  # its pull secret holds the cluster's own registry credentials (not one shared by all)

    def start(self, cluster_id: str, deadline: Deadline, *, first: bool = False) -> Fetch: ...

    def revoke(self, cluster_id: str, deadline: Deadline) -> OwnData: ...

    def doctor_checks(self) -> list[DoctorCheck]:
        """The doctor checks this source needs (pullsecret.doctor.run), reading only."""

    def notified(
        self, notification: SecretVersionAdded, *, hyperfleet: HyperFleetClient, deadline: Deadline
    ) -> Notified:
        """A Secret Manager notification for the source to act on; raises TransientError to have it redelivered.
        Default: no secret this source follows (acknowledged, `ignored`)."""
        log.info(
            f"version added to {notification.secret[:200]}: the {self.name} source follows no Secret Manager secret; "
            "nothing to do",
            operation="rotation",
        )
        return Notified("ignored")

    def rekeying(self) -> Rekeying:
        """Its part of `rekey` and of `fleet`'s CREDS. Default: no credential of a cluster's own (`SharedKeys`)."""
        return SharedKeys(self.name)

    def forget(self, cluster_id: str, *, rekeyed: bool = False) -> None:
        """What the source keeps of the cluster is not to be used again (`rekeyed`: `rekey` re-keyed it). Default:
        nothing kept."""
        return None


@dataclass(frozen=True)
class Wiring:
    """What a source's factory may build from: the settings, the secret store, the shared pool, the runtime identity."""

    settings: Settings
    store: SecretStore
    pool: ThreadPoolExecutor
    identity: RuntimeIdentity | None = None  # a ServiceAccount token is minted with its GKE access


Factory = Callable[[Wiring], Source]
# (the environment, the selected source's name) -> the source's own settings record (a frozen dataclass whose fields
# all have defaults, read back with Settings.of); refuses its variables under another source; raises ConfigError.
SettingsReader = Callable[[Mapping[str, str], str], object]


@dataclass(frozen=True)
class Registration:
    """A source as pullsecret.source.sources lists it (one shape with pullsecret.delivery.base.Registration): its
    name, the variable whose presence selects it (`selected_by`, with what it names for the error that none or two
    are selected), whether its pull secret holds a cluster's own registry credentials (the delivery's words
    differ), its own settings' reader, what it declares (status keys, failure reasons with the owner's words, the
    services it calls) and its factory, which imports its machinery when it is built (mypy checks what it builds)."""

    name: str
    selected_by: str
    names: str  # what `selected_by` names, e.g. "the platform pull secret in Secret Manager"
    own_credentials: bool
    build: Factory
    settings: SettingsReader | None = None
    declared: Declared = field(default_factory=Declared)
