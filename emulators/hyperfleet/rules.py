"""The API server's rules on an adapter status write, and the adapter conventions it records but does not enforce."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from emulators.hyperfleet.answers import parse_time

REQUIRED_CONDITIONS = ("Applied", "Available", "Health")
CONDITION_STATUSES = ("True", "False", "Unknown")
# The adapter framework's vocabulary (hyperfleet-adapter docs/adapter-authoring-guide.md, "The Health condition
# boilerplate": status True exactly when the reason is Healthy, False with ResourcesSkipped or ExecutionFailed:*;
# Finalized reasons from the same framework). The API stores any reason; reports outside the vocabulary are
# recorded in `conventions`, not refused.
HEALTH_REASONS = ("Healthy", "ResourcesSkipped")
HEALTH_REASON_PREFIX = "ExecutionFailed:"
FINALIZED_REASONS = ("NotDeleting", "CleanupInProgress", "CleanupConfirmed", "AdapterUnhealthy")
# The condition-mapping engine masks `data` keys containing any of these (case-insensitive) before its CEL
# rules see them: hyperfleet-api pkg/util/mask_sensitive.go (sensitivePatterns, MaskSensitiveFields, depth
# limit 20), applied to each adapter status's data in pkg/services/condition_mapper.go.
MASKED_KEY_PATTERNS = (
    "password", "secret", "token", "apikey", "privatekey", "secretkey", "accesskey", "sshkey", "encryptionkey",
    "accountkey", "servicekey", "registrykey", "signingkey", "credential", "api_key", "passphrase", "private",
    "auth", "connection", "cert", "kubeconfig", "bearer",
)  # fmt: skip
_MASKING_DEPTH = 20


def masked_keys(data: Any, path: str = "data", depth: int = 0) -> list[tuple[str, str]]:
    """(key path, pattern) of every `data` key the condition-mapping engine would mask, as it walks them."""
    found: list[tuple[str, str]] = []
    if depth >= _MASKING_DEPTH:
        return found
    if isinstance(data, dict):
        for key, value in data.items():
            lowered = str(key).lower()
            pattern = next((p for p in MASKED_KEY_PATTERNS if p in lowered), None)
            if pattern is not None:
                found.append((f"{path}.{key}", pattern))  # masked whole: nothing below it is seen
            else:
                found.extend(masked_keys(value, f"{path}.{key}", depth + 1))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found.extend(masked_keys(item, f"{path}[{i}]", depth + 1))
    return found


def convention_breaks(cluster_id: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the API accepts but the adapter contract advises against (see the constants above)."""
    breaks: list[dict[str, Any]] = []
    where = {"cluster_id": cluster_id, "adapter": body.get("adapter")}
    for key, pattern in masked_keys(body.get("data") or {}):
        breaks.append({"kind": "masked-data-key", **where, "key": key, "pattern": pattern})
    for cond in body["conditions"]:
        reason = cond.get("reason")
        if cond.get("type") == "Health":
            ok = reason in HEALTH_REASONS or (
                isinstance(reason, str)
                and reason.startswith(HEALTH_REASON_PREFIX)
                and len(reason) > len(HEALTH_REASON_PREFIX)
            )
            # The boilerplate's status expression: True exactly when the reason is Healthy.
            ok = ok and (cond.get("status") == "True") == (reason == "Healthy")
        elif cond.get("type") == "Finalized":
            ok = reason in FINALIZED_REASONS
        else:
            continue
        if not ok:
            breaks.append({"kind": f"{cond['type'].lower()}-reason", **where, "reason": reason})
    return breaks


def status_rule_errors(body: Any) -> list[dict[str, Any]]:
    """The API server's own checks on a status write, as ValidationError objects."""
    if not isinstance(body, dict):
        return [{"field": "", "constraint": "required", "message": "body must be a JSON object"}]
    errors: list[dict[str, Any]] = []
    if not isinstance(body.get("adapter"), str) or not body["adapter"]:
        errors.append({"field": "adapter", "constraint": "required", "message": "adapter is required"})
    generation = body.get("observed_generation")
    if not isinstance(generation, int) or isinstance(generation, bool) or generation < 1:
        errors.append(
            {"field": "observed_generation", "constraint": "min", "message": "observed_generation must be >= 1"}
        )
    observed = parse_time(body.get("observed_time"))
    if observed is None:
        errors.append({"field": "observed_time", "constraint": "format", "message": "observed_time must be RFC 3339"})
    else:
        # hyperfleet-api pkg/handlers/validation.go (validateObservedTimeRange, run by the status handler's
        # Create before anything else): at most 5 minutes ahead of the server's clock, 30 minutes behind.
        now = datetime.now(UTC)
        if not now - timedelta(minutes=30) <= observed <= now + timedelta(minutes=5):
            errors.append(
                {
                    "field": "observed_time",
                    "constraint": "max",
                    "message": "observed_time must lie within [now-30m, now+5m]",
                }
            )
    conditions = body.get("conditions")
    if not isinstance(conditions, list):
        errors.append({"field": "conditions", "constraint": "required", "message": "conditions are required"})
        return errors
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        if not isinstance(cond, dict):
            errors.append({"field": f"conditions[{i}]", "constraint": "required", "message": "not an object"})
            continue
        kind = cond.get("type")
        if not isinstance(kind, str) or not kind.strip():
            errors.append(
                {"field": f"conditions[{i}].type", "constraint": "required", "message": "condition type is empty"}
            )
        elif kind in seen:
            errors.append(
                {
                    "field": f"conditions[{i}].type",
                    "constraint": "unique",
                    "message": f"duplicate condition type {kind}",
                }
            )
        else:
            seen.add(kind)
        if cond.get("status") not in CONDITION_STATUSES:
            errors.append(
                {
                    "field": f"conditions[{i}].status",
                    "constraint": "enum",
                    "value": cond.get("status"),
                    "message": "condition status must be True, False or Unknown",
                }
            )
    for kind in REQUIRED_CONDITIONS:
        if kind not in seen:
            errors.append({"field": "conditions", "constraint": "required", "message": f"missing condition {kind}"})
    return errors
