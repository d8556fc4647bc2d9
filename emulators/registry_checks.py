"""`data.registry_checks` as a person reads it (`make trigger`, `make demo`): one line per registry with its
result and what that result means.

The status carries a `reason` only for a registry that was never contacted (what answered, and how, stays in the
function's log), so every other line gets the result's meaning, in the words of the README's table ("Registry
verification"; tests/emulators/test_registry_checks_view.py holds the two together).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MEANINGS = {
    "valid": "the registry (or its token service) accepted the credential",
    "rejected": "the token service or the registry answered 401 to the credential",
    "anonymous": "`/v2/` answers without a credential: nothing to verify",
    "unreachable": (
        "network error, TLS failure, timeout, 5xx, a redirect, or any other answer that says nothing about the "
        "credential; never counted as `rejected`"
    ),
    "skipped": "not contacted or not verifiable",
}


def lines(checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """One aligned line per check: registry, result, and its reason (when the status has one) or meaning."""
    if not checks:
        return []
    width = max(len(str(check.get("registry", ""))) for check in checks)
    shown = []
    for check in checks:
        result = str(check.get("result", ""))
        why = check.get("reason") or MEANINGS.get(result, "")
        shown.append(f"{check.get('registry', '')!s:<{width}}  {result:<11} {why}".rstrip())
    return shown
