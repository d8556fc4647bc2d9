"""Outcome → the AdapterStatusCreateRequest body (Applied, Available, Health, and Finalized on deletion).

Pure. Messages come from the adapter's own errors and names, never from payloads. What the real API
enforces or advises (contract.md §2, hyperfleet-api 2026) and how the reports follow it:
- `observed_time` is the moment the body is built (UTC, milliseconds), so it lies inside the server's window
  [now-30m, now+5m] and a later report of one process is never discarded as older than an earlier one.
- `Available` is never `Unknown` (the server keeps Unknown only on an adapter's first report).
- `Health` follows the adapter framework's standard condition (hyperfleet-adapter docs/adapter-authoring-guide.md,
  "The Health condition boilerplate"): `True`/`Healthy` only when the work ran and nothing was skipped;
  `False`/`ResourcesSkipped` when preconditions were not met (nothing written); `False`/`ExecutionFailed:<phase>`
  on any failure, terminal bad input included (HyperFleet ADR-0017 reports terminal errors as Health=False).
  `Finalized` reasons: `CleanupInProgress`, `CleanupConfirmed`, `AdapterUnhealthy` (a terminal failure during
  deletion: cleanup is blocked until someone acts); `NotDeleting` is not needed.
- `data` keys never contain a word the condition-mapping engine masks (`secret`, `token`, `auth`,
  `registrykey`, `credential`, `private`, `cert`, ...; hyperfleet-api pkg/util/mask_sensitive.go): `sm_*`
  names Secret Manager things, `kubernetes_*` Kubernetes ones; registry names appear as values, never as keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pullsecret.model.status_data import StatusData

MAX_MESSAGE = 1000
MAX_DETAIL = 300
# What a cluster's owner reads. hyperfleet-api 541f6b4 synthesises the cluster's `PullsecretSuccessful` condition
# from this adapter's Available status, reason and message (pkg/services/aggregation.go, pkg/util/naming.go;
# HYPERFLEET-538). So Available's message is short, says what to do, names no internal setting or resource and
# nothing secret, and says what this delivery mode did; Applied and Health keep the operator's detail.
# These are the reasons any deployment can report; each delivery mode and source declares its own (`Declared`), and
# `Words` holds them all (pullsecret.declared.WORDS). docs/contract.md "What a cluster's owner reads" holds the
# table (and each delivery mode's ready messages, its registration's wording); tests/unit/test_available_messages.py
# holds the code to it. `{detail}` (the owner's own input found wrong, or what is awaited) only where the owner can
# act.
AVAILABLE_MESSAGES = {
    "PreconditionsNotMet": "Waiting for the cluster's other setup steps: {detail}. No action needed yet.",
    "StaleGeneration": "Nothing to do: a newer version of this cluster's settings is already handled.",
    "ResourcesDeleted": "Pull secret removed: the cluster is being deleted.",
    "InvalidPullSecret": "The pull secret in this cluster's settings is invalid: {detail}. Correct it and save again.",
    "InvalidCluster": "This cluster's settings lack what the pull secret needs: {detail}. Correct them and save again.",
    "UnsupportedPlatform": "Not handled here: {detail}.",
    "InvalidPlacement": "The cluster's hosting location is not usable yet; the platform team must fix it.",
    "ClusterGone": "The cluster no longer exists.",
    "OwnershipConflict": (
        "A pull secret this service does not manage is in the way; the platform team must remove or adopt it."
    ),
    "PermissionDenied": "The platform lacks a permission to deliver the pull secret; the platform team must grant it.",
    "ForbiddenNamespace": "The cluster's hosting location is not one this service may write to; the platform team "
    "must fix it.",
    "ForbiddenManagementCluster": "The cluster is hosted where this service may not deliver; the platform team must "
    "fix it.",
    "ManagementClusterNotFound": "The cluster's hosting location was not found; the platform team must fix it.",
    "ManagementClusterNotReady": "The cluster's hosting location is not ready; it will be retried when it changes.",
    "ManagementClusterUnreachable": "The cluster's hosting location cannot be reached; the platform team must fix it.",
    "ForbiddenSecretProject": "This cluster's cloud project is not one the platform may store its pull secret in; "
    "correct the project in its settings or ask the platform team.",
    "ProjectNotFound": "The cluster's cloud project was not found; check it exists and is active.",
    "RegistryCredentialRejected": (
        "A registry refused the pull secret's credentials; the platform team must renew them."
    ),
    "RequestRejected": "A request to deliver the pull secret was refused; the platform team must fix it.",
    "UnexpectedError": "An unexpected error stopped the pull secret; the platform team must look into it.",
}
# Any other reason (a failure the code maps at run time, e.g. from a service's error code).
AVAILABLE_OTHER = "The pull secret could not be set up ({reason}); the platform team must look into it."

HEALTHY = "Healthy"
RESOURCES_SKIPPED = "ResourcesSkipped"
# The framework pairs a skipped run with Health=False; the words say it is a wait, not a failure.
WAITING = " (waiting, nothing failed: the work runs on the first event after that)"
# Where a runtime failure happened, as the adapter framework names its phases (`ExecutionFailed:<phase>`).
PHASE_PRECONDITIONS = "preconditions"  # reading and judging the cluster (HyperFleet API)
PHASE_RESOURCES = "resources"  # Secret Manager, and each implementation's services (`Declared.services`)
PHASE_UNKNOWN = "unknown"  # the framework's own word when the phase is not known
PHASE_REGISTRY = "registry"  # REGISTRY_VERIFICATION: a registry refused the pull secret's credential
# The services every deployment calls whose failures are the resources phase; each implementation adds its own.
RESOURCE_SERVICES = frozenset({"secretmanager", "metadata"})


@dataclass(frozen=True)
class Declared:
    """What one registered delivery mode or source reports, declared by its registration so that the model names no
    implementation: its own status `data` keys (`keys`: a TypedDict of its own, total=False, which its writers
    build, so mypy checks each key), its failure reasons with what a cluster's owner reads for each (Available's
    message), and the services its errors name (their failures are the framework's `resources` phase)."""

    keys: Callable[..., Mapping[str, object]] | None = None
    reasons: Mapping[str, str] = field(default_factory=dict)
    services: tuple[str, ...] = ()


@dataclass(frozen=True)
class Words:
    """What a cluster's owner reads for each failure reason, and which services' failures are the `resources`
    phase: the common ones (AVAILABLE_MESSAGES, RESOURCE_SERVICES) and every registered implementation's
    (`assembled`; the function's own: pullsecret.declared.WORDS)."""

    messages: Mapping[str, str]
    resources: frozenset[str]

    @classmethod
    def assembled(cls, declared: tuple[Declared, ...], *, services: tuple[str, ...] = ()) -> Words:
        """The common words with each declaration's; raises ValueError when two give one reason different words."""
        messages = dict(AVAILABLE_MESSAGES)
        for one in declared:
            for reason, message in one.reasons.items():
                if messages.setdefault(reason, message) != message:
                    raise ValueError(f"the reason {reason} is declared with two messages")
        found = {service for one in declared for service in one.services}
        return cls(messages, RESOURCE_SERVICES | found | set(services))

    def available_message(self, reason: str, detail: str = "") -> str:
        """The owner's Available message for a reason that is not PullSecretAvailable (docs/contract.md table)."""
        template = self.messages.get(reason, AVAILABLE_OTHER)
        short = " ".join(detail.split())[:MAX_DETAIL].rstrip(" .")
        return template.format(detail=short, reason=reason)

    def shows_detail(self, reason: str) -> bool:
        """Whether the owner's message carries the detail (their own input, or what is awaited)."""
        return "{detail}" in self.messages.get(reason, AVAILABLE_OTHER)

    def phase_of(self, service: str | None) -> str:
        """The framework phase a failing service belongs to."""
        if service == "hyperfleet":
            return PHASE_PRECONDITIONS
        if service in self.resources:
            return PHASE_RESOURCES
        if service == "registry":
            return PHASE_REGISTRY
        return PHASE_UNKNOWN


COMMON = Words(AVAILABLE_MESSAGES, RESOURCE_SERVICES)  # the reasons every deployment has (no implementation's)


def execution_failed(phase: str) -> str:
    """The Health reason of a runtime failure in `phase`."""
    return f"ExecutionFailed:{phase}"


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message[:MAX_MESSAGE],
        }


