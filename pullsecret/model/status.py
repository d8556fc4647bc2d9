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

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

MAX_MESSAGE = 1000
HEALTHY = "Healthy"
RESOURCES_SKIPPED = "ResourcesSkipped"
# Where a runtime failure happened, as the adapter framework names its phases (`ExecutionFailed:<phase>`).
PHASE_PRECONDITIONS = "preconditions"  # reading and judging the cluster (HyperFleet API)
PHASE_RESOURCES = "resources"  # Secret Manager, GKE, the Kubernetes Secret
PHASE_UNKNOWN = "unknown"  # the framework's own word when the phase is not known
PHASE_REGISTRY = "registry"  # REGISTRY_VERIFICATION: a registry refused the pull secret's credential


def execution_failed(phase: str) -> str:
    """The Health reason of a runtime failure in `phase`."""
    return f"ExecutionFailed:{phase}"


def phase_of(service: str | None) -> str:
    """The framework phase a failing service belongs to."""
    if service == "hyperfleet":
        return PHASE_PRECONDITIONS
    if service in ("secretmanager", "gke", "kubernetes", "metadata", "pullsecretservice"):
        return PHASE_RESOURCES
    if service == "registry":
        return PHASE_REGISTRY
    return PHASE_UNKNOWN


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
    data: dict[str, Any] = field(default_factory=dict)

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


def provisioned(generation: int, *, changed: bool, data: dict[str, Any]) -> Report:
    applied_msg = (
        "pull secret stored in Secret Manager and applied to the management cluster"
        if changed
        else "pull secret already up to date in Secret Manager and on the management cluster"
    )
    return Report(
        generation,
        (
            Condition("Applied", "True", "SecretsApplied", applied_msg),
            Condition(
                "Available",
                "True",
                "PullSecretAvailable",
                f"Secret Manager version {data.get('sm_version', '?')} verified; Kubernetes Secret "
                f"{data.get('kubernetes_namespace', '?')}/{data.get('kubernetes_name', '?')} matches it",
            ),
            Condition("Health", "True", HEALTHY, "all operations completed"),
        ),
        data,
    )


def preconditions_not_met(generation: int, message: str) -> Report:
    return Report(
        generation,
        (
            Condition("Applied", "False", "PreconditionsNotMet", message),
            Condition("Available", "False", "PreconditionsNotMet", message),
            Condition("Health", "False", RESOURCES_SKIPPED, f"Resources skipped: {message}"),
        ),
    )


def stale(generation: int, recorded: int, data: dict[str, Any]) -> Report:
    message = f"generation {generation} is older than generation {recorded} already applied; nothing changed"
    return Report(
        generation,
        (
            Condition("Applied", "False", "StaleGeneration", message),
            Condition("Available", "False", "StaleGeneration", message),
            Condition("Health", "False", RESOURCES_SKIPPED, f"Resources skipped: {message} (out-of-order delivery)"),
        ),
        data,
    )


def terminal_failure(
    generation: int,
    reason: str,
    message: str,
    data: dict[str, Any] | None = None,
    *,
    phase: str = PHASE_UNKNOWN,
    deleting: bool = False,
) -> Report:
    """A failure no retry fixes: not applied, not available, Health False (`ExecutionFailed:<phase>`), the
    reason itself on Applied and Available. Bad input is a failure too: the framework and ADR-0017 report every
    terminal error as Health=False, so a dashboard counting unhealthy adapters sees what needs a person.

    `deleting`: the cluster is soft-deleted, so the API waits for `Finalized=True` before it hard-deletes;
    the report says `Finalized=False` (`AdapterUnhealthy`) and what blocks the cleanup, rather than nothing.
    """
    conditions: tuple[Condition, ...] = (
        Condition("Applied", "False", reason, message),
        Condition("Available", "False", reason, message),
        Condition(
            "Health", "False", execution_failed(phase), f"Adapter failed at phase [{phase}]: {reason}: {message}"
        ),
    )
    if deleting:
        blocked = Condition("Finalized", "False", "AdapterUnhealthy", f"cleanup blocked ({reason}): {message}")
        conditions = (*conditions, blocked)
    return Report(generation, conditions, data or {})


def finalized(generation: int, message: str, data: dict[str, Any], *, unhealthy: str | None = None) -> Report:
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
            Condition("Available", "False", "ResourcesDeleted", message),
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
