"""The doctor checks of KUBERNETES_DELIVERY=direct (pullsecret.delivery.direct.mode lists them): GKE's GetCluster
and the endpoint for the configured mode, then through it a SelfSubjectAccessReview per verb on Secrets and the two
admission-policy reads. Lines as pullsecret.doctor.kit's (never a credential)."""

from __future__ import annotations

import functools
import json
from typing import Any

from pullsecret.delivery.direct import admission_policy
from pullsecret.delivery.direct.admission_policy import policy_problem
from pullsecret.delivery.direct.kubeapi import SecretsApi
from pullsecret.delivery.direct.operator_kubeconfig import ClusterApis
from pullsecret.delivery.direct.settings import DirectSettings
from pullsecret.doctor.kit import PROBE_CLUSTER, Context, Line, guarded
from pullsecret.errors import AdapterError, kube_status, looks_like_io
from pullsecret.model.names import cluster_allowed

MANIFESTS = "terraform output -raw kubernetes_manifests | kubectl apply -f -"
WRITES = ("create", "patch", "delete")  # terraform/kubernetes/rbac.yaml: what the runtime identity must do
READS = ("get", "list", "watch")  # ... and must never do on Secrets


def management_clusters(ctx: Context, *, clusters: ClusterApis) -> list[Line]:
    """Every named management cluster's checks, each guarded on its own (one failing cluster stops no other)."""
    names, lines = cluster_names(ctx)
    for name in names:
        lines += guarded(functools.partial(management_cluster, name=name, clusters=clusters), ctx, "gke")
    return lines


def cluster_names(ctx: Context) -> tuple[list[str], list[Line]]:
    """The clusters to check (MANAGEMENT_CLUSTER, wildcard-free ALLOWED_MANAGEMENT_CLUSTERS entries, --management-
    cluster), and a line for each entry that names no single cluster."""
    settings = ctx.settings
    names: list[str] = []
    lines: list[Line] = []
    for name in (settings.management_cluster, *settings.allowed_management_clusters, *ctx.extra_clusters):
        if name is None or name in names:
            continue
        if "*" in name:
            text = (
                f"ALLOWED_MANAGEMENT_CLUSTERS entry {name} has a wildcard: name its clusters with --management-cluster"
            )
            lines.append(Line("gke", None, text))
        elif settings.allowed_management_clusters and not cluster_allowed(name, settings.allowed_management_clusters):
            fix = "add it to allowed_management_clusters (ALLOWED_MANAGEMENT_CLUSTERS), or name an allowed cluster"
            lines.append(Line("gke", False, f"{name} is not among ALLOWED_MANAGEMENT_CLUSTERS", fix))
        else:
            names.append(name)
    if settings.management_cluster_template:
        text = (
            f"MANAGEMENT_CLUSTER_TEMPLATE {settings.management_cluster_template}: placements name the clusters; "
            "name them with --management-cluster"
        )
        lines.append(Line("gke", None, text))
    if not names:
        lines.append(Line("gke", None, "no management cluster named: set MANAGEMENT_CLUSTER or --management-cluster"))
    return names, lines


def management_cluster(ctx: Context, *, name: str, clusters: ClusterApis) -> list[Line]:
    """GetCluster and the endpoint for the configured mode; then, through it, RBAC and the admission policy."""
    clusters.invalidate(name)
    mode = ctx.settings.management_endpoint
    try:
        api = clusters.api_for(name, ctx.deadline())
    except AdapterError as exc:
        return [
            Line(
                "gke",
                False,
                f"{name}: GetCluster or its {mode} endpoint failed ({exc.reason})",
                _gke_fix(ctx, name, exc),
            )
        ]
    host = str(api.configuration.host)
    lines = [Line("gke", True, f"{name}: GetCluster answered; control plane {host} ({mode} endpoint)")]
    reviews = _access_reviews(ctx, name, api)
    lines.extend(reviews)
    if reviews and reviews[0].check == "kubernetes.reach":
        return lines  # the control plane did not answer: nothing more to ask it
    lines.append(_policy(ctx, name, api))
    return lines


def _gke_fix(ctx: Context, name: str, exc: AdapterError) -> str:
    project = name.split("/")[1]
    if exc.reason == "PermissionDenied":
        return (
            f"grant {ctx.member} roles/container.clusterViewer (container.clusters.get) on project {project}: "
            f"gcloud projects add-iam-policy-binding {project} --member {ctx.member} "
            "--role roles/container.clusterViewer (Terraform: runtime_cluster_viewer)"
        )
    if exc.reason == "ManagementClusterNotFound":
        return "no such cluster: fix management_cluster / allowed_management_clusters"
    return exc.message  # choose_endpoint's refusals name their fix (VPC egress, MANAGEMENT_ENDPOINT)


