# ---------------------------------------------------------------------------
# Identities. No service account keys are created anywhere: the function runs as the
# runtime account on Cloud Run, Eventarc mints OIDC tokens for the trigger account.
# ---------------------------------------------------------------------------

resource "google_service_account" "runtime" {
  project      = var.project_id
  account_id   = "hf-pullsecret-run${local.name_suffix}"
  display_name = "HyperFleet pull-secret adapter (runtime)"
  description  = "Runtime identity of ${local.function_name}; also its Kubernetes user on the management clusters."

  depends_on = [time_sleep.api_propagation] # iam.googleapis.com must be on first
}

resource "google_service_account" "trigger" {
  project      = var.project_id
  account_id   = "hf-pullsecret-trigger${local.name_suffix}"
  display_name = "HyperFleet pull-secret adapter (Eventarc trigger)"
  description  = "Identity Eventarc uses to invoke ${local.function_name}; may only invoke it."

  depends_on = [time_sleep.api_propagation] # iam.googleapis.com must be on first
}

# Builds the function's container (instead of the default compute/Cloud Build account, which
# new projects leave without roles).
resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "hf-pullsecret-build${local.name_suffix}"
  display_name = "HyperFleet pull-secret adapter (function build)"
  description  = "Cloud Build identity for building ${local.function_name}'s image."

  depends_on = [time_sleep.api_propagation] # iam.googleapis.com must be on first
}

# ---------------------------------------------------------------------------
# Secret Manager: per-cluster secrets. Two custom roles, because IAM Conditions can only
# narrow what is checked against a secret's own name:
#   * secretmanager.secrets.create is checked against the parent project
#     (resource.name = projects/NUMBER), so a name-prefix condition would always deny it.
#     That single permission is granted unconditioned; the function only ever creates
#     ids of the form hyperfleet-{cluster_id}-pull-secret.
#   * secretmanager.secrets.update (a secret's labels, annotations, topics, expiry, ...) is needed only on
#     the rotation progress record (pullsecret/source/progress.py, progress_secret_id): a role of its own, bound
#     on that one name, so a stolen runtime token cannot re-point a cluster secret's notifications or
#     rewrite its labels.
#   * everything else is conditioned on the ids SECRET_ID_TEMPLATE produces (PREFIX...SUFFIX, e.g.
#     hyperfleet-...-pull-secret), for the secret and its versions, so the function cannot read,
#     change or delete any other secret in these projects (a prefix alone would also cover e.g. a
#     hyperfleet-api-token secret). variables.tf refuses a configuration whose source or token
#     secrets would fall under it.
# Resource names in conditions use the project NUMBER (that is what Secret Manager reports); the
# condition uses only startsWith / endsWith / extract, the functions IAM documents for resource.name.
# ---------------------------------------------------------------------------

