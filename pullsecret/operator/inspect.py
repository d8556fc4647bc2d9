"""`python -m pullsecret inspect CLUSTER_ID`: one cluster's lineage across HyperFleet, Secret Manager and its delivery.

Printed as JSON, redacted (no credential, ever): the delivery's view comes from the mode itself
(pullsecret.delivery.base `inspect`); a field without meaning in a mode says "not applicable".
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from pullsecret.errors import AdapterError, TerminalError
from pullsecret.model import preconditions
from pullsecret.model.names import secret_name
from pullsecret.retrying import Deadline

if TYPE_CHECKING:
    from pullsecret.app import Application
    from pullsecret.secretstore import SecretStore

EXIT_OK = 0
EXIT_NOTHING_DONE = 4  # = cli.EXIT_NOTHING_DONE: the cluster is not known
NOT_APPLICABLE = "not applicable"  # a view's field that has no meaning in this mode


def run(app: Application, cluster_id: str) -> int:
    """Print the cluster's lineage as redacted JSON; EXIT_NOTHING_DONE when the API does not know it."""
    from pullsecret.reconcile.target import names

    settings = app.settings
    deadline = Deadline(settings.retry_deadline_s)
    cluster = app.hyperfleet.get_cluster(cluster_id)
    if cluster is None:
        print(f"cluster {cluster_id}: not found in the HyperFleet API", file=sys.stderr)
        return EXIT_NOTHING_DONE
    statuses = app.hyperfleet.list_statuses(cluster_id)
    ours = preconditions.statuses_by_adapter(statuses).get(settings.adapter_name) or {}
    report: dict[str, Any] = {"cluster_id": cluster_id, "hyperfleet": _inspect_hyperfleet(cluster, ours)}
    secret_id, kube_name = names(settings, cluster_id)
    project = settings.secret_project_id or preconditions.project_id_of(cluster)
    report["secret_manager"] = _inspect_secret_manager(app.store, project, secret_id, deadline)
    report["kubernetes"] = _inspect_delivery(app, cluster_id, statuses, kube_name, deadline)
    report["in_sync"] = in_sync(ours, report["kubernetes"], report["secret_manager"])
    sensitive_strings = report["kubernetes"].pop("_sensitive", [])
    text = json.dumps(report, indent=2, sort_keys=True, default=str)
    for sensitive in sensitive_strings:  # belt and braces: nothing above carries data, but never print it
        text = text.replace(sensitive, "<redacted>")
    print(text)
    return EXIT_OK


def _inspect_hyperfleet(cluster: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """The cluster as the HyperFleet API holds it, and our status of it (conditions and lineage, no data)."""
    return {
        "name": cluster.get("name"),
        "generation": cluster.get("generation"),
        "deleted_time": cluster.get("deleted_time"),
        "status": {
            "observed_generation": ours.get("observed_generation"),
            "last_report_time": ours.get("last_report_time"),
            "conditions": [
                {k: c.get(k) for k in ("type", "status", "reason", "last_transition_time")}
                for c in ours.get("conditions") or []
                if isinstance(c, dict)
            ],
            "lineage": (ours.get("data") or {}).get("lineage") if isinstance(ours.get("data"), dict) else None,
        },
    }


def in_sync(ours: dict[str, Any], kubernetes: dict[str, Any], secret_manager: dict[str, Any]) -> bool | str | None:
    """Whether the delivered content is what we last reported storing; None when a side could not be read (e.g.
    the runtime identity may not read Secrets): unknown, not false; "not applicable" when the delivery shows no
    content of its own (external-secrets: External Secrets Operator writes the Secret, the adapter reads none)."""
    recorded_fingerprint: str | None = None
    # What the adapter last reported storing (Secret Manager records nothing per write: one write per change).
    ours_data = ours.get("data")
    if isinstance(ours_data, dict) and isinstance(ours_data.get("fingerprint"), str):
        recorded_fingerprint = ours_data["fingerprint"]
    if "error" in kubernetes or "error" in secret_manager:
        return None
    if kubernetes.get("exists") is None and "content_fingerprint" not in kubernetes:
        return NOT_APPLICABLE
    live_fp = kubernetes.get("content_fingerprint")
    return bool(recorded_fingerprint) and live_fp == (recorded_fingerprint or "")[:12]


def _inspect_secret_manager(
    store: SecretStore, project: str | None, secret_id: str, deadline: Deadline
) -> dict[str, Any]:
    """The cluster's Secret Manager secret as `describe` sees it (metadata only), or what kept us from seeing it."""
    if project is None:
        return {"error": "no GCP project known for this cluster"}
    try:
        described = store.description.describe(project=project, secret_id=secret_id, deadline=deadline)
    except AdapterError as exc:
        return {"error": exc.message}
    if described is None:
        return {"name": secret_name(project, secret_id), "exists": False}
    annotations = described.get("annotations") or {}
    described["annotations"] = {k: v for k, v in annotations.items() if k.startswith("hyperfleet-")}
    return dict(described)


def _inspect_delivery(
    app: Application, cluster_id: str, statuses: list[dict[str, Any]], kube_name: str, deadline: Deadline
) -> dict[str, Any]:
    """Where the cluster's Secret is placed, and what the delivery shows of it (pullsecret.delivery.base)."""
    try:
        placement = preconditions.placement_of(cluster_id, statuses, app.settings)
    except TerminalError as exc:
        return {"error": exc.message}
    out: dict[str, Any] = {
        "management_cluster": placement.management_cluster,
        "namespace": placement.namespace,
        "name": kube_name,
    }
    out.update(app.delivery.inspect(placement, kube_name, deadline))
    return out
