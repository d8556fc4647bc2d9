"""External Secrets mode's part of the status reports: its words, its own `data` keys and its failure reasons
(what its registration declares; the mode's machinery reads them from here).
"""

from __future__ import annotations

from typing import TypedDict

from pullsecret.delivery.base import Wording

# docs/contract.md "What a cluster's owner reads" holds Available's; `{refresh}`: the rendered ExternalSecret's
# refreshInterval (EXTERNAL_SECRETS_REFRESH_INTERVAL), spelled out.
WORDING = Wording(
    available_shared=(
        "Pull secret stored and readable by the hosting side's External Secrets Operator, which copies it for "
        "the control plane within {refresh}."
    ),
    available_own=(
        "Pull secret with this cluster's own registry credentials stored and readable by the hosting side's "
        "External Secrets Operator, which copies it for the control plane within {refresh}."
    ),
    applied_changed="pull secret stored in Secret Manager, readable by the External Secrets Operator's principal",
    applied_unchanged="pull secret already up to date in Secret Manager, readable by the External Secrets Operator",
)


class ExternalSecretsData(TypedDict, total=False):
    """External Secrets mode's own status `data` keys (its repair, `repaired`, is access_binding)."""

    delivery: str  # the KUBERNETES_DELIVERY value
    access_member: str  # the principal granted access to the secret
    access_cleanup: str  # deletion: what became of that access
    kubernetes_cleanup: str  # deletion: what became of the Kubernetes Secret (the operator's, left to it)


# What a cluster's owner reads for this mode's own failures (docs/contract.md's table).
REASONS = {
    "RefusedPrincipal": "The cluster's hosting location cannot be granted access; the platform team must fix it.",
}