locals {
  # Used by the function today or by its RETAIN_VERSIONS / DELETION_POLICY handling.
  secret_manager_managed_base_permissions = [
    "secretmanager.secrets.get",      # ownership label before the first write; the rotation progress record
    "secretmanager.versions.add",     # store a new version only when the content changed
    "secretmanager.versions.access",  # read back / verify what was stored, compare with a concurrent write
    "secretmanager.versions.get",     # a version's number or creation time (repair, lineage after a race)
    "secretmanager.versions.list",    # retention: find versions beyond RETAIN_VERSIONS
    "secretmanager.versions.destroy", # retention, and the older copy of a concurrent duplicate
    "secretmanager.versions.disable", # DELETION_POLICY=DISABLE
  ]
  # Only granted when DELETION_POLICY=DELETE.
  secret_manager_delete_permissions = ["secretmanager.secrets.delete"]
  # Only granted when KUBERNETES_DELIVERY=external-secrets: the read-modify-write of each cluster secret's allow
  # policy (pullsecret/delivery/external_secrets.py), under the same name condition as the rest.
  secret_manager_policy_permissions = ["secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy"]
  secret_manager_managed_permissions = concat(
    local.secret_manager_managed_base_permissions,
    var.deletion_policy == "DELETE" ? local.secret_manager_delete_permissions : [],
    var.kubernetes_delivery == "external-secrets" ? local.secret_manager_policy_permissions : [],
  )
  # PREFIX and SUFFIX of SECRET_ID_TEMPLATE (validated: {cluster_id} once, both non-empty).
  secret_id_prefix = split("{cluster_id}", var.secret_id_template)[0]
  secret_id_suffix = split("{cluster_id}", var.secret_id_template)[1]
  # The IAM condition (CEL) of the managed role, PROJECT_NUMBER standing for each secret project's number:
  # the secret itself (ends with SUFFIX) or one of its versions (the id before /versions/ ends with SUFFIX).
  # The rotation progress record: SECRET_ID_TEMPLATE for _rotation_<adapter_name> (a name no cluster has).
  # Equality with startsWith/endsWith only: a secret id has no "/", so the name is exactly that secret's.
  rotation_record_secret_id = "${local.secret_id_prefix}_rotation_${var.adapter_name}${local.secret_id_suffix}"
  # The rekey progress record (`python -m pullsecret rekey`): SECRET_ID_TEMPLATE for _rekey_<adapter_name>.
  rekey_record_secret_id    = "${local.secret_id_prefix}_rekey_${var.adapter_name}${local.secret_id_suffix}"
  rotation_record_condition = "(resource.name.startsWith(\"projects/PROJECT_NUMBER/secrets/${local.rotation_record_secret_id}\") && resource.name.endsWith(\"/secrets/${local.rotation_record_secret_id}\")) || (resource.name.startsWith(\"projects/PROJECT_NUMBER/secrets/${local.rekey_record_secret_id}\") && resource.name.endsWith(\"/secrets/${local.rekey_record_secret_id}\"))"
  secret_manager_condition  = "resource.name.startsWith(\"projects/PROJECT_NUMBER/secrets/${local.secret_id_prefix}\") && (resource.name.endsWith(\"${local.secret_id_suffix}\") || resource.name.extract(\"projects/PROJECT_NUMBER/secrets/{id}/versions/\").endsWith(\"${local.secret_id_suffix}\"))"
}

resource "google_project_iam_custom_role" "secret_manager_managed" {
  for_each = local.secret_project_ids

  project     = each.value
  role_id     = "hyperfleetPullSecretManager${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: manage hyperfleet-* secrets"
  description = "Exactly the Secret Manager permissions the pull-secret adapter uses on its own secrets (bound with a hyperfleet- name condition)."
  permissions = local.secret_manager_managed_permissions
  stage       = "GA"

  # iam.googleapis.com (the deployer's quota project) and the project's Secret Manager API first.
  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_custom_role" "secret_manager_creator" {
  for_each = local.secret_project_ids

  project     = each.value
  role_id     = "hyperfleetPullSecretCreator${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: create secrets"
  description = "secretmanager.secrets.create only; cannot be conditioned on the secret name (checked against the project)."
  permissions = ["secretmanager.secrets.create"]
  stage       = "GA"

  # iam.googleapis.com (the deployer's quota project) and the project's Secret Manager API first.
  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_custom_role" "secret_manager_record_keeper" {
  for_each = local.secret_project_ids

  project     = each.value
  role_id     = "hyperfleetPullSecretRecordKeeper${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: update its rotation progress record"
  description = "secretmanager.secrets.update only; bound on the rotation progress record's name alone."
  permissions = ["secretmanager.secrets.update"]
  stage       = "GA"

  # iam.googleapis.com (the deployer's quota project) and the project's Secret Manager API first.
  depends_on = [time_sleep.api_propagation]
}

data "google_project" "secret_projects" {
  for_each = local.secret_project_ids

  project_id = each.value

  depends_on = [google_project_service.resource_manager] # never the API set: main.tf, data.google_project.this
}

resource "google_project_iam_member" "runtime_secret_manager_managed" {
  for_each = local.secret_project_ids

  project = each.value
  role    = google_project_iam_custom_role.secret_manager_managed[each.value].id
  member  = google_service_account.runtime.member

  condition {
    title       = "per-cluster-secrets-only"
    description = "Only secrets (and their versions) named like SECRET_ID_TEMPLATE: ${var.secret_id_template}."
    expression  = replace(local.secret_manager_condition, "PROJECT_NUMBER", data.google_project.secret_projects[each.value].number)
  }

  lifecycle {
    # Another environment's secret project (its label, set by the bootstrap) is refused unless shared explicitly:
    # sharing gives this instance an unconditioned secrets.create there, and its deployer projectIamAdmin.
    precondition {
      condition     = contains(concat(["", var.environment], var.secret_project_shared_with), lookup(data.google_project.secret_projects[each.value].effective_labels, "hyperfleet-environment", "")) || var.environment == ""
      error_message = "This secret project is labelled hyperfleet-environment for another environment: give this environment a secret project of its own (terraform/README.md, \"Environments\"), or list that environment in secret_project_shared_with to share it on purpose."
    }
  }
}