def _access_reviews(ctx: Context, name: str, api: SecretsApi) -> list[Line]:
    """SelfSubjectAccessReview for each verb on Secrets in a hosted-cluster namespace: writes allowed, reads not."""
    cluster_id = next(iter(ctx.cluster_projects), PROBE_CLUSTER)
    namespace = ctx.settings.management_namespace_template.format(cluster_id=cluster_id)
    answers: dict[str, bool] = {}
    for verb in (*WRITES, *READS):
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": "secrets"}},
        }
        try:
            response = api.create_self_subject_access_review(body, _preload_content=False, _request_timeout=10.0)
        except Exception as exc:  # noqa: BLE001 - every failure is a line naming its fix
            return [_unreachable(ctx, name, exc)]
        answers[verb] = bool((json.loads(response.data).get("status") or {}).get("allowed"))
    return [_rbac_line(ctx, name, namespace, answers)]


def _unreachable(ctx: Context, name: str, exc: BaseException) -> Line:
    status = kube_status(exc)
    mode = ctx.settings.management_endpoint
    if status is not None and status[0] in (401, 403):
        fix = (
            f"the API server refused {ctx.runtime} ({status[0]}): in dns mode grant container.clusters.connect "
            "(Terraform: runtime_cluster_connect); else check that GKE maps the account's token (the cluster's "
            "Google identity authentication)"
        )
        return Line("kubernetes.reach", False, f"{name}: the control plane refused the request ({status[0]})", fix)
    what = type(exc).__name__ if looks_like_io(exc) or status is None else f"HTTP {status[0]}"
    fix = (
        f"reach the control plane in {mode} mode from here: a private endpoint needs the cluster's VPC (run the "
        "doctor inside the function: terraform output -raw doctor_command), or MANAGEMENT_ENDPOINT=dns with "
        "external traffic on the DNS endpoint"
    )
    return Line("kubernetes.reach", False, f"{name}: the control plane did not answer ({what})", fix)


def _rbac_line(ctx: Context, name: str, namespace: str, answers: dict[str, bool]) -> Line:
    denied = [v for v in WRITES if not answers[v]]
    allowed_reads = [v for v in READS if answers[v]]
    if not denied and not allowed_reads:
        text = f"{name}: {'/'.join(WRITES)} Secrets in {namespace} allowed, {'/'.join(READS)} not"
        return Line("kubernetes.rbac", True, text)
    fixes: list[str] = []
    if denied:
        fixes.append(
            f"ClusterRole hyperfleet-pullsecret-adapter:{ctx.runtime} must allow {', '.join(denied)} on secrets and "
            f"be bound to {ctx.runtime}: {MANIFESTS}"
        )
    if allowed_reads:
        fixes.append(
            f"{ctx.runtime} must not {', '.join(allowed_reads)} Secrets: remove the binding that grants it "
            f"(kubectl get clusterrolebindings,rolebindings -A -o wide | grep {ctx.runtime})"
        )
    problems = [f"{v} denied" for v in denied] + [f"{v} allowed" for v in allowed_reads]
    return Line("kubernetes.rbac", False, f"{name}: Secrets in {namespace}: {', '.join(problems)}", "; ".join(fixes))


def _policy(ctx: Context, name: str, api: SecretsApi) -> Line:
    settings = ctx.settings
    release = admission_policy.expected(
        identity_email=ctx.runtime if "@" in ctx.runtime else None,
        namespace_pattern=settings.management_namespace_pattern.pattern,
        adapter_name=settings.adapter_name,
        secret_template=settings.kubernetes_secret_template,
        policy_name=settings.of(DirectSettings).admission_policy_name,
    )
    documents: list[dict[str, Any]] = []
    for kind, read in (
        ("ValidatingAdmissionPolicy", api.read_validating_admission_policy),
        ("ValidatingAdmissionPolicyBinding", api.read_validating_admission_policy_binding),
    ):
        try:
            documents.append(json.loads(read(release.name, _preload_content=False, _request_timeout=10.0).data))
        except Exception as exc:  # noqa: BLE001 - every failure is a line naming its fix
            status = kube_status(exc)
            code = status[0] if status is not None else type(exc).__name__
            why = {404: "is not installed", 403: f"may not be read by {ctx.runtime}"}.get(
                status[0] if status is not None else 0, f"answered {code}"
            )
            return Line(
                "kubernetes.policy", False, f"{name}: {kind} {release.name} {why}", f"apply this release's: {MANIFESTS}"
            )
    problem = policy_problem(documents[0], documents[1], release)
    if problem is not None:
        return Line(
            "kubernetes.policy", False, f"{name}: {problem}", f"apply this release's policy and binding: {MANIFESTS}"
        )
    text = f"{name}: admission policy {release.name} and its binding are this release's"
    return Line("kubernetes.policy", True, text)
