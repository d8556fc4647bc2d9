"""The preflight's checks (`python -m pullsecret doctor`, pullsecret.operator.doctor runs them).

Each check reads and never writes: list clusters, access the platform pull secret, Secret Manager's
TestIamPermissions and GetSecret, GKE's GetCluster, two admission-policy reads, SelfSubjectAccessReview and the
registries' auth handshake. Each answers `Line`s: one thing proven or refused, and for a refusal the fix, naming
the role, permission or command. A Line never carries a credential: its texts are built from resource names,
permission names and rules (as pullsecret.errors' messages are), never from payloads or answers' bodies.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
from google.api_core import exceptions as gexc

from pullsecret.config import Settings, cluster_allowed
from pullsecret.delivery import admission_policy
from pullsecret.delivery.admission_policy import POLICY_NAME, policy_problem
from pullsecret.errors import AdapterError, kube_status, looks_like_io
from pullsecret.model import dockerconfig, preconditions
from pullsecret.registry.verification import safe_name
from pullsecret.retrying import Deadline

MANIFESTS = "terraform output -raw kubernetes_manifests | kubectl apply -f -"
# terraform/iam.tf local.secret_manager_managed_base_permissions: what the adapter does to its own secrets.
MANAGED_PERMISSIONS = (
    "secretmanager.secrets.get",
    "secretmanager.versions.add",
    "secretmanager.versions.access",
    "secretmanager.versions.get",
    "secretmanager.versions.list",
    "secretmanager.versions.destroy",
    "secretmanager.versions.disable",
)
MANAGED_ROLE = "hyperfleetPullSecretManager"
CREATOR_ROLE = "hyperfleetPullSecretCreator"
CREATE = "secretmanager.secrets.create"  # checked on the project: not conditioned (terraform/iam.tf)
RESOURCE_MANAGER = "https://cloudresourcemanager.googleapis.com"
PROBE_CLUSTER = "doctor-probe"  # a cluster id no secret is made for: its names only ask IAM
WRITES = ("create", "patch", "delete")  # terraform/kubernetes/rbac.yaml: what the runtime identity must do
READS = ("get", "list", "watch")  # ... and must never do on Secrets
CLUSTER_IDS = 10  # clusters listed for names to ask about


@dataclass(frozen=True)
class Line:
    """One check's verdict: ok True (proven), False (refused: `fix` says what to do), None (nothing to check)."""

    check: str
    ok: bool | None
    text: str
    fix: str = ""


@dataclass
class Context:
    """What the checks share: the configuration, the runtime identity's clients, what earlier checks learned."""

    settings: Settings
    runtime: str  # the runtime service account's e-mail (or a description when unknown)
    hyperfleet: Any  # pullsecret.hyperfleet.client.HyperFleetClient
    store: Any  # pullsecret.secretstore.SecretStore (read_source)
    secrets: Any  # SecretManagerServiceClient (TestIamPermissions, GetSecret)
    clusters: Any  # pullsecret.delivery.management_clusters.ManagementClusters
    registries: Any  # pullsecret.registry.verification.RegistryVerifier
    extra_clusters: tuple[str, ...] = ()
    token: Callable[[], str] | None = None  # the runtime identity's access token (projects.testIamPermissions)
    resource_manager: str = RESOURCE_MANAGER
    cluster_projects: dict[str, str | None] = field(default_factory=dict)  # listed cluster id -> its GCP project
    source: dockerconfig.PullSecret | None = None

    def deadline(self) -> Deadline:
        return Deadline(min(self.settings.retry_deadline_s, 20.0))

    @property
    def member(self) -> str:
        return f"serviceAccount:{self.runtime}"


# -- the HyperFleet API ---------------------------------------------------------------------------
def hyperfleet_api(ctx: Context) -> list[Line]:
    url = ctx.settings.hyperfleet_api_url
    try:
        items, total = ctx.hyperfleet.list_clusters(page=1, size=CLUSTER_IDS)
    except AdapterError as exc:
        return [Line("hyperfleet-api", False, f"{url}: list clusters failed ({exc.reason})", _api_fix(ctx, exc))]
    for item in items:
        if isinstance(item.get("id"), str):
            ctx.cluster_projects[item["id"]] = preconditions.project_id_of(item)
    return [Line("hyperfleet-api", True, f"{url} answers and accepts the adapter's token ({total} clusters)")]


