"""What the deployer (the principal running `terraform apply`) needs to create each resource of terraform/, held
against the roles `cloudbuild.yaml` grants it (terraform/README.md, Prerequisites, refers to the same list).

Three tables, each row citing the page it comes from:
- `RESOURCE_PERMISSIONS`: the permissions a resource type's create (and the read Terraform does right after)
  is checked for;
- `ROLE_PERMISSIONS`: the permissions of each predefined role the deployer is granted, as far as they matter
  here (a role holds more; a permission missing from a row is one the role does not have);
- `SCOPES`: where each resource's permissions are checked (the function project unless listed).

The deployer's roles are parsed from the comment at the top of cloudbuild.yaml: a line `#   on SCOPE ...:`
opens a scope, `#     roles/NAME ...` grants a role in it, and
a line `#     custom role instead: PERMISSION ...` names the alternative the comment offers, checked too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import hcl2
from hcl2 import SerializationOptions

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TERRAFORM_DIR = REPOSITORY_ROOT / "terraform"
CLOUDBUILD = REPOSITORY_ROOT / "cloudbuild.yaml"
OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)

FUNCTION_PROJECT = "function project"
SECRET_PROJECT = "secret project"
MANAGEMENT_PROJECT = "management project"
TOKEN_CLUSTER_PROJECT = "token cluster's project"
SOURCE_PROJECT = "source secret's project"
SOURCE_SECRET = "platform pull secret"
TOKEN_SECRET = "token secret"
SERVICE_TOKEN_SECRET = "Pull Secret Service token secret"
CA_BUNDLE_SECRET = "CA bundle secret"
KMS_KEY = "kms key"

# The scope words of cloudbuild.yaml's `#   on ...:` lines.
SCOPE_HEADINGS: dict[str, str] = {
    "the function project": FUNCTION_PROJECT,
    "each secret project": SECRET_PROJECT,
    "each management project": MANAGEMENT_PROJECT,
    "the token cluster's project": TOKEN_CLUSTER_PROJECT,
    "the platform pull secret's project": SOURCE_PROJECT,
    "the platform pull secret": SOURCE_SECRET,
    "the HyperFleet token secret": TOKEN_SECRET,
    "the Pull Secret Service token secret": SERVICE_TOKEN_SECRET,
    "each CA bundle secret": CA_BUNDLE_SECRET,
    "each CMEK key": KMS_KEY,
}

_IAM = "https://cloud.google.com/iam/docs/roles-permissions"
# type -> (the page saying which permissions its API methods need, the permissions)
RESOURCE_PERMISSIONS: dict[str, tuple[str, frozenset[str]]] = {
    "google_project_service": (
        "https://cloud.google.com/service-usage/docs/access-control",
        frozenset({"serviceusage.services.enable", "serviceusage.services.get"}),
    ),
    "google_project_service_identity": (
        "https://cloud.google.com/service-usage/docs/access-control",  # services.generateServiceIdentity
        frozenset({"serviceusage.services.use"}),
    ),
    "google_service_account": (
        "https://cloud.google.com/iam/docs/service-accounts-create#permissions",
        frozenset({"iam.serviceAccounts.create", "iam.serviceAccounts.get"}),
    ),
    "google_project_iam_custom_role": (
        "https://cloud.google.com/iam/docs/creating-custom-roles#required-roles",
        frozenset({"iam.roles.create", "iam.roles.get"}),
    ),
    "google_project_iam_member": (
        "https://cloud.google.com/iam/docs/granting-changing-revoking-access#required-permissions",
        frozenset({"resourcemanager.projects.getIamPolicy", "resourcemanager.projects.setIamPolicy"}),
    ),
    "data.google_project": (
        "https://cloud.google.com/resource-manager/docs/access-control-proj#permissions",
        frozenset({"resourcemanager.projects.get"}),
    ),
    "google_secret_manager_secret_iam_member": (
        "https://cloud.google.com/secret-manager/docs/access-control",
        frozenset({"secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy"}),
    ),
    "google_kms_crypto_key_iam_member": (
        "https://cloud.google.com/kms/docs/reference/permissions-and-roles",
        frozenset({"cloudkms.cryptoKeys.getIamPolicy", "cloudkms.cryptoKeys.setIamPolicy"}),
    ),
    "google_cloud_run_v2_service_iam_member": (
        "https://cloud.google.com/run/docs/reference/iam/permissions",
        frozenset({"run.services.getIamPolicy", "run.services.setIamPolicy"}),
    ),
    "google_cloudfunctions2_function": (
        # Deploying with a runtime service account also needs actAs on it (the same page, "Additional
        # configuration for deployment").
        "https://cloud.google.com/functions/docs/reference/iam/permissions",
        frozenset(
            {
                "cloudfunctions.functions.create",
                "cloudfunctions.functions.get",
                "cloudfunctions.operations.get",
                "iam.serviceAccounts.actAs",
            }
        ),
    ),
    "google_cloudfunctions2_function_iam_member": (
        "https://cloud.google.com/functions/docs/reference/iam/permissions",
        frozenset({"cloudfunctions.functions.getIamPolicy", "cloudfunctions.functions.setIamPolicy"}),
    ),
    "google_eventarc_trigger": (
        "https://cloud.google.com/eventarc/docs/access-control",
        frozenset({"eventarc.triggers.create", "eventarc.triggers.get", "iam.serviceAccounts.actAs"}),
    ),
    "google_pubsub_topic": (
        "https://cloud.google.com/pubsub/docs/access-control",
        frozenset({"pubsub.topics.create", "pubsub.topics.get"}),
    ),
    "google_pubsub_subscription": (
        "https://cloud.google.com/pubsub/docs/access-control",
        frozenset({"pubsub.subscriptions.create", "pubsub.subscriptions.get", "pubsub.topics.attachSubscription"}),
    ),
    "google_pubsub_topic_iam_member": (
        "https://cloud.google.com/pubsub/docs/access-control",
        frozenset({"pubsub.topics.getIamPolicy", "pubsub.topics.setIamPolicy"}),
    ),
    "google_service_account_iam_member": (
        "https://cloud.google.com/iam/docs/manage-access-service-accounts#required-permissions",
        frozenset({"iam.serviceAccounts.getIamPolicy", "iam.serviceAccounts.setIamPolicy"}),
    ),
    "google_storage_bucket": (
        "https://cloud.google.com/storage/docs/access-control/iam-permissions",
        frozenset({"storage.buckets.create", "storage.buckets.get"}),
    ),
    "google_storage_bucket_object": (
        "https://cloud.google.com/storage/docs/access-control/iam-permissions",
        frozenset({"storage.objects.create", "storage.objects.get"}),
    ),
    "google_artifact_registry_repository": (
        "https://cloud.google.com/artifact-registry/docs/access-control#permissions",
        frozenset({"artifactregistry.repositories.create", "artifactregistry.repositories.get"}),
    ),
    "google_artifact_registry_repository_iam_member": (
        "https://cloud.google.com/artifact-registry/docs/access-control#permissions",
        frozenset({"artifactregistry.repositories.getIamPolicy", "artifactregistry.repositories.setIamPolicy"}),
    ),
    "google_logging_metric": (
        "https://cloud.google.com/logging/docs/access-control#permissions_and_roles",
        frozenset({"logging.logMetrics.create", "logging.logMetrics.get"}),
    ),
    "google_monitoring_alert_policy": (
        "https://cloud.google.com/monitoring/access-control#alert-policies",
        frozenset({"monitoring.alertPolicies.create", "monitoring.alertPolicies.get"}),
    ),
    "google_monitoring_dashboard": (
        "https://cloud.google.com/monitoring/access-control#dashboards",
        frozenset({"monitoring.dashboards.create", "monitoring.dashboards.get"}),
    ),
    # No Google API: local files and a timer.
    "data.archive_file": ("https://registry.terraform.io/providers/hashicorp/archive/latest/docs", frozenset()),
    "time_sleep": ("https://registry.terraform.io/providers/hashicorp/time/latest/docs/resources/sleep", frozenset()),
}

# terraform_data steps run gcloud as the deployer: what their scripts call (terraform/scripts/*.sh).
STEP_PERMISSIONS: dict[str, tuple[str, frozenset[str]]] = {
    "trigger_dead_letter": (
        "https://cloud.google.com/pubsub/docs/access-control",  # describe trigger; update subscription + its IAM
        frozenset(
            {
                "eventarc.triggers.get",
                "pubsub.subscriptions.get",
                "pubsub.subscriptions.update",
                "pubsub.subscriptions.getIamPolicy",
                "pubsub.subscriptions.setIamPolicy",
            }
        ),
    ),
    "fan_out_trigger_dead_letter": (
        "https://cloud.google.com/pubsub/docs/access-control",  # the same script as trigger_dead_letter
        frozenset(
            {
                "eventarc.triggers.get",
                "pubsub.subscriptions.get",
                "pubsub.subscriptions.update",
                "pubsub.subscriptions.getIamPolicy",
                "pubsub.subscriptions.setIamPolicy",
            }
        ),
    ),
    "release": (
        "https://developer.hashicorp.com/terraform/language/resources/terraform-data",  # the state alone, no API
        frozenset(),
    ),
    "rotation_trigger_ack_deadline": (
        "https://cloud.google.com/pubsub/docs/access-control",
        frozenset({"eventarc.triggers.get", "pubsub.subscriptions.get", "pubsub.subscriptions.update"}),
    ),
    "source_rotation_topic": (
        "https://cloud.google.com/secret-manager/docs/access-control",  # secrets describe / update --add-topics
        frozenset({"secretmanager.secrets.get", "secretmanager.secrets.update"}),
    ),
}

# Predefined roles, the permissions of each that matter here ({_IAM}/SERVICE#ROLE lists them all).
ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    # {_IAM}/serviceusage#serviceusage.serviceUsageAdmin
    "roles/serviceusage.serviceUsageAdmin": frozenset(
        {
            "serviceusage.services.enable",
            "serviceusage.services.disable",
            "serviceusage.services.get",
            "serviceusage.services.list",
            "serviceusage.services.use",
        }
    ),
    # {_IAM}/iam#iam.serviceAccountAdmin (no actAs)
    "roles/iam.serviceAccountAdmin": frozenset(
        {
            "iam.serviceAccounts.create",
            "iam.serviceAccounts.get",
            "iam.serviceAccounts.list",
            "iam.serviceAccounts.update",
            "iam.serviceAccounts.delete",
            "iam.serviceAccounts.getIamPolicy",
            "iam.serviceAccounts.setIamPolicy",
        }
    ),
    # {_IAM}/iam#iam.serviceAccountUser
    "roles/iam.serviceAccountUser": frozenset(
        {"iam.serviceAccounts.actAs", "iam.serviceAccounts.get", "iam.serviceAccounts.list"}
    ),
    # {_IAM}/iam#iam.roleAdmin
    "roles/iam.roleAdmin": frozenset(
        {"iam.roles.create", "iam.roles.get", "iam.roles.list", "iam.roles.update", "iam.roles.delete"}
    ),
    # {_IAM}/resourcemanager#resourcemanager.projectIamAdmin
    "roles/resourcemanager.projectIamAdmin": frozenset(
        {
            "resourcemanager.projects.get",
            "resourcemanager.projects.getIamPolicy",
            "resourcemanager.projects.setIamPolicy",
        }
    ),
    # {_IAM}/cloudfunctions#cloudfunctions.developer: "Can't set IAM policies" (no setIamPolicy).
    "roles/cloudfunctions.developer": frozenset(
        {
            "cloudfunctions.functions.create",
            "cloudfunctions.functions.get",
            "cloudfunctions.functions.update",
            "cloudfunctions.functions.delete",
            "cloudfunctions.functions.getIamPolicy",
            "cloudfunctions.operations.get",
        }
    ),
    # {_IAM}/cloudfunctions#cloudfunctions.admin
    "roles/cloudfunctions.admin": frozenset(
        {
            "cloudfunctions.functions.create",
            "cloudfunctions.functions.get",
            "cloudfunctions.functions.update",
            "cloudfunctions.functions.delete",
            "cloudfunctions.functions.getIamPolicy",
            "cloudfunctions.functions.setIamPolicy",
            "cloudfunctions.operations.get",
        }
    ),
    # {_IAM}/run#run.admin
    "roles/run.admin": frozenset({"run.services.get", "run.services.getIamPolicy", "run.services.setIamPolicy"}),
    # {_IAM}/eventarc#eventarc.admin
    "roles/eventarc.admin": frozenset(
        {"eventarc.triggers.create", "eventarc.triggers.get", "eventarc.triggers.update", "eventarc.triggers.delete"}
    ),
    # {_IAM}/pubsub#pubsub.admin
    "roles/pubsub.admin": frozenset(
        {
            "pubsub.topics.create",
            "pubsub.topics.get",
            "pubsub.topics.attachSubscription",
            "pubsub.topics.getIamPolicy",
            "pubsub.topics.setIamPolicy",
            "pubsub.subscriptions.create",
            "pubsub.subscriptions.get",
            "pubsub.subscriptions.update",
            "pubsub.subscriptions.getIamPolicy",
            "pubsub.subscriptions.setIamPolicy",
        }
    ),
    # {_IAM}/storage#storage.admin
    "roles/storage.admin": frozenset(
        {"storage.buckets.create", "storage.buckets.get", "storage.objects.create", "storage.objects.get"}
    ),
    # {_IAM}/artifactregistry#artifactregistry.admin
    "roles/artifactregistry.admin": frozenset(
        {
            "artifactregistry.repositories.create",
            "artifactregistry.repositories.get",
            "artifactregistry.repositories.getIamPolicy",
            "artifactregistry.repositories.setIamPolicy",
        }
    ),
    # {_IAM}/logging#logging.configWriter
    "roles/logging.configWriter": frozenset(
        {"logging.logMetrics.create", "logging.logMetrics.get", "logging.logMetrics.update"}
    ),
    # {_IAM}/monitoring#monitoring.alertPolicyEditor
    "roles/monitoring.alertPolicyEditor": frozenset(
        {"monitoring.alertPolicies.create", "monitoring.alertPolicies.get", "monitoring.alertPolicies.update"}
    ),
    # {_IAM}/monitoring#monitoring.dashboardEditor
    "roles/monitoring.dashboardEditor": frozenset(
        {"monitoring.dashboards.create", "monitoring.dashboards.get", "monitoring.dashboards.update"}
    ),
    # {_IAM}/logging#logging.logWriter
    "roles/logging.logWriter": frozenset({"logging.logEntries.create"}),
    # {_IAM}/cloudbuild#cloudbuild.builds.viewer: the deploy build finds this commit's test build
    "roles/cloudbuild.builds.viewer": frozenset({"cloudbuild.builds.get", "cloudbuild.builds.list"}),
    # {_IAM}/secretmanager#secretmanager.admin
    "roles/secretmanager.admin": frozenset(
        {
            "secretmanager.secrets.get",
            "secretmanager.secrets.update",
            "secretmanager.secrets.getIamPolicy",
            "secretmanager.secrets.setIamPolicy",
        }
    ),
    # {_IAM}/cloudkms#cloudkms.admin
    "roles/cloudkms.admin": frozenset({"cloudkms.cryptoKeys.getIamPolicy", "cloudkms.cryptoKeys.setIamPolicy"}),
}

# Resources whose permissions are checked outside the function project (address without the type's
# `data.` prefix for data sources).
SCOPES: dict[str, str] = {
    "google_project_service.secret_project_secretmanager": SECRET_PROJECT,
    "google_project_iam_custom_role.secret_manager_managed": SECRET_PROJECT,
    "google_project_iam_custom_role.secret_manager_creator": SECRET_PROJECT,
    "google_project_iam_member.runtime_secret_manager_managed": SECRET_PROJECT,
    "google_project_iam_member.runtime_secret_manager_creator": SECRET_PROJECT,
    "google_project_iam_custom_role.secret_manager_record_keeper": SECRET_PROJECT,
    "google_project_iam_member.runtime_secret_manager_record_keeper": SECRET_PROJECT,
    "data.google_project.secret_projects": SECRET_PROJECT,
    "google_project_iam_member.runtime_cluster_viewer": MANAGEMENT_PROJECT,
    "google_project_iam_custom_role.cluster_connect": MANAGEMENT_PROJECT,
    "google_project_iam_member.runtime_cluster_connect": MANAGEMENT_PROJECT,
    # The ServiceAccount token's cluster (HyperFleet's regional cluster): a project of its own, in general neither the
    # function's nor a management project (issue 51, item 5: it was taken for a management project, and nothing
    # granted the deployer anything there).
    "google_project_iam_custom_role.token_cluster": TOKEN_CLUSTER_PROJECT,
    "google_project_iam_member.runtime_token_cluster": TOKEN_CLUSTER_PROJECT,
    # var.operators (operators.tf): the operator CLI's roles beside the runtime account's.
    "google_project_iam_custom_role.operator_secrets": SECRET_PROJECT,
    "google_project_iam_member.operator_secrets": SECRET_PROJECT,
    "google_project_iam_custom_role.operator_lister": SECRET_PROJECT,
    "google_project_iam_member.operator_lister": SECRET_PROJECT,
    "google_project_iam_custom_role.operator_clusters": MANAGEMENT_PROJECT,
    "google_project_iam_member.operator_clusters": MANAGEMENT_PROJECT,
    # rekey's own account (issue 48, item 5): its progress records in each secret project, the platform pull secret.
    "google_project_iam_custom_role.rekey_records": SECRET_PROJECT,
    "google_project_iam_member.rekey_records": SECRET_PROJECT,
    "google_project_iam_member.rekey_record_creator": SECRET_PROJECT,
    "google_secret_manager_secret_iam_member.rekey_pull_secret_source": SOURCE_SECRET,
    "google_project_service_identity.secretmanager": SOURCE_PROJECT,
    "google_secret_manager_secret_iam_member.runtime_pull_secret_source": SOURCE_SECRET,
    "terraform_data.source_rotation_topic": SOURCE_SECRET,
    "google_secret_manager_secret_iam_member.runtime_hyperfleet_token": TOKEN_SECRET,
    "google_secret_manager_secret_iam_member.runtime_pull_secret_service_token": SERVICE_TOKEN_SECRET,
    "google_secret_manager_secret_iam_member.runtime_ca_bundle": CA_BUNDLE_SECRET,
}

_SCOPE_LINE = re.compile(r"^#   on (.+):$")
_ROLE_LINE = re.compile(r"^#     (roles/[A-Za-z.]+)")
_PERMISSION = re.compile(r"\b[a-z]+\.[a-zA-Z]+\.[a-zA-Z]+\b")


def resources(directory: Path = TERRAFORM_DIR) -> dict[str, tuple[str, dict[str, Any]]]:
    """address -> (type key of RESOURCE_PERMISSIONS, body) for every resource and data source in DIRECTORY."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted(directory.glob("*.tf")):
        with path.open() as handle:
            parsed = hcl2.load(handle, serialization_options=OPTIONS)
        for section, prefix in (("resource", ""), ("data", "data.")):
            for entry in parsed.get(section, []):
                for kind, named in entry.items():
                    for name, body in named.items():
                        found[f"{prefix}{kind}.{name}"] = (f"{prefix}{kind}", body)
    return found