@dataclass(frozen=True)
class Report:
    """What one evaluation found, ready to be sent as the adapter's status."""

    generation: int
    conditions: tuple[Condition, ...]
    data: StatusData = field(default_factory=StatusData)

    def body(self, adapter: str, now: datetime | None = None) -> dict[str, Any]:
        # now(UTC) or a naive now(): the same instant once converted (mutation testing's one equivalent mutant here).
        observed = (now or datetime.now(UTC)).astimezone(UTC)
        return {
            "adapter": adapter,
            "observed_generation": self.generation,
            "observed_time": observed.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "conditions": [c.to_json() for c in self.conditions],
            "data": self.data,
        }

    @property
    def available(self) -> bool:
        return any(c.type == "Available" and c.status == "True" for c in self.conditions)


def provisioned(generation: int, *, applied: str, available: str, data: StatusData) -> Report:
    """Applied and Available True, with the delivery mode's words (its `Wording`) for this source and change."""
    return Report(
        generation,
        (
            Condition("Applied", "True", "SecretsApplied", applied),
            Condition("Available", "True", "PullSecretAvailable", available),
            Condition("Health", "True", HEALTHY, "all operations completed"),
        ),
        data,
    )


def preconditions_not_met(generation: int, message: str) -> Report:
    return Report(
        generation,
        (
            Condition("Applied", "False", "PreconditionsNotMet", message),
            Condition(
                "Available", "False", "PreconditionsNotMet", COMMON.available_message("PreconditionsNotMet", message)
            ),
            Condition("Health", "False", RESOURCES_SKIPPED, f"Resources skipped: {message}{WAITING}"),
        ),
    )