def _api_fix(ctx: Context, exc: AdapterError) -> str:
    settings = ctx.settings
    if exc.reason == "CredentialsRefused" and settings.hyperfleet_api_auth == "google-id-token":
        return (
            f"the API (or its gateway) must admit Google ID tokens of {ctx.runtime} with audience "
            f"{settings.hyperfleet_api_audience!r} (docs/contract.md, Authentication)"
        )
    if exc.reason == "CredentialsRefused":
        return (
            "put a token the API accepts in HYPERFLEET_API_TOKEN_FILE: add it as a new version of the secret "
            "Terraform's hyperfleet_api_token_secret names "
            "(gcloud secrets versions add SECRET --project PROJECT --data-file=-)"
        )
    if exc.reason == "EndpointNotFound":
        return "HYPERFLEET_API_URL reaches no HyperFleet API route: set hyperfleet_api_url to the API's base URL"
    if exc.reason == "PermissionDenied":
        return f"the API or its gateway must let {ctx.runtime} list clusters and report statuses"
    return "make HYPERFLEET_API_URL reachable from where this runs (DNS, firewall, the function's VPC egress)"


# -- the platform pull secret ---------------------------------------------------------------------
def pull_secret_source(ctx: Context) -> list[Line]:
    source = ctx.settings.pull_secret_source
    if source is None:
        return [Line("pull-secret-source", None, "PULL_SECRET_SOURCE is unset: only the clusters' own pull secrets")]
    try:
        raw = ctx.store.read_source(source, ctx.deadline())
        ctx.source = dockerconfig.parse(raw, source="PULL_SECRET_SOURCE")
    except dockerconfig.InvalidPullSecret as exc:
        fix = 'add a new version holding a valid .dockerconfigjson ({"auths": {...}}) to the source secret'
        return [Line("pull-secret-source", False, f"{source} is not a valid pull secret: {exc.message}", fix)]
    except AdapterError as exc:
        return [Line("pull-secret-source", False, f"{source} is not readable ({exc.reason})", _source_fix(ctx, exc))]
    count = len(ctx.source.document()["auths"])
    text = f"{source} is readable and a valid pull secret ({count} registries, {ctx.source.short_fingerprint})"
    return [Line("pull-secret-source", True, text)]


def _source_fix(ctx: Context, exc: AdapterError) -> str:
    source = ctx.settings.pull_secret_source or ""
    secret = source.rsplit("/versions/", 1)[0]
    project, secret_id = secret.split("/")[1], secret.rsplit("/", 1)[-1]
    if exc.reason == "PermissionDenied":
        return (
            f"grant {ctx.member} roles/secretmanager.secretAccessor (secretmanager.versions.access) on {secret}: "
            f"gcloud secrets add-iam-policy-binding {secret_id} --project {project} --member {ctx.member} "
            "--role roles/secretmanager.secretAccessor (Terraform: runtime_pull_secret_source)"
        )
    if exc.reason == "SourceNotFound":
        return f"create {secret} with a version, or set pull_secret_source_secret to the secret that exists"
    if exc.reason == "SourceUnavailable":
        return f"enable the version (gcloud secrets versions enable), or use versions/latest of {secret}"
    return "try again: Secret Manager did not answer"


# -- Secret Manager permissions -------------------------------------------------------------------
def secret_manager(ctx: Context) -> list[Line]:
    settings = ctx.settings
    projects = [settings.secret_project_id] if settings.secret_project_id else []
    if not projects:
        projects = sorted({p for p in ctx.cluster_projects.values() if p})[:5]
    if not projects:
        text = "no secret project known: SECRET_PROJECT_ID is unset and no listed cluster names a GCP project"
        return [Line("secret-manager", None, text)]
    lines: list[Line] = []
    for project in projects:
        lines.append(_covered(ctx, project))
        lines.append(_create(ctx, project))
        lines.append(_outside(ctx, project))
    return lines


def required_permissions(settings: Settings) -> tuple[str, ...]:
    """The permissions the adapter needs on its own secrets (terraform/iam.tf secret_manager_managed_permissions)."""
    delete = ("secretmanager.secrets.delete",) if settings.deletion_policy == "DELETE" else ()
    return MANAGED_PERMISSIONS + delete


