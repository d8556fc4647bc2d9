"""Direct mode's part of the status reports: its words, its own `data` keys and its failure reasons (what
its registration declares; the mode's machinery reads them from here).
"""

from __future__ import annotations

from typing import TypedDict

from pullsecret.delivery.base import Wording

# docs/contract.md "What a cluster's owner reads" holds Available's; tests/unit/test_available_messages.py holds it.
WORDING = Wording(
    available_shared="Pull secret ready: stored and delivered where this cluster's control plane runs.",
    available_own=(
        "Pull secret ready: this cluster's own registry credentials are stored and delivered where its control "
        "plane runs."
    ),
    applied_changed="pull secret stored in Secret Manager and applied to the management cluster",
    applied_unchanged="pull secret already up to date in Secret Manager and on the management cluster",
)


class DirectData(TypedDict, total=False):
    """Direct mode's own status `data` keys."""

    kubernetes_resource_version: str | None  # the delivered Secret's resourceVersion
    kubernetes_cleanup: str  # deletion: what became of the Kubernetes Secret


# What a cluster's owner reads for this mode's own failures (docs/contract.md's table).
REASONS = {
    "AdmissionPolicyMissing": "A safety policy is missing where the cluster is hosted; the platform team must install "
    "it.",
    "AdmissionPolicyUnverified": "A safety policy where the cluster is hosted could not be checked; the platform team "
    "must fix it.",
    "SecretTypeMismatch": "An older pull secret of the wrong kind is in the way; the platform team must remove it.",
    "PolicyIdentityMismatch": "A manual run by the platform team was refused (wrong identity); nothing changed.",
}