def stale(generation: int, recorded: int, data: StatusData) -> Report:
    message = f"generation {generation} is older than generation {recorded} already applied; nothing changed"
    return Report(
        generation,
        (
            Condition("Applied", "False", "StaleGeneration", message),
            Condition("Available", "False", "StaleGeneration", COMMON.available_message("StaleGeneration")),
            Condition("Health", "False", RESOURCES_SKIPPED, f"Resources skipped: {message} (out-of-order delivery)"),
        ),
        data,
    )


def terminal_failure(
    generation: int,
    reason: str,
    message: str,
    data: StatusData | None = None,
    *,
    words: Words,
    phase: str = PHASE_UNKNOWN,
    deleting: bool = False,
) -> Report:
    """A failure no retry fixes: not applied, not available, Health False (`ExecutionFailed:<phase>`), the
    reason itself on Applied and Available (with what `words` says an owner reads for it). Bad input is a failure
    too: the framework and ADR-0017 report every terminal error as Health=False, so a dashboard counting unhealthy
    adapters sees what needs a person.

    `deleting`: the cluster is soft-deleted, so the API waits for `Finalized=True` before it hard-deletes;
    the report says `Finalized=False` (`AdapterUnhealthy`) and what blocks the cleanup, rather than nothing.
    """
    conditions: tuple[Condition, ...] = (
        Condition("Applied", "False", reason, message),
        Condition("Available", "False", reason, words.available_message(reason, message)),
        Condition(
            "Health", "False", execution_failed(phase), f"Adapter failed at phase [{phase}]: {reason}: {message}"
        ),
    )
    if deleting:
        blocked = Condition("Finalized", "False", "AdapterUnhealthy", f"cleanup blocked ({reason}): {message}")
        conditions = (*conditions, blocked)
    return Report(generation, conditions, data or StatusData())


def finalized(generation: int, message: str, data: StatusData, *, unhealthy: str | None = None) -> Report:
    """The cleanup is confirmed. `unhealthy`: what it left alone on purpose (a cluster project the function may
    not use): Health turns False (`ExecutionFailed:preconditions`) with it, so a person looks; Finalized stays True."""
    health = (
        Condition("Health", "True", HEALTHY, "cleanup completed")
        if unhealthy is None
        else Condition("Health", "False", execution_failed(PHASE_PRECONDITIONS), unhealthy)
    )
    return Report(
        generation,
        (
            Condition("Applied", "False", "ResourcesDeleted", message),
            Condition("Available", "False", "ResourcesDeleted", COMMON.available_message("ResourcesDeleted")),
            health,
            Condition("Finalized", "True", "CleanupConfirmed", message),
        ),
        data,
    )


def registry_rejected(report: Report, registries: list[str]) -> Report:
    """The pull secret was applied, but registries refused their credential (report mode, or a platform entry
    in enforce mode).

    Health turns False (the HyperFleet reason vocabulary's ExecutionFailed:<phase>); Available is untouched.
    """
    names = ", ".join(registries[:10]) + (f" and {len(registries) - 10} more" if len(registries) > 10 else "")
    health = Condition(
        "Health",
        "False",
        execution_failed(PHASE_REGISTRY),
        f"the registry refused the pull secret's credential for {names}; the pull secret was applied anyway "
        "(only the cluster's own entries stop a write, in REGISTRY_VERIFICATION=enforce); see data.registry_checks",
    )
    return replace(report, conditions=tuple(health if c.type == "Health" else c for c in report.conditions))