def _covered(ctx: Context, project: str) -> Line:
    """TestIamPermissions on an existing secret the condition covers; before any exists, GetSecret on a covered
    name (NOT_FOUND proves secrets.get; TestIamPermissions answers an empty set for a secret that does not exist)."""
    template, required = ctx.settings.secret_id_template, required_permissions(ctx.settings)
    ids = [c for c, p in ctx.cluster_projects.items() if ctx.settings.secret_project_id or p == project]
    for cluster_id in ids:
        name = f"projects/{project}/secrets/{template.format(cluster_id=cluster_id)}"
        try:
            answer = ctx.secrets.test_iam_permissions(request={"resource": name, "permissions": required})
            granted = set(answer.permissions)
        except gexc.GoogleAPICallError as exc:
            return Line("secret-manager.covered", False, f"TestIamPermissions on {name}: {_code(exc)}", _retry())
        if granted:
            missing = [p for p in required if p not in granted]
            if missing:
                text = f"TestIamPermissions on {name}: missing {', '.join(missing)}"
                return Line("secret-manager.covered", False, text, _role_fix(ctx, project, missing))
            return Line("secret-manager.covered", True, f"TestIamPermissions on {name}: all {len(required)} granted")
    name = f"projects/{project}/secrets/{template.format(cluster_id=PROBE_CLUSTER)}"
    answer = _get_secret(ctx, name)
    if answer in ("NOT_FOUND", "OK"):
        text = f"secretmanager.secrets.get on {name} (a covered name; no cluster's secret exists yet to test the rest)"
        return Line("secret-manager.covered", True, text)
    return Line("secret-manager.covered", False, f"GetSecret on {name}: {answer}", _role_fix(ctx, project, required))


def _create(ctx: Context, project: str) -> Line:
    """secretmanager.secrets.create on the project, through Cloud Resource Manager's projects.testIamPermissions
    (Secret Manager's own takes secrets only; a CreateSecret would write)."""
    url = f"{ctx.resource_manager}/v3/projects/{project}:testIamPermissions"
    assert ctx.token is not None
    try:
        response = requests.post(
            url, json={"permissions": [CREATE]}, headers={"Authorization": f"Bearer {ctx.token()}"}, timeout=10.0
        )
    except requests.RequestException as exc:
        fix = "try again: Cloud Resource Manager did not answer"
        return Line(
            "secret-manager.create", False, f"projects.testIamPermissions on {project}: {type(exc).__name__}", fix
        )
    if response.status_code != 200:
        fix = (
            "enable cloudresourcemanager.googleapis.com in the runtime account's project "
            "(gcloud services enable cloudresourcemanager.googleapis.com --project PROJECT)"
        )
        return Line(
            "secret-manager.create", False, f"projects.testIamPermissions on {project}: {response.status_code}", fix
        )
    if CREATE in (response.json().get("permissions") or []):
        return Line("secret-manager.create", True, f"{CREATE} on projects/{project} (projects.testIamPermissions)")
    fix = create_fix(ctx, project)
    return Line("secret-manager.create", False, f"{CREATE} on projects/{project} is not granted", fix)


def create_fix(ctx: Context, project: str) -> str:
    return (
        f"grant {ctx.member} the custom role {CREATOR_ROLE} ({CREATE}) on project {project}, without a condition: "
        f"terraform apply (terraform/iam.tf runtime_secret_manager_creator), or gcloud projects add-iam-policy-binding "
        f"{project} --member {ctx.member} --role projects/{project}/roles/{CREATOR_ROLE} --condition None"
    )


def _outside(ctx: Context, project: str) -> Line:
    """A name with the template's prefix but not its suffix must be refused: GetSecret answers PERMISSION_DENIED."""
    name = f"projects/{project}/secrets/{ctx.settings.secret_id_template.format(cluster_id=PROBE_CLUSTER)}-outside"
    answer = _get_secret(ctx, name)
    if answer == "PERMISSION_DENIED":
        return Line("secret-manager.outside", True, f"a name outside SECRET_ID_TEMPLATE is refused ({name})")
    if answer in ("NOT_FOUND", "OK"):
        fix = outside_fix(ctx, project)
        return Line(
            "secret-manager.outside", False, f"GetSecret on {name} answered {answer}, not PERMISSION_DENIED", fix
        )
    return Line("secret-manager.outside", False, f"GetSecret on {name}: {answer}", _retry())


def outside_fix(ctx: Context, project: str) -> str:
    return (
        f"the runtime identity may read secrets the condition does not cover: keep only the conditioned "
        f"{MANAGED_ROLE} binding (condition per-cluster-secrets-only) and remove every other Secret Manager role "
        f"of {ctx.member} in {project} (gcloud projects get-iam-policy {project} "
        f"--flatten=bindings --filter=bindings.members:{ctx.member})"
    )


def _get_secret(ctx: Context, name: str) -> str:
    try:
        ctx.secrets.get_secret(name=name, retry=None, timeout=10.0)
    except gexc.GoogleAPICallError as exc:
        return _code(exc)
    return "OK"


def _code(exc: gexc.GoogleAPICallError) -> str:
    code = getattr(exc, "grpc_status_code", None)
    return str(getattr(code, "name", None) or type(exc).__name__)


def _role_fix(ctx: Context, project: str, missing: list[str] | tuple[str, ...]) -> str:
    return (
        f"the custom role {MANAGED_ROLE} in {project}, bound to {ctx.member} with the condition "
        f"per-cluster-secrets-only, must hold {', '.join(missing)}: terraform apply (terraform/iam.tf "
        f"runtime_secret_manager_managed), or gcloud iam roles update {MANAGED_ROLE} --project {project} "
        f"--add-permissions {','.join(missing)}"
    )