resource "google_project_iam_member" "runtime_secret_manager_record_keeper" {
  for_each = local.secret_project_ids

  project = each.value
  role    = google_project_iam_custom_role.secret_manager_record_keeper[each.value].id
  member  = google_service_account.runtime.member

  condition {
    title       = "rotation-progress-record-only"
    description = "Only the progress records ${local.rotation_record_secret_id} and ${local.rekey_record_secret_id}."
    expression  = replace(local.rotation_record_condition, "PROJECT_NUMBER", data.google_project.secret_projects[each.value].number)
  }
}

# Unconditioned on purpose: see the comment above (create is checked against the project).
resource "google_project_iam_member" "runtime_secret_manager_creator" {
  for_each = local.secret_project_ids

  project = each.value
  role    = google_project_iam_custom_role.secret_manager_creator[each.value].id
  member  = google_service_account.runtime.member
}

# SECRET_KMS_KEY: Secret Manager encrypts a CMEK secret's payload as the Secret Manager service agent of the project
# that holds the secret, so each secret project's agent must be able to use the key (one key, or one per replication
# location when the name contains {location}). That agent and its grant are the secret project's, shared by every
# instance that keeps secrets there (production's, staging's, a second region's): made once per project outside every
# root's state, by the bootstrap (terraform/scripts/bootstrap.sh; issue 51, item 7), so that no root's destroy removes
# the grant another instance's writes rely on. The roots forget the grant an earlier release made (removed blocks in
# environments/*/main.tf) without deleting it.

