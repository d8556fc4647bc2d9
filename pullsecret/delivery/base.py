"""The delivery seam: how the stored pull secret reaches its management cluster (KUBERNETES_DELIVERY).

A delivery mode is one package implementing `Delivery` (its `registration` module's REGISTRATION: its value, its
words, its settings record, what it declares, its factory) and one line in pullsecret.delivery.modes.MODES. The
reconcile (pullsecret.reconcile.entry) knows nothing else of it, and calls it in this order:

- `probe(where, deadline)`, beside the other reads and before any write: the live state as a `Probed`, which
  holds what the mode needs to write there;
- `Probed.apply(desired, deadline)`, after the Secret Manager write: make the cluster hold `desired` (the
  stored content, a neutral `Desired` each mode renders its own way); it logs its own step and answers what it
  did as a neutral `Delivered`;
- `Probed.dry_run(desired, store_writes=)`, for `reconcile --dry-run` instead of `apply`: what it would do, in
  words, writing nothing;
- `status_data(where, applied, stored_written=)`: what the mode adds to the status `data`;
- `after_transient(placement, error)`, after a transient failure of a provisioning or a deletion: drop what
  the failure shows may be stale (a cached client; the redelivery rebuilds it);
- `cleanup(leaving, deadline)`, on deletion and before the Secret Manager secret is deleted: what it removed, as
  a `Cleaned` (the status `data`, and the words the Finalized message says it with).

The operator tools ask it too: `inspect` (what `python -m pullsecret inspect` shows of the delivered Secret),
`doctor_checks` (the doctor checks the mode needs, pullsecret.doctor.run), and for `fleet`: `strays` (what
of ours it finds on a live cluster's delivery that should not be there), `left_behind` (what a gone cluster left
in this mode) and `fleet_notes` (what fleet cannot look for in this mode).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pullsecret.doctor.kit import DoctorCheck
from pullsecret.errors import TransientError
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.model.preconditions import Placement
from pullsecret.model.status import Declared
from pullsecret.model.status_data import OwnData
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings


@dataclass(frozen=True)
class Where:
    """Where one cluster's pull secret goes: its Secret Manager secret, its placement, its Kubernetes Secret's name."""

    cluster_id: str
    secret_name: str  # projects/P/secrets/ID
    placement: Placement
    kube_name: str


@dataclass(frozen=True)
class Leaving:
    """A deleted cluster's delivery, as far as it is known: no project, or no placement, leaves that side alone."""

    secret_name: str | None  # projects/P/secrets/ID, None when no GCP project is known
    placement: Placement | None
    kube_name: str


@dataclass(frozen=True)
class Desired:
    """What is to be delivered: the stored content, where, and what the delivered object records."""

    cluster_id: str
    cluster_name: str
    adapter: str  # ADAPTER_NAME: whose object it is
    namespace: str
    name: str
    content: bytes = field(repr=False)
    fingerprint: str
    generation: int
    source_version: str  # the Secret Manager version holding `content`
    created_by: str
    lineage: str | None = None  # encoded (model/lineage); None: keep what the delivered object records


@dataclass(frozen=True)
class Delivered:
    """What an apply did: whether it wrote, the revision the delivered object has now ("" when the mode has none),
    and whether it found a newer generation recorded there (stale: nothing written)."""

    written: bool
    revision: str
    stale: bool = False
    recorded_generation: int = 0


@dataclass(frozen=True)
class DryRun:
    """What an apply would do, in words for `reconcile --dry-run`: whether it would write, and a caveat."""

    writes: bool
    lines: list[str]
    unless: str = ""  # said after "status: would report unchanged" (what the dry run cannot see)


@dataclass(frozen=True)
class Wording:
    """A mode's words in its Applied and Available conditions. Available's (what a cluster's owner reads,
    docs/contract.md's table) for the platform's shared pull secret and for a cluster's own registry credentials
    (a source's `own_credentials`); Applied's (the operator's detail) for a change and for no change."""

    available_shared: str
    available_own: str
    applied_changed: str
    applied_unchanged: str

    def available(self, *, own_credentials: bool) -> str:
        return self.available_own if own_credentials else self.available_shared

    def applied(self, *, changed: bool) -> str:
        return self.applied_changed if changed else self.applied_unchanged