def _retry() -> str:
    return "Secret Manager did not answer: try again"


# -- management clusters --------------------------------------------------------------------------
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


def management_cluster(ctx: Context, name: str) -> list[Line]:
    """GetCluster and the endpoint for the configured mode; then, through it, RBAC and the admission policy."""
    ctx.clusters.invalidate(name)
    mode = ctx.settings.management_endpoint
    try:
        api = ctx.clusters.api_for(name, ctx.deadline())
    except AdapterError as exc:
        return [
            Line(
                "gke",
                False,
                f"{name}: GetCluster or its {mode} endpoint failed ({exc.reason})",
                _gke_fix(ctx, name, exc),
            )
        ]
    host = str(api.api_client.configuration.host)
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


def _access_reviews(ctx: Context, name: str, api: Any) -> list[Line]:
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
            f"ClusterRole hyperfleet-pullsecret-adapter must allow {', '.join(denied)} on secrets and be bound to "
            f"{ctx.runtime}: {MANIFESTS}"
        )
    if allowed_reads:
        fixes.append(
            f"{ctx.runtime} must not {', '.join(allowed_reads)} Secrets: remove the binding that grants it "
            f"(kubectl get clusterrolebindings,rolebindings -A -o wide | grep {ctx.runtime})"
        )
    problems = [f"{v} denied" for v in denied] + [f"{v} allowed" for v in allowed_reads]
    return Line("kubernetes.rbac", False, f"{name}: Secrets in {namespace}: {', '.join(problems)}", "; ".join(fixes))


def _policy(ctx: Context, name: str, api: Any) -> Line:
    documents: list[dict[str, Any]] = []
    for kind, read in (
        ("ValidatingAdmissionPolicy", api.read_validating_admission_policy),
        ("ValidatingAdmissionPolicyBinding", api.read_validating_admission_policy_binding),
    ):
        try:
            documents.append(json.loads(read(POLICY_NAME, _preload_content=False, _request_timeout=10.0).data))
        except Exception as exc:  # noqa: BLE001 - every failure is a line naming its fix
            status = kube_status(exc)
            code = status[0] if status is not None else type(exc).__name__
            why = {404: "is not installed", 403: f"may not be read by {ctx.runtime}"}.get(
                status[0] if status is not None else 0, f"answered {code}"
            )
            return Line(
                "kubernetes.policy", False, f"{name}: {kind} {POLICY_NAME} {why}", f"apply this release's: {MANIFESTS}"
            )
    settings = ctx.settings
    release = admission_policy.expected(
        identity_email=ctx.runtime if "@" in ctx.runtime else None,
        namespace_pattern=settings.management_namespace_pattern.pattern,
        adapter_name=settings.adapter_name,
        secret_template=settings.kubernetes_secret_template,
    )
    problem = policy_problem(documents[0], documents[1], release)
    if problem is not None:
        return Line(
            "kubernetes.policy", False, f"{name}: {problem}", f"apply this release's policy and binding: {MANIFESTS}"
        )
    return Line("kubernetes.policy", True, f"{name}: admission policy {POLICY_NAME} and its binding are this release's")


# -- registries -----------------------------------------------------------------------------------
def registries(ctx: Context) -> list[Line]:
    settings = ctx.settings
    if settings.registry_verification == "off":
        return [Line("registries", None, "REGISTRY_VERIFICATION=off: the registries are not asked")]
    if ctx.source is None:
        return [Line("registries", None, "no platform pull secret was read: no registry to ask")]
    pending = ctx.registries.start(ctx.source, Deadline(settings.registry_deadline_s + 1.0))
    lines: list[Line] = []
    for registry, check in pending.result().checks.items():
        shown = safe_name(registry)
        if check.result in ("valid", "anonymous"):
            lines.append(Line("registries", True, f"{shown}: the handshake accepted the credential ({check.result})"))
        elif check.result == "skipped":
            lines.append(Line("registries", None, f"{shown}: not asked ({check.detail})"))
        elif check.result == "rejected":
            fix = f"add a new version of the platform pull secret with a working credential for {shown}"
            lines.append(Line("registries", False, f"{shown}: the registry refused the credential", fix))
        else:
            fix = (
                f"let the function reach {shown} over HTTPS (egress firewall or NAT; REGISTRY_ALLOWED_HOSTS for "
                "a private address), or list it in REGISTRY_SKIP_HOSTS"
            )
            lines.append(Line("registries", False, f"{shown}: no answer to the handshake ({check.detail})", fix))
    return lines
