# ---------------------------------------------------------------------------
# Operators (var.operators): what `fleet`, `fleet --fix`, `inspect` and the doctor need, for named principals,
# and nothing more. Each permission below is a call the CLI makes (pullsecret/operator/; terraform/README.md,
# "Operators", lists them per command and mode):
#   inspect, fleet       GetSecret, ListSecretVersions (secretstore/describe.py): secrets.get, versions.list;
#                        external-secrets: the accessor members of each secret (GetIamPolicy): secrets.getIamPolicy
#   fleet                ListSecrets with our label filter (secretstore/listing.py): secrets.list, checked on the
#                        project, so it is a role of its own, unconditioned (it lists names and labels only)
#   fleet --fix          a gone cluster's secret deleted: secrets.delete, granted only with deletion_policy = DELETE
#                        (DISABLE and RETAIN mean no secret is deleted, by the function or by hand); external-secrets: the
#                        stale accessor dropped and the cleanup (SetIamPolicy): secrets.setIamPolicy; a deleted
#                        cluster's finalizer applies deletion_policy: DISABLE disables the versions
#                        (versions.disable, and versions.list to find them)
#   direct mode          the management cluster's endpoint (GetCluster): container.clusters.get on each management
#                        project (and container.clusters.connect with the DNS endpoint); what the operator may do
#                        inside the cluster is their own Kubernetes RBAC (inspect reads the Secret by name)
#   doctor               run as the runtime identity from a workstation: impersonation of that one account
#                        (getAccessToken; getOpenIdToken for google-id-token), bound on that account only and only
#                        until operator_doctor_until (no standing grant: a token of the runtime account is every
#                        right of the runtime account); inside the function (manual_invokers) it needs none
#   rekey                (issue 48, item 5) as its own account, hf-pullsecret-rekey-SUFFIX, which operators may
#                        impersonate (never the runtime account): publish on the fan-out topic (ADAPTER_TOPIC), its
#                        progress records (get, update; create, which the project checks, so unconditioned), the
#                        platform pull secret's newest version (platform mode); at the Pull Secret Service it is
#                        an identity of its own (its own budget under the service's per-identity limits)
# Everything per secret is conditioned like the runtime account's grants (the secret ids SECRET_ID_TEMPLATE makes).
# ---------------------------------------------------------------------------

locals {
  operators = toset(var.operators)
  operator_secret_permissions = sort(distinct(concat(
    ["secretmanager.secrets.get", "secretmanager.versions.list"],
    var.deletion_policy == "DELETE" ? ["secretmanager.secrets.delete"] : [],
    var.kubernetes_delivery == "external-secrets" ? ["secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy"] : [],
    var.deletion_policy == "DISABLE" ? ["secretmanager.versions.disable"] : [],
  )))
  operator_secret_grants = {
    for pair in setproduct(tolist(local.secret_project_ids), tolist(local.operators)) : "${pair[0]} ${pair[1]}" => {
      project = pair[0]
      member  = pair[1]
    }
  }
  operator_cluster_grants = var.kubernetes_delivery != "direct" ? {} : {
    for pair in setproduct(tolist(local.management_cluster_projects), tolist(local.operators)) : "${pair[0]} ${pair[1]}" => {
      project = pair[0]
      member  = pair[1]
    }
  }
  operator_cluster_permissions = concat(
    ["container.clusters.get"],
    var.management_endpoint == "dns" ? ["container.clusters.connect"] : [],
  )
}

resource "google_project_iam_custom_role" "operator_secrets" {
  for_each = length(local.operators) > 0 ? local.secret_project_ids : toset([])

  project     = each.value
  role_id     = "hyperfleetPullSecretOperator${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: operator (inspect, fleet, fleet --fix)"
  description = "What the operator CLI calls on the adapter's own secrets (bound with the same name condition as the runtime account)."
  permissions = local.operator_secret_permissions
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_custom_role" "operator_lister" {
  for_each = length(local.operators) > 0 ? local.secret_project_ids : toset([])

  project     = each.value
  role_id     = "hyperfleetPullSecretLister${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: list secrets (fleet)"
  description = "secretmanager.secrets.list only: fleet's ListSecrets, checked against the project (cannot be conditioned on a name)."
  permissions = ["secretmanager.secrets.list"]
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_member" "operator_secrets" {
  for_each = local.operator_secret_grants

  project = each.value.project
  role    = google_project_iam_custom_role.operator_secrets[each.value.project].id
  member  = each.value.member

  condition {
    title       = "per-cluster-secrets-only"
    description = "Only secrets (and their versions) named like SECRET_ID_TEMPLATE: ${var.secret_id_template}."
    expression  = replace(local.secret_manager_condition, "PROJECT_NUMBER", data.google_project.secret_projects[each.value.project].number)
  }
}

resource "google_project_iam_member" "operator_lister" {
  for_each = local.operator_secret_grants

  project = each.value.project
  role    = google_project_iam_custom_role.operator_lister[each.value.project].id
  member  = each.value.member
}

