# ---------------------------------------------------------------------------
# Identities. No service account keys are created anywhere: the function runs as the
# runtime account on Cloud Run, Eventarc mints OIDC tokens for the trigger account.
# ---------------------------------------------------------------------------

resource "google_service_account" "runtime" {
  project      = var.project_id
  account_id   = "hf-pullsecret-run"
  display_name = "HyperFleet pull-secret adapter (runtime)"
  description  = "Runtime identity of ${var.function_name}; also its Kubernetes user on the management clusters."
}

resource "google_service_account" "trigger" {
  project      = var.project_id
  account_id   = "hf-pullsecret-trigger"
  display_name = "HyperFleet pull-secret adapter (Eventarc trigger)"
  description  = "Identity Eventarc uses to invoke ${var.function_name}; may only invoke it."
}

# Builds the function's container (instead of the default compute/Cloud Build account, which
# new projects leave without roles).
resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "hf-pullsecret-build"
  display_name = "HyperFleet pull-secret adapter (function build)"
  description  = "Cloud Build identity for building ${var.function_name}'s image."
}

# ---------------------------------------------------------------------------
# Secret Manager: per-cluster secrets. Two custom roles, because IAM Conditions can only
# narrow what is checked against a secret's own name:
#   * secretmanager.secrets.create is checked against the parent project
#     (resource.name = projects/NUMBER), so a name-prefix condition would always deny it.
#     That single permission is granted unconditioned; the function only ever creates
#     ids of the form hyperfleet-{cluster_id}-pull-secret.
#   * everything else is conditioned on the hyperfleet- prefix, so the function cannot read,
#     change or delete any other secret in these projects.
# Resource names in conditions use the project NUMBER (that is what Secret Manager reports).
# ---------------------------------------------------------------------------

locals {
  # Used by the function today or by its RETAIN_VERSIONS / DELETION_POLICY handling.
  secret_manager_managed_base_permissions = [
    "secretmanager.secrets.get",      # ownership labels, fingerprint and generation annotations
    "secretmanager.secrets.update",   # record fingerprint / generation (etag-guarded)
    "secretmanager.versions.add",     # store a new version only when the content changed
    "secretmanager.versions.access",  # read back / verify what was stored
    "secretmanager.versions.get",     # repair: the number of a newest version disabled or destroyed by hand
    "secretmanager.versions.list",    # retention: find versions beyond RETAIN_VERSIONS
    "secretmanager.versions.destroy", # retention: destroy them (disabled versions are still billed)
    "secretmanager.versions.disable", # DELETION_POLICY=DISABLE
  ]
  # Only granted when DELETION_POLICY=DELETE.
  secret_manager_delete_permissions = ["secretmanager.secrets.delete"]
  secret_manager_managed_permissions = concat(
    local.secret_manager_managed_base_permissions,
    var.deletion_policy == "DELETE" ? local.secret_manager_delete_permissions : [],
  )
}

resource "google_project_iam_custom_role" "secret_manager_managed" {
  for_each = local.secret_project_ids

  project     = each.value
  role_id     = "hyperfleetPullSecretManager"
  title       = "HyperFleet pull-secret adapter: manage hyperfleet-* secrets"
  description = "Exactly the Secret Manager permissions the pull-secret adapter uses on its own secrets (bound with a hyperfleet- name condition)."
  permissions = local.secret_manager_managed_permissions
  stage       = "GA"

  depends_on = [google_project_service.secret_project_secretmanager]
}

resource "google_project_iam_custom_role" "secret_manager_creator" {
  for_each = local.secret_project_ids

  project     = each.value
  role_id     = "hyperfleetPullSecretCreator"
  title       = "HyperFleet pull-secret adapter: create secrets"
  description = "secretmanager.secrets.create only; cannot be conditioned on the secret name (checked against the project)."
  permissions = ["secretmanager.secrets.create"]
  stage       = "GA"

  depends_on = [google_project_service.secret_project_secretmanager]
}

data "google_project" "secret_projects" {
  for_each = local.secret_project_ids

  project_id = each.value
}

resource "google_project_iam_member" "runtime_secret_manager_managed" {
  for_each = local.secret_project_ids

  project = each.value
  role    = google_project_iam_custom_role.secret_manager_managed[each.value].id
  member  = google_service_account.runtime.member

  condition {
    title       = "hyperfleet-secrets-only"
    description = "Only secrets (and their versions) whose id starts with hyperfleet-."
    expression  = "resource.name.startsWith(\"projects/${data.google_project.secret_projects[each.value].number}/secrets/hyperfleet-\")"
  }
}

# Unconditioned on purpose: see the comment above (create is checked against the project).
resource "google_project_iam_member" "runtime_secret_manager_creator" {
  for_each = local.secret_project_ids

  project = each.value
  role    = google_project_iam_custom_role.secret_manager_creator[each.value].id
  member  = google_service_account.runtime.member
}

# The platform pull secret: read access on that one secret only.
resource "google_secret_manager_secret_iam_member" "runtime_pull_secret_source" {
  project   = local.pull_secret_source_project
  secret_id = local.pull_secret_source_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

# The HyperFleet API token, mounted into the function as a file.
resource "google_secret_manager_secret_iam_member" "runtime_hyperfleet_token" {
  project   = local.hyperfleet_token_project
  secret_id = local.hyperfleet_token_secret_id
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
  for_each = local.management_cluster_projects

  project = each.value
  role    = "roles/container.clusterViewer"
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

# Cloud Functions copies the source into its own gcf-v2-sources-* bucket before building;
# the condition limits the build account to that bucket and ours.
resource "google_project_iam_member" "build_source_reader" {
  project = var.project_id
  role    = "roles/storage.objectViewer"
  member  = google_service_account.build.member

  condition {
    title       = "function-source-buckets-only"
    description = "Only the function source buckets."
    expression  = "resource.name.startsWith(\"projects/_/buckets/gcf-v2-sources-${local.project_number}-\") || resource.name.startsWith(\"projects/_/buckets/${google_storage_bucket.function_source.name}\")"
  }
}
