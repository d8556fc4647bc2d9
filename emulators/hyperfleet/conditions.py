"""The cluster's aggregated status conditions, recomputed from the adapters' statuses as the API server does."""

from __future__ import annotations

import re
from typing import Any

from emulators.hyperfleet.answers import rfc3339


def condition_type_for(adapter: str) -> str:
    """The aggregated condition an adapter produces: pullsecret -> PullsecretSuccessful."""
    words = [w for w in re.split(r"[-_\s]+", adapter) if w]
    return "".join(w[:1].upper() + w[1:] for w in words) + "Successful"


def aggregate(
    cluster: dict[str, Any],
    statuses: dict[str, dict[str, Any]],
    *,
    required_adapters: list[str] | None,
    status_method: str,
) -> None:
    """Recompute the cluster's status.conditions from its adapter statuses (`statuses`: adapter -> status).

    ``status_method`` "PUT" (API core 1.0.25) aggregates ``Reconciled`` / ``LastKnownReconciled``, "POST"
    (API 0.1.0) ``Ready`` / ``Available``; each adapter adds its own ``<Adapter>Successful`` condition.
    """
    generation = int(cluster.get("generation", 1))
    deleting = "deleted_time" in cluster
    old = {c.get("type"): c for c in (cluster.get("status") or {}).get("conditions", [])}
    now = rfc3339()

    def condition(kind: str, ok: bool, reason: str, message: str, observed: int, *, updated: str) -> dict[str, Any]:
        status = "True" if ok else "False"
        previous = old.get(kind)
        changed = previous is None or previous.get("status") != status
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "observed_generation": observed,
            "created_time": previous.get("created_time", now) if previous else now,
            "last_updated_time": updated,
            "last_transition_time": now if changed else previous.get("last_transition_time", now),  # type: ignore[union-attr]
        }

    def done(status: dict[str, Any], at_generation: int | None) -> bool:
        wanted = "Finalized" if deleting else "Available"
        if at_generation is not None and status["observed_generation"] != at_generation:
            return False
        return any(c["type"] == wanted and c["status"] == "True" for c in status["conditions"])

    required = required_adapters or sorted(statuses)
    reported = [statuses[a] for a in required if a in statuses]
    current = bool(required) and len(reported) == len(required) and all(done(s, generation) for s in reported)
    gens = {s["observed_generation"] for s in reported}
    common = next(iter(gens)) if len(gens) == 1 else None
    known = bool(required) and len(reported) == len(required) and common is not None
    known = known and all(done(s, common) for s in reported)
    last_report = max((s["last_report_time"] for s in reported), default=now)
    if status_method == "PUT":
        aggregated = [
            condition(
                "Reconciled",
                current,
                "ReconciledAll" if current else "MissingRequiredAdapters",
                "All required adapters reported at the current generation"
                if current
                else "Not all required adapters reported success at the current generation",
                generation,
                updated=last_report,
            ),
            condition(
                "LastKnownReconciled",
                known,
                "AllAdaptersReconciled" if known else "AdaptersNotReconciled",
                "All required adapters report success for a common generation"
                if known
                else "No common generation at which all required adapters succeeded",
                common or generation,
                updated=last_report,
            ),
        ]
    else:
        aggregated = [
            condition(
                "Ready",
                current,
                "AllAdaptersReady" if current else "AdaptersNotReady",
                "All adapters report success at the current generation"
                if current
                else "Not all adapters report success at the current generation",
                generation,
                updated=last_report,
            ),
            condition(
                "Available",
                known,
                "AllAdaptersAvailable" if known else "AdaptersNotAvailable",
                "All adapters available at a common generation"
                if known
                else "Adapters not available at a common generation",
                common or generation,
                updated=last_report,
            ),
        ]
    for adapter in sorted(statuses):
        status = statuses[adapter]
        available = next((c for c in status["conditions"] if c["type"] == "Available"), None)
        aggregated.append(
            condition(
                condition_type_for(adapter),
                available is not None and available["status"] == "True",
                (available or {}).get("reason") or "NoAvailableCondition",
                (available or {}).get("message") or f"{adapter} reported no Available condition",
                status["observed_generation"],
                updated=status["last_report_time"],
            )
        )
    cluster["status"] = {"conditions": aggregated}