@dataclass(frozen=True)
class Cleaned:
    """What a deletion's cleanup did: its status `data`, and a phrase the Finalized message says it with."""

    data: OwnData  # a record of the mode's declared TypedDict
    said: str  # e.g. "Kubernetes Secret deleted"


@dataclass(frozen=True)
class Stray:
    """Something of ours the delivery finds where it should not be (a fleet orphan): its kind, where, why, and its
    fix (None: removed with the cluster's secret), which takes the deadline of the fix."""

    kind: str
    what: str
    why: str
    fix: Callable[[Deadline], str] | None = None


class Probed(Protocol):
    """The live state before writing, and the handle to write there (only the delivery that probed knows it)."""

    @property
    def present(self) -> bool:
        """A delivered object is there (False: absent, or not visible in this mode)."""

    @property
    def recorded_generation(self) -> int:
        """The cluster generation the delivered object records (0: none)."""

    @property
    def recorded_lineage(self) -> str | None:
        """The encoded lineage the delivered object records (None: none)."""

    def apply(self, desired: Desired, deadline: Deadline) -> Delivered:
        """Make the management cluster hold `desired`; raises TerminalError / TransientError."""

    def dry_run(self, desired: Desired, *, store_writes: bool) -> DryRun:
        """What `apply` would do (no call): `store_writes` when Secret Manager would get a new version."""


class Delivery(Protocol):
    """One KUBERNETES_DELIVERY mode; thread-safe (one per process, shared by every event)."""

    mode: str
    wording: Wording  # its status messages, any placeholder of its templates filled

    def probe(self, where: Where, deadline: Deadline) -> Probed: ...

    def status_data(self, where: Where, applied: Delivered, *, stored_written: bool) -> OwnData: ...

    def after_transient(self, placement: Placement, error: TransientError) -> None: ...

    def cleanup(self, leaving: Leaving, deadline: Deadline) -> Cleaned: ...

    def inspect(self, placement: Placement, kube_name: str, deadline: Deadline) -> dict[str, Any]: ...

    def doctor_checks(self) -> list[DoctorCheck]: ...

    def strays(self, where: Where, deadline: Deadline) -> list[Stray]: ...

    def left_behind(self, cluster_id: str, leaving: Leaving, deadline: Deadline) -> list[Stray]: ...

    def fleet_notes(self) -> list[str]: ...


@dataclass(frozen=True)
class Wiring:
    """What a mode's factory may build from: the settings, the runtime identity, the process's shared clients."""

    settings: Settings
    identity: RuntimeIdentity
    secret_manager: Any  # the process's SecretManagerServiceClient (clients.secret_manager_client): a mode narrows it


Factory = Callable[[Wiring], Delivery]
# (the environment, the KUBERNETES_DELIVERY value chosen) -> the mode's own settings record (a frozen dataclass whose
# fields all have defaults, read back with Settings.of); refuses its variables under another mode; raises ConfigError.
SettingsReader = Callable[[Mapping[str, str], str], object]


@dataclass(frozen=True)
class Registration:
    """A delivery mode as pullsecret.delivery.modes lists it (one shape with pullsecret.source.base.Registration):
    its KUBERNETES_DELIVERY value (`name`), its words (templates, for the docs' table), its own settings' reader,
    what it declares (status keys, failure reasons with the owner's words, the services it calls) and its factory.
    A mode's `registration` module defines one as REGISTRATION and imports nothing of its machinery: the factory
    imports it when the mode is built (so one mode's machinery stays out of another's cold start), and mypy checks
    that what it builds keeps the `Delivery` interface."""

    name: str
    wording: Wording
    build: Factory
    settings: SettingsReader | None = None
    declared: Declared = field(default_factory=Declared)
