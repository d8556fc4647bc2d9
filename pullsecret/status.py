"""Outcome → the AdapterStatusCreateRequest body (Applied, Available, Health, and Finalized on deletion).

Pure. Messages come from the adapter's own errors and names, never from payloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

MAX_MESSAGE = 1000


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
                f"Secret Manager version {data.get('secret_version', '?')} verified; Kubernetes Secret "
                f"{data.get('kubernetes_namespace', '?')}/{data.get('kubernetes_secret', '?')} matches it",
            ),
            Condition("Health", "True", "Healthy", "all operations completed"),
        ),
        data,
    )


def preconditions_not_met(generation: int, message: str) -> Report:
    return Report(
        generation,
        (
            Condition("Applied", "False", "PreconditionsNotMet", message),
            Condition("Available", "False", "PreconditionsNotMet", message),
            Condition("Health", "True", "Healthy", "waiting for preconditions is normal"),
        ),
    )


def stale(generation: int, recorded: int, data: dict[str, Any]) -> Report:
    message = f"generation {generation} is older than generation {recorded} already applied; nothing changed"
    return Report(
        generation,
        (
            Condition("Applied", "False", "StaleGeneration", message),
            Condition("Available", "False", "StaleGeneration", message),
            Condition("Health", "True", "Healthy", "out-of-order delivery is normal"),
        ),
        data,
    )


def terminal_failure(generation: int, reason: str, message: str, data: dict[str, Any] | None = None) -> Report:
    """A failure no retry fixes: not applied, not available; Health False only for runtime errors."""
    business = reason not in ("UnexpectedError", "PermissionDenied", "RequestRejected")
    return Report(
        generation,
        (
            Condition("Applied", "False", reason, message),
            Condition("Available", "False", reason, message),
            Condition(
                "Health",
                "True" if business else "False",
                "Healthy" if business else reason,
                "the input needs fixing; the adapter itself is healthy" if business else message,
            ),
        ),
        data or {},
    )


def deletion_pending(generation: int, message: str) -> Report:
    return Report(
        generation,
        (
            Condition("Applied", "False", "ClusterDeleting", message),
            Condition("Available", "False", "ClusterDeleting", message),
            Condition("Health", "True", "Healthy", "deletion handling"),
            Condition("Finalized", "False", "CleanupPending", message),
        ),
    )


def finalized(generation: int, message: str, data: dict[str, Any]) -> Report:
    return Report(
        generation,
        (
            Condition("Applied", "False", "ResourcesDeleted", message),
            Condition("Available", "False", "ResourcesDeleted", message),
            Condition("Health", "True", "Healthy", "cleanup completed"),
            Condition("Finalized", "True", "CleanupConfirmed", message),
        ),
        data,
    )


def registry_rejected(report: Report, registries: list[str]) -> Report:
    """REGISTRY_VERIFICATION=report: the pull secret was applied, but registries refused their credential.

    Health turns False (the HyperFleet reason vocabulary's ExecutionFailed:<phase>); Available is untouched.
    """
    names = ", ".join(registries[:10]) + (f" and {len(registries) - 10} more" if len(registries) > 10 else "")
    health = Condition(
        "Health",
        "False",
        "ExecutionFailed:RegistryVerification",
        f"the registry refused the pull secret's credential for {names}; the pull secret was applied anyway "
        "(REGISTRY_VERIFICATION=report); see data.registry_checks",
    )
    return replace(report, conditions=tuple(health if c.type == "Health" else c for c in report.conditions))
