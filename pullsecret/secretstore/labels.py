"""Who owns a Secret Manager secret: the labels the adapter puts on its secrets, and the refusal of others'."""

from __future__ import annotations

import re

from pullsecret.errors import OwnershipConflict

__all__ = ["OwnershipConflict", "sm_label_value", "sm_labels"]  # OwnershipConflict: defined in pullsecret.errors

_LABEL_VALUE_BAD = re.compile(r"[^a-z0-9_-]")


def sm_label_value(value: str) -> str:
    """Sanitise to Secret Manager's label value rule: [a-z0-9_-]{0,63}."""
    return _LABEL_VALUE_BAD.sub("-", value.lower())[:63]


def sm_labels(*, adapter: str, cluster_id: str, cluster_name: str) -> dict[str, str]:
    return {
        "managed-by": "hyperfleet",
        "adapter": sm_label_value(adapter),
        "cluster-id": sm_label_value(cluster_id),
        "cluster-name": sm_label_value(cluster_name),
        "resource-type": "pull-secret",
        "hyperfleet-version": "v1",
    }