def deployer_grants(text: str) -> dict[str, tuple[set[str], set[str] | None]]:
    """scope -> (predefined roles, the permissions of the custom role offered instead, or None) from the comment."""
    grants: dict[str, tuple[set[str], set[str] | None]] = {}
    scope: str | None = None
    for line in text.splitlines():
        if not line.startswith("#"):
            if grants:
                break  # the comment block has ended
            continue
        opened = _SCOPE_LINE.match(line)
        if opened:
            scope = SCOPE_HEADINGS.get(opened.group(1).strip())
            if scope is None:
                raise ValueError(f"cloudbuild.yaml: unknown deployer scope {opened.group(1)!r}")
            grants.setdefault(scope, (set(), None))
            continue
        if scope is None:
            continue
        if not line.startswith("#     "):
            scope = None
            continue
        roles, custom = grants[scope]
        role = _ROLE_LINE.match(line)
        if role:
            roles.add(role.group(1))
        elif "custom role instead:" in line:
            grants[scope] = (roles, (custom or set()) | set(_PERMISSION.findall(line.split(":", 1)[1])))
    return grants


def needed(address: str, kind: str) -> tuple[str, frozenset[str]]:
    """(doc page, permissions) the deployer needs for one resource; KeyError names a type with no row."""
    if kind == "terraform_data":
        return STEP_PERMISSIONS[address.split(".", 1)[1]]
    return RESOURCE_PERMISSIONS[kind]