resource "google_project_iam_custom_role" "operator_clusters" {
  for_each = length(local.operators) > 0 && var.kubernetes_delivery == "direct" ? local.management_cluster_projects : toset([])

  project     = each.value
  role_id     = "hyperfleetPullSecretOperatorClusters${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: operator's management-cluster endpoint"
  description = "container.clusters.get (and connect with the DNS endpoint): reach the management clusters; inside them, the operator's own RBAC."
  permissions = local.operator_cluster_permissions
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_member" "operator_clusters" {
  for_each = local.operator_cluster_grants

  project = each.value.project
  role    = google_project_iam_custom_role.operator_clusters[each.value.project].id
  member  = each.value.member
}

# What impersonating an account of this instance takes (an access token; an ID token for google-id-token): the
# rekey account's, standing; the runtime account's, for the doctor, only until operator_doctor_until.
resource "google_project_iam_custom_role" "operator_doctor" {
  count = length(local.operators) > 0 ? 1 : 0

  project     = var.project_id
  role_id     = "hyperfleetPullSecretDoctor${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: act as one of its accounts"
  description = "Impersonate an account of the adapter (access token; ID token for google-id-token): the rekey account, and the runtime account for the doctor until operator_doctor_until."
  permissions = ["iam.serviceAccounts.getAccessToken", "iam.serviceAccounts.getOpenIdToken"]
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

# The doctor from a workstation runs as the runtime identity: a token of that account is all of its rights (every
# cluster's secret, the management clusters), so the grant is never standing (issue 51, item 12). It exists only
# while operator_doctor_until is set, and IAM refuses it from that time on (variables.tf keeps it within 7 days of
# the plan). The in-function doctor (gcloud functions call, manual_invokers) needs none of it.
resource "google_service_account_iam_member" "operator_doctor" {
  for_each = var.operator_doctor_until == "" ? toset([]) : local.operators

  service_account_id = google_service_account.runtime.name
  role               = google_project_iam_custom_role.operator_doctor[0].id
  member             = each.value

  condition {
    title       = "doctor-until"
    description = "The doctor's impersonation of the runtime account ends at operator_doctor_until."
    expression  = "request.time < timestamp(\"${var.operator_doctor_until}\")"
  }
}

# ---------------------------------------------------------------------------
# rekey (issue 48, item 5): `python -m pullsecret rekey` as an account of its own, in both source modes.
# ---------------------------------------------------------------------------

locals {
  rekey_account = length(local.operators) > 0
  # The run's progress records (pullsecret/operator/rekey_record.py; the platform fan-out's, which a platform
  # rekey drives, pullsecret/source/platform/progress.py): GetSecret, and UpdateSecret of their annotations.
  rekey_record_permissions = ["secretmanager.secrets.get", "secretmanager.secrets.update"]
}

resource "google_service_account" "rekey" {
  count = local.rekey_account ? 1 : 0

  project      = var.project_id
  account_id   = "hf-pullsecret-rekey${local.name_suffix}"
  display_name = "HyperFleet pull-secret adapter (rekey)"
  description  = "The identity `python -m pullsecret rekey` runs as for ${local.function_name}; operators impersonate it, never the runtime account."

  depends_on = [time_sleep.api_propagation]
}

# Operators act as the rekey account (standing: it can publish reconcile events and keep its records, nothing else).
resource "google_service_account_iam_member" "operator_rekey" {
  for_each = local.rekey_account ? local.operators : toset([])

  service_account_id = google_service_account.rekey[0].name
  role               = google_project_iam_custom_role.operator_doctor[0].id
  member             = each.value
}

# The reconcile events go to the fan-out topic (ADAPTER_TOPIC), which exists in both source modes (rotation.tf).
resource "google_pubsub_topic_iam_member" "rekey_fan_out_publisher" {
  count = local.rekey_account ? 1 : 0

  project = var.project_id
  topic   = google_pubsub_topic.fan_out.name
  role    = "roles/pubsub.publisher"
  member  = google_service_account.rekey[0].member
}

resource "google_project_iam_custom_role" "rekey_records" {
  for_each = local.rekey_account ? local.secret_project_ids : toset([])

  project     = each.value
  role_id     = "hyperfleetPullSecretRekey${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: rekey's progress records"
  description = "secretmanager.secrets.get and update, bound on the rekey and rotation progress records' names alone."
  permissions = local.rekey_record_permissions
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_project_iam_member" "rekey_records" {
  for_each = local.rekey_account ? local.secret_project_ids : toset([])

  project = each.value
  role    = google_project_iam_custom_role.rekey_records[each.value].id
  member  = google_service_account.rekey[0].member

  condition {
    title       = "rekey-progress-records-only"
    description = "Only the progress records ${local.rekey_record_secret_id} and ${local.rotation_record_secret_id}."
    expression  = replace(local.rotation_record_condition, "PROJECT_NUMBER", data.google_project.secret_projects[each.value].number)
  }
}

# The first run creates its record (CreateSecret is checked on the project, so it cannot be name-conditioned).
resource "google_project_iam_member" "rekey_record_creator" {
  for_each = local.rekey_account ? local.secret_project_ids : toset([])

  project = each.value
  role    = google_project_iam_custom_role.secret_manager_creator[each.value].id
  member  = google_service_account.rekey[0].member
}

# Platform mode: a rekey fans out the platform pull secret's newest version, which it reads (as the runtime does).
resource "google_secret_manager_secret_iam_member" "rekey_pull_secret_source" {
  count = local.rekey_account && !local.pull_secret_service ? 1 : 0

  project   = local.pull_secret_source_project
  secret_id = local.pull_secret_source_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.rekey[0].member
}
