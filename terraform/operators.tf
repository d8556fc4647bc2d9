# ---------------------------------------------------------------------------
# Operators (var.operators): what `fleet`, `fleet --fix`, `inspect` and the doctor need, for named principals,
# and nothing more. Each permission below is a call the CLI makes (pullsecret/operator/; terraform/README.md,
# "Operators", lists them per command and mode):
#   inspect, fleet       GetSecret, ListSecretVersions (secretstore/describe.py): secrets.get, versions.list;
#                        external-secrets: the accessor members of each secret (GetIamPolicy): secrets.getIamPolicy
#   fleet                ListSecrets with our label filter (secretstore/listing.py): secrets.list, checked on the
#                        project, so it is a role of its own, unconditioned (it lists names and labels only)
#   fleet --fix          a gone cluster's secret deleted (DELETE policy): secrets.delete; external-secrets: the
#                        stale accessor dropped and the cleanup (SetIamPolicy): secrets.setIamPolicy; a deleted
#                        cluster's finalizer applies deletion_policy: DISABLE disables the versions
#                        (versions.disable, and versions.list to find them)
#   direct mode          the management cluster's endpoint (GetCluster): container.clusters.get on each management
#                        project (and container.clusters.connect with the DNS endpoint); what the operator may do
#                        inside the cluster is their own Kubernetes RBAC (inspect reads the Secret by name)
#   doctor               run as the runtime identity from a workstation: impersonation of that one account
#                        (getAccessToken; getOpenIdToken for google-id-token), bound on that account only
# Everything per secret is conditioned like the runtime account's grants (the secret ids SECRET_ID_TEMPLATE makes).
# ---------------------------------------------------------------------------

locals {
  operators = toset(var.operators)
  operator_secret_permissions = sort(distinct(concat(
    ["secretmanager.secrets.get", "secretmanager.versions.list", "secretmanager.secrets.delete"],
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

resource "google_project_iam_custom_role" "operator_doctor" {
  count = length(local.operators) > 0 ? 1 : 0

  project     = var.project_id
  role_id     = "hyperfleetPullSecretDoctor${local.role_suffix}"
  title       = "HyperFleet pull-secret adapter: run the doctor as the runtime identity"
  description = "Impersonate the runtime account (access token; ID token for google-id-token): doctor_command's login."
  permissions = ["iam.serviceAccounts.getAccessToken", "iam.serviceAccounts.getOpenIdToken"]
  stage       = "GA"

  depends_on = [time_sleep.api_propagation]
}

resource "google_service_account_iam_member" "operator_doctor" {
  for_each = local.operators

  service_account_id = google_service_account.runtime.name
  role               = google_project_iam_custom_role.operator_doctor[0].id
  member             = each.value
}