# The platform pull secret: read access on that one secret only, in platform mode only (service mode has no
# platform secret: the runtime account can read no credential shared by every cluster).
resource "google_secret_manager_secret_iam_member" "runtime_pull_secret_source" {
  count = local.pull_secret_service ? 0 : 1

  project   = local.pull_secret_source_project
  secret_id = local.pull_secret_source_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

# The HyperFleet API token, mounted into the function as a file (token-file only).
resource "google_secret_manager_secret_iam_member" "runtime_hyperfleet_token" {
  count = var.hyperfleet_api_auth == "token-file" ? 1 : 0

  project   = local.hyperfleet_token_project
  secret_id = local.hyperfleet_token_secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

# The Pull Secret Service's bearer token, mounted into the function as a file (service mode, token-file only).
resource "google_secret_manager_secret_iam_member" "runtime_pull_secret_service_token" {
  count = local.pull_secret_service_token_file ? 1 : 0

  project   = local.pull_secret_service_token_project
  secret_id = local.pull_secret_service_token_secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

# Each private root CA's PEM (ca_bundles.tf), mounted into the function as a file: that secret only.
resource "google_secret_manager_secret_iam_member" "runtime_ca_bundle" {
  for_each = local.ca_bundle_secret_names

  project   = split("/", each.value)[1]
  secret_id = split("/", each.value)[3]
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

# ---------------------------------------------------------------------------
# GKE: read the management clusters' endpoint and CA (container.clusters.get) and reach the
# Kubernetes API as the runtime account. IAM Conditions are not supported on GKE clusters,
# so this is per project; what the account may do inside a cluster is Kubernetes RBAC
# (terraform/kubernetes/), not IAM.
# ---------------------------------------------------------------------------

resource "google_project_iam_member" "runtime_cluster_viewer" {
  # external-secrets connects to no cluster: no GKE grant at all.
  for_each = var.kubernetes_delivery == "direct" ? local.management_cluster_projects : toset([])

  project = each.value
  role    = "roles/container.clusterViewer"
  member  = google_service_account.runtime.member
}

# The DNS-based control-plane endpoint authorizes each request with IAM's container.clusters.connect on the
# cluster before Kubernetes RBAC sees it (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation#dns-based_endpoint);
# clusterViewer does not hold it. Only with management_endpoint = "dns": a custom role with that one permission.
resource "google_project_iam_custom_role" "cluster_connect" {
  for_each = var.management_endpoint == "dns" && var.kubernetes_delivery == "direct" ? local.management_cluster_projects : toset([])

  project     = each.value
  role_id     = "hyperfleetPullSecretClusterConnect${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: reach the DNS endpoint"
  description = "container.clusters.connect only: the DNS-based control-plane endpoint's IAM check."
  permissions = ["container.clusters.connect"]
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_member" "runtime_cluster_connect" {
  for_each = var.management_endpoint == "dns" && var.kubernetes_delivery == "direct" ? local.management_cluster_projects : toset([])

  project = each.value
  role    = google_project_iam_custom_role.cluster_connect[each.value].id
  member  = google_service_account.runtime.member
}

# The token cluster (service-account-token): the runtime account reads the cluster's endpoint and CA
# (container.clusters.get) and, for the DNS endpoint, passes its IAM check (container.clusters.connect); in
# the cluster, the Role of output token_cluster_manifests lets it create tokens for its one ServiceAccount.
# Nothing more: no clusterViewer (list), no Kubernetes access through IAM (container.* developer roles).
resource "google_project_iam_custom_role" "token_cluster" {
  count = local.token_cluster_project == "" ? 0 : 1

  project     = local.token_cluster_project
  role_id     = "hyperfleetPullSecretTokenCluster${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: reach the token cluster"
  description = "Read the GKE endpoint and CA of the cluster that mints the adapter's ServiceAccount token."
  permissions = concat(["container.clusters.get"], var.management_endpoint == "dns" ? ["container.clusters.connect"] : [])
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_member" "runtime_token_cluster" {
  count = local.token_cluster_project == "" ? 0 : 1

  project = local.token_cluster_project
  role    = google_project_iam_custom_role.token_cluster[0].id
  member  = google_service_account.runtime.member
}

# ---------------------------------------------------------------------------
# Trigger: the trigger account may invoke this function's Cloud Run service and nothing else.
# ---------------------------------------------------------------------------

resource "google_cloud_run_v2_service_iam_member" "trigger_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.adapter.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.trigger.member
}

# Operators who may run `gcloud functions call` (terraform/README.md, Manual trigger). Never public.
resource "google_cloud_run_v2_service_iam_member" "manual_invokers" {
  for_each = toset(var.manual_invokers)

  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.adapter.service_config[0].service
  role     = "roles/run.invoker"
  member   = each.value
}

# `gcloud functions call` first reads the function (GetFunction: cloudfunctions.functions.get) to find its
# URL, then posts to it; viewer on this one function is that read.
resource "google_cloudfunctions2_function_iam_member" "manual_invokers_viewer" {
  for_each = toset(var.manual_invokers)

  project        = var.project_id
  location       = var.region
  cloud_function = google_cloudfunctions2_function.adapter.name
  role           = "roles/cloudfunctions.viewer"
  member         = each.value
}

# Eventarc's push subscription authenticates as the trigger account: the Pub/Sub service agent
# mints those OIDC tokens (needed explicitly in projects whose agent predates April 2021).
resource "google_service_account_iam_member" "pubsub_agent_trigger_token" {
  service_account_id = google_service_account.trigger.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_service_agent_member
}

# ---------------------------------------------------------------------------
# Build account: logs, push the image to this function's repository, read the source archive.
# ---------------------------------------------------------------------------

resource "google_project_iam_member" "build_log_writer" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = google_service_account.build.member
}

resource "google_artifact_registry_repository_iam_member" "build_writer" {
  project    = var.project_id
  location   = google_artifact_registry_repository.functions.location
  repository = google_artifact_registry_repository.functions.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.build.member
}

# The source archive: Cloud Functions copies it into its own gcf-v2-sources-* bucket and the build reads it there.
# The grant is the documented one, project-wide roles/storage.objectAdmin. Google's "Custom Service Account for
# Cloud Build" page for Cloud Run functions (https://cloud.google.com/functions/docs/securing/build-custom-sa; its
# 1st gen twin .../1stgendocs/securing/build-custom-sa) lists roles/logging.logWriter, roles/artifactregistry.writer,
# roles/storage.objectViewer and roles/storage.objectAdmin (objectAdmin holds every objectViewer permission), with
# no condition; the provider's builder example (cloudfunctions2_basic_builder) grants objectAdmin at project level
# too. The narrower objectViewer conditioned on bucket names this replaces is documented nowhere (issue 32, item 4).
resource "google_project_iam_member" "build_source_reader" {
  project = var.project_id
  role    = "roles/storage.objectAdmin"
  member  = google_service_account.build.member
}
