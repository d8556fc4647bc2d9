"""The doctor checks every deployment has (`python -m pullsecret doctor`; pullsecret.doctor.run runs them).

Each check reads and never writes: list clusters, access the platform pull secret, Secret Manager's
TestIamPermissions and GetSecret, and the registries' auth handshake; the delivery mode adds its own
(pullsecret.delivery.direct.doctor, doctor_external_secrets). Each answers `Line`s: one thing proven or
refused, and for a refusal the fix, naming the role, permission or command. A Line never carries a credential:
its texts are built from resource names, permission names and rules (as pullsecret.errors' messages are), never
from payloads or answers' bodies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import certifi
import urllib3
from google.api_core import exceptions as gexc

from pullsecret import outbound
from pullsecret.doctor import identity
from pullsecret.doctor.kit import (
    MANAGED_ROLE,
    PROBE_CLUSTER,
    Context,
    Line,
    code_of,
    retry_fix,
)
from pullsecret.errors import AdapterError
from pullsecret.hyperfleet.answers import shown_url
from pullsecret.model import names, preconditions
from pullsecret.outbound import deadline_io
from pullsecret.registry.verification import safe_name
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings

if TYPE_CHECKING:
    pass

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
CREATOR_ROLE = "hyperfleetPullSecretCreator"
RESOURCE_MANAGER_TIMEOUT_S = 10.0  # projects.testIamPermissions, the whole call
CREATE = "secretmanager.secrets.create"  # checked on the project: not conditioned (terraform/iam.tf)
CLUSTER_IDS = 10  # clusters listed for names to ask about


# -- the HyperFleet API ---------------------------------------------------------------------------
def hyperfleet_api(ctx: Context) -> list[Line]:
    """List clusters; keep the ids and GCP project ids later checks name, only those valid as names (cluster
    owners choose them: they go into resource names and request URLs)."""
    url = shown_url(ctx.settings.hyperfleet_api_url)
    try:
        items, total = ctx.hyperfleet.list_clusters(page=1, size=CLUSTER_IDS)
    except AdapterError as exc:
        return [Line("hyperfleet-api", False, f"{url}: list clusters failed ({exc.reason})", _api_fix(ctx, exc))]
    refused = 0
    for item in items:
        cluster_id, project = item.get("id"), preconditions.project_id_of(item)
        if not names.cluster_id_safe(cluster_id) or (project is not None and not names.project_id_valid(project)):
            refused += 1
            continue
        ctx.cluster_projects[str(cluster_id)] = project
    counted = f"{total} cluster{'' if total == 1 else 's'}"
    lines = [Line("hyperfleet-api", True, f"{url} answers and accepts the adapter's token ({counted})")]
    if refused:
        text = f"{refused} listed cluster(s) with an id or GCP project id that is not a valid name: not asked about"
        lines.append(Line("hyperfleet-api", None, text))
    return lines


def _api_fix(ctx: Context, exc: AdapterError) -> str:
    settings = ctx.settings
    fix = identity.api_fix(ctx, exc)
    if fix is not None:
        return fix
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
    if exc.reason == "EndpointRedirected":
        return "HYPERFLEET_API_URL answers a redirect: set hyperfleet_api_url to the URL the API answers at"
    if exc.reason == "PermissionDenied":
        return f"the API or its gateway must let {ctx.runtime} list clusters and report statuses"
    return "make HYPERFLEET_API_URL reachable from where this runs (DNS, firewall, the function's VPC egress)"


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
            return Line("secret-manager.covered", False, f"TestIamPermissions on {name}: {code_of(exc)}", retry_fix())
        if granted:
            missing = [p for p in required if p not in granted]
            if missing:
                text = f"TestIamPermissions on {name}: missing {', '.join(missing)}"
                return Line("secret-manager.covered", False, text, _role_fix(ctx, project, missing))
            return Line("secret-manager.covered", True, f"TestIamPermissions on {name}: all {len(required)} granted")
    name = f"projects/{project}/secrets/{template.format(cluster_id=PROBE_CLUSTER)}"
    answer = get_secret(ctx, name)
    if answer in ("NOT_FOUND", "OK"):
        text = f"secretmanager.secrets.get on {name} (a covered name; no cluster's secret exists yet to test the rest)"
        return Line("secret-manager.covered", True, text)
    return Line("secret-manager.covered", False, f"GetSecret on {name}: {answer}", _role_fix(ctx, project, required))


def _create(ctx: Context, project: str) -> Line:
    """secretmanager.secrets.create on the project, through Cloud Resource Manager's projects.testIamPermissions
    (Secret Manager's own takes secrets only; a CreateSecret would write)."""
    url = f"{ctx.resource_manager}/v3/projects/{project}:testIamPermissions"
    assert ctx.token is not None
    sent = outbound.request(token=ctx.token(), json_body={"permissions": [CREATE]}, trace=False)
    http = deadline_io.pool_manager(ca_certs=certifi.where(), retries=False)
    try:
        with deadline_io.within(Deadline(RESOURCE_MANAGER_TIMEOUT_S)):  # connect, headers and body: deadline_io
            response = http.request(
                "POST", url, body=sent.body, headers=sent.headers, timeout=RESOURCE_MANAGER_TIMEOUT_S
            )
    except urllib3.exceptions.HTTPError as exc:
        fix = "try again: Cloud Resource Manager did not answer"
        return Line(
            "secret-manager.create", False, f"projects.testIamPermissions on {project}: {type(exc).__name__}", fix
        )
    if response.status != 200:
        fix = (
            "enable cloudresourcemanager.googleapis.com in the runtime account's project "
            "(gcloud services enable cloudresourcemanager.googleapis.com --project PROJECT)"
        )
        return Line("secret-manager.create", False, f"projects.testIamPermissions on {project}: {response.status}", fix)
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
    answer = get_secret(ctx, name)
    if answer == "PERMISSION_DENIED":
        return Line("secret-manager.outside", True, f"a name outside SECRET_ID_TEMPLATE is refused ({name})")
    if answer in ("NOT_FOUND", "OK"):
        fix = outside_fix(ctx, project)
        return Line(
            "secret-manager.outside", False, f"GetSecret on {name} answered {answer}, not PERMISSION_DENIED", fix
        )
    return Line("secret-manager.outside", False, f"GetSecret on {name}: {answer}", retry_fix())


def outside_fix(ctx: Context, project: str) -> str:
    return (
        f"the runtime identity may read secrets the condition does not cover: keep only the conditioned "
        f"{MANAGED_ROLE} binding (condition per-cluster-secrets-only) and remove every other Secret Manager role "
        f"of {ctx.member} in {project} (gcloud projects get-iam-policy {project} "
        f"--flatten=bindings --filter=bindings.members:{ctx.member})"
    )


def get_secret(ctx: Context, name: str) -> str:
    try:
        ctx.secrets.get_secret(name=name, retry=None, timeout=10.0)
    except gexc.GoogleAPICallError as exc:
        return code_of(exc)
    return "OK"


def _role_fix(ctx: Context, project: str, missing: list[str] | tuple[str, ...]) -> str:
    return (
        f"the custom role {MANAGED_ROLE} in {project}, bound to {ctx.member} with the condition "
        f"per-cluster-secrets-only, must hold {', '.join(missing)}: terraform apply (terraform/iam.tf "
        f"runtime_secret_manager_managed), or gcloud iam roles update {MANAGED_ROLE} --project {project} "
        f"--add-permissions {','.join(missing)}"
    )


# -- registries -----------------------------------------------------------------------------------
def registries(ctx: Context) -> list[Line]:
    settings = ctx.settings
    if settings.registry_verification == "off":
        return [Line("registries", None, "REGISTRY_VERIFICATION=off: the registries are not asked")]
    if ctx.source is None:
        return [Line("registries", None, "no platform pull secret was read: no registry to ask")]
    pending = ctx.registries.start(ctx.source, Deadline(settings.registry_deadline_s + 1.0))
    if pending is None:  # the verifier's own reading of REGISTRY_VERIFICATION
        return [Line("registries", None, "REGISTRY_VERIFICATION=off: the registries are not asked")]
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