def problems(
    found: Mapping[str, tuple[str, dict[str, Any]]],
    grants: Mapping[str, tuple[set[str], set[str] | None]],
    *,
    role_permissions: Mapping[str, frozenset[str]] = ROLE_PERMISSIONS,
) -> list[str]:
    """Every permission some resource needs that the deployer's roles (or the custom-role alternative) lack."""
    out: list[str] = []
    for address, (kind, _body) in sorted(found.items()):
        try:
            page, permissions = needed(address, kind)
        except KeyError:
            out.append(f"{address}: no row for {kind} in tests/infra/deployer_permissions.py")
            continue
        scope = SCOPES.get(address, FUNCTION_PROJECT)
        roles, custom = grants.get(scope, (set(), None))
        unknown = sorted(r for r in roles if r not in role_permissions)
        if unknown:
            out.append(f"{address}: roles {unknown} granted on the {scope} have no permission list here")
        granted: set[str] = set().union(*(role_permissions.get(r, frozenset()) for r in roles))
        missing = sorted(permissions - granted)
        if missing:
            out.append(f"{address}: the deployer lacks {', '.join(missing)} on the {scope} ({page})")
        if custom is not None and permissions - custom:
            gap = ", ".join(sorted(permissions - custom))
            out.append(f"{address}: the custom role cloudbuild.yaml offers on the {scope} lacks {gap} ({page})")
    return out


def scoped_elsewhere(found: Mapping[str, tuple[str, dict[str, Any]]]) -> Iterable[str]:
    """Addresses whose `project` is not var.project_id (each must be in SCOPES)."""
    for address, (_kind, body) in found.items():
        project = body.get("project")
        if isinstance(project, str) and project != "${var.project_id}":
            yield address
