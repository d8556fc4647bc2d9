"""The doctor's kit: a check's verdict (`Line`), a check (`DoctorCheck`) and what checks share (`Context`).

Deliveries and sources name their own checks with these types (pullsecret.doctor.run runs them), so the
runtime never imports the operator tools. A Line never carries a credential: its texts are built from resource
names, permission names and rules (as pullsecret.errors' messages are), never from payloads or answers' bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as gexc

from pullsecret.model import dockerconfig
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings

if TYPE_CHECKING:
    from pullsecret.hyperfleet.client import HyperFleetClient
    from pullsecret.registry.verification import RegistryVerifier

MANAGED_ROLE = "hyperfleetPullSecretManager"
RESOURCE_MANAGER = "https://cloudresourcemanager.googleapis.com"
PROBE_CLUSTER = "doctor-probe"  # a cluster id no secret is made for: its names only ask IAM


@dataclass(frozen=True)
class Line:
    """One check's verdict: ok True (proven), False (refused: `fix` says what to do), None (nothing to check)."""

    check: str
    ok: bool | None
    text: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorCheck:
    """One doctor check a delivery or a source needs: its name (the line's when it fails unexpectedly) and how to
    run it."""

    name: str
    run: Callable[[Context], list[Line]]


@dataclass
class Context:
    """What the checks share: the configuration, the runtime identity's clients, what earlier checks learned."""

    settings: Settings
    runtime: str  # the runtime service account's e-mail (or a description when unknown)
    hyperfleet: HyperFleetClient
    secrets: Any  # SecretManagerServiceClient (TestIamPermissions, GetSecret)
    registries: RegistryVerifier
    extra_clusters: tuple[str, ...] = ()
    token: Callable[[], str] | None = None  # the runtime identity's access token (projects.testIamPermissions)
    resource_manager: str = RESOURCE_MANAGER
    cluster_projects: dict[str, str | None] = field(default_factory=dict)  # listed cluster id -> its GCP project
    source: dockerconfig.PullSecret | None = None

    def deadline(self) -> Deadline:
        return Deadline(min(self.settings.retry_deadline_s, 20.0))

    @property
    def member(self) -> str:
        return f"serviceAccount:{self.runtime}"


def code_of(exc: gexc.GoogleAPICallError) -> str:
    code = getattr(exc, "grpc_status_code", None)
    return str(getattr(code, "name", None) or type(exc).__name__)


def retry_fix() -> str:
    return "Secret Manager did not answer: try again"


def guarded(check: Callable[[Context], list[Line]], ctx: Context, name: str) -> list[Line]:
    """A check's lines; an unexpected exception is one failed line naming its type (never its text)."""
    try:
        return check(ctx)
    except Exception as exc:  # noqa: BLE001 - the doctor reports, it does not crash
        return [Line(name, False, f"the check failed unexpectedly ({type(exc).__name__})", "try again; report it")]
