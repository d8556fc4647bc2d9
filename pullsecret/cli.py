"""Operator CLI: the function's own code and configuration, run by hand (ADC locally).

    python -m pullsecret reconcile CLUSTER_ID   one reconcile, exactly as an event would run it
    python -m pullsecret inspect CLUSTER_ID     the cluster's lineage across HyperFleet, Secret Manager
                                                and Kubernetes, as JSON, redacted (no credential, ever);
                                                run it with your own credentials: the function's runtime
                                                identity may not read Kubernetes Secrets

Exit codes: 0 done (applied, unchanged, finalized; inspect: found), 1 terminal failure (reported in the
status), 2 usage or configuration error, 3 transient failure (try again), 4 nothing done (preconditions
not met, stale generation, cluster not found).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pullsecret import dockerconfig, lineage, preconditions
from pullsecret.errors import AdapterError, ConfigError, TerminalError, TransientError
from pullsecret.retrying import Deadline

EXIT_OK = 0
EXIT_TERMINAL = 1
EXIT_USAGE = 2
EXIT_TRANSIENT = 3
EXIT_NOTHING_DONE = 4

_RESULT_EXIT = {
    "applied": EXIT_OK,
    "unchanged": EXIT_OK,
    "finalized": EXIT_OK,
    "terminal": EXIT_TERMINAL,
    "skipped": EXIT_NOTHING_DONE,
    "stale": EXIT_NOTHING_DONE,
    "gone": EXIT_NOTHING_DONE,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pullsecret", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    reconcile = commands.add_parser("reconcile", help="run one reconcile of a cluster now")
    reconcile.add_argument("cluster_id")
    inspect = commands.add_parser("inspect", help="print the cluster's pull-secret lineage (redacted JSON)")
    inspect.add_argument("cluster_id")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)  # exits 2 on usage errors
    if not preconditions_cluster_id_ok(args.cluster_id):
        print(f"error: {args.cluster_id[:80]!r} is not a HyperFleet cluster id", file=sys.stderr)
        return EXIT_USAGE
    from pullsecret.handler import Adapter

    try:
        adapter = Adapter.from_environment()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "reconcile":
            return _reconcile(adapter, args.cluster_id)
        return _inspect(adapter, args.cluster_id)
    except TransientError as exc:
        print(f"transient failure, try again: {exc.message}", file=sys.stderr)
        return EXIT_TRANSIENT
    except TerminalError as exc:
        print(f"failed: {exc.message}", file=sys.stderr)
        return EXIT_TERMINAL


def preconditions_cluster_id_ok(cluster_id: str) -> bool:
    from pullsecret.events import _CLUSTER_ID

    return bool(_CLUSTER_ID.match(cluster_id))


def _reconcile(adapter: Any, cluster_id: str) -> int:
    outcome = adapter.reconcile_cluster(cluster_id)
    code = _RESULT_EXIT.get(outcome.result, EXIT_TERMINAL)
    summary = f"cluster {cluster_id}: {outcome.result}"
    if outcome.report is not None:
        conditions = ", ".join(f"{c.type}={c.status} ({c.reason})" for c in outcome.report.conditions)
        summary += f"; reported {conditions}; API answered {outcome.report_code}"
        available = next((c for c in outcome.report.conditions if c.type == "Available"), None)
        if available is not None and code != EXIT_OK:
            summary += f"\n{available.message}"
    elif outcome.result == "gone":
        summary += "; the HyperFleet API does not know this cluster"
    print(summary, file=sys.stderr if code else sys.stdout)
    return code


def _inspect(adapter: Any, cluster_id: str) -> int:
    reconciler = adapter.reconciler()
    settings = adapter.settings
    deadline = Deadline(settings.retry_deadline_s)
    cluster = reconciler.hyperfleet.get_cluster(cluster_id)
    if cluster is None:
        print(f"cluster {cluster_id}: not found in the HyperFleet API", file=sys.stderr)
        return EXIT_NOTHING_DONE
    statuses = reconciler.hyperfleet.list_statuses(cluster_id)
    ours = preconditions.statuses_by_adapter(statuses).get(settings.adapter_name) or {}
    report: dict[str, Any] = {
        "cluster_id": cluster_id,
        "hyperfleet": {
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
        },
    }
    secret_id, kube_name = reconciler.names(cluster_id)
    project = settings.secret_project_id or preconditions.project_id_of(cluster)
    recorded_fingerprint: str | None = None
    if project is None:
        report["secret_manager"] = {"error": "no GCP project known for this cluster"}
    else:
        try:
            described = reconciler.store.describe(project=project, secret_id=secret_id, deadline=deadline)
        except AdapterError as exc:
            described = {"error": exc.message}
        if described is None:
            described = {"name": f"projects/{project}/secrets/{secret_id}", "exists": False}
        else:
            annotations = described.get("annotations") or {}
            described["annotations"] = {k: v for k, v in annotations.items() if k.startswith("hyperfleet-")}
            if lineage.A_LINEAGE in described["annotations"]:
                described["annotations"][lineage.A_LINEAGE] = lineage.decode(annotations[lineage.A_LINEAGE])
            recorded_fingerprint = annotations.get("hyperfleet-fingerprint")
        report["secret_manager"] = described
    report["kubernetes"] = _inspect_kubernetes(reconciler, cluster_id, statuses, kube_name, deadline)
    live_fp = report["kubernetes"].get("content_fingerprint")
    report["in_sync"] = bool(recorded_fingerprint) and live_fp == (recorded_fingerprint or "")[:12]
    sensitive_strings = report["kubernetes"].pop("_sensitive", [])
    text = json.dumps(report, indent=2, sort_keys=True, default=str)
    for sensitive in sensitive_strings:  # belt and braces: nothing above carries data, but never print it
        text = text.replace(sensitive, "<redacted>")
    print(text)
    return EXIT_OK


def _inspect_kubernetes(
    reconciler: Any, cluster_id: str, statuses: list[dict[str, Any]], kube_name: str, deadline: Deadline
) -> dict[str, Any]:
    try:
        placement = preconditions.placement_of(cluster_id, statuses, reconciler.settings)
    except TerminalError as exc:
        return {"error": exc.message}
    out: dict[str, Any] = {
        "management_cluster": placement.management_cluster,
        "namespace": placement.namespace,
        "name": kube_name,
    }
    try:
        api = reconciler.clusters.api_for(placement.management_cluster, deadline)
        live = reconciler.kube.read(api, placement.namespace, kube_name, deadline)
    except AdapterError as exc:
        out["error"] = exc.message
        if exc.reason == "PermissionDenied":
            # By design: the function's runtime identity may not read Secrets (terraform/kubernetes/rbac.yaml).
            out["error"] += (
                "; inspect reads the Secret with the credentials it runs with: use your own "
                "(gcloud auth application-default login), not the function's service account"
            )
        return out
    if live is None:
        out["exists"] = False
        return out
    metadata = live.get("metadata") or {}
    out.update(
        exists=True,
        resource_version=metadata.get("resourceVersion"),
        labels=metadata.get("labels") or {},
        # Only our annotations: kubectl's last-applied-configuration would carry the data itself.
        annotations={k: v for k, v in (metadata.get("annotations") or {}).items() if k.startswith("hyperfleet.io/")},
        type=live.get("type"),
    )
    raw = (live.get("data") or {}).get(".dockerconfigjson")
    try:
        import base64

        secret = dockerconfig.parse(base64.b64decode(raw or ""), source="the Kubernetes Secret")
    except (dockerconfig.InvalidPullSecret, ValueError):
        out["content"] = "not a valid dockerconfigjson"
        return out
    out["content_fingerprint"] = secret.short_fingerprint
    out["registries"] = secret.registry_fingerprints()
    out["_sensitive"] = secret.sensitive_strings()
    return out
