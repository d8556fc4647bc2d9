locals {
  # Every name that must be unique in a project or in a shared secret / management project (service accounts,
  # custom roles, the function and its topics, buckets, triggers, log-based metrics, alert policies, the
  # dashboard) carries name_suffix: two instances of this module (two environments sharing a secret project,
  # two regions in one project) never collide, and one's destroy never deletes the other's roles. Empty: the
  # names of the releases before the module, so an existing deployment keeps its resources.
  name_suffix               = var.name_suffix == "" ? "" : "-${var.name_suffix}"
  role_suffix               = var.name_suffix == "" ? "" : "_${var.name_suffix}"
  function_name             = "${var.function_name}${local.name_suffix}"
  cluster_events_topic_name = "${var.cluster_events_topic_name}${local.name_suffix}"
  fleet_metric_prefix       = var.fleet_metric_prefix != "" ? var.fleet_metric_prefix : (var.name_suffix == "" ? "" : "${var.name_suffix}_")
  # On a management cluster too (issue 51, item 4): the admission policy and its binding (ADMISSION_POLICY_NAME, the
  # name the function reads and compares) carry the suffix; the RBAC objects carry the runtime account's e-mail.
  admission_policy_name = "hyperfleet-pullsecret-adapter-scope${local.name_suffix}"

  required_apis = [
    "secretmanager.googleapis.com",
    "container.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "cloudfunctions.googleapis.com",
    "eventarc.googleapis.com",
    "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "iamcredentials.googleapis.com",
    "iam.googleapis.com",
    "storage.googleapis.com",
    # cloudresourcemanager.googleapis.com: google_project_service.resource_manager below, on its own.
  ]

  labels = merge(var.labels, {
    managed-by = "terraform"
    component  = "hyperfleet-pullsecret-adapter"
  })

  # Projects that hold per-cluster secrets: the pinned one (if any) plus any listed.
  secret_project_ids = toset(distinct(compact(concat([var.pinned_secret_project_id], var.secret_project_ids))))

  # projects/P/secrets/S -> P and S (empty when the variable is: platform mode has no service token, service mode
  # no platform pull secret).
  pull_secret_source_project = var.pull_secret_source_secret == "" ? "" : split("/", var.pull_secret_source_secret)[1]
  pull_secret_source_id      = var.pull_secret_source_secret == "" ? "" : split("/", var.pull_secret_source_secret)[3]
  hyperfleet_token_project   = var.hyperfleet_api_token_secret == "" ? "" : split("/", var.hyperfleet_api_token_secret)[1]
  hyperfleet_token_secret_id = var.hyperfleet_api_token_secret == "" ? "" : split("/", var.hyperfleet_api_token_secret)[3]

  # Service mode (pull_secret_service_url set; variables.tf: exactly one of it and pull_secret_source_secret):
  # per-cluster credentials from the Pull Secret Service, no platform pull secret. Its bearer token, in
  # token-file mode, is mounted like the HyperFleet API token, at a mount path of its own.
  pull_secret_service                 = var.pull_secret_service_url != ""
  pull_secret_service_token_file      = local.pull_secret_service && var.pull_secret_service_auth == "token-file"
  pull_secret_service_token_project   = var.pull_secret_service_token_secret == "" ? "" : split("/", var.pull_secret_service_token_secret)[1]
  pull_secret_service_token_secret_id = var.pull_secret_service_token_secret == "" ? "" : split("/", var.pull_secret_service_token_secret)[3]
  pull_secret_service_token_mount     = "/etc/secrets/pull-secret-service"
  pull_secret_service_token_name      = "token"
  # Each token file the function reads, by its variable, in the modes that mount one (token-file): what
  # doctor_command fetches on a workstation. google-id-token mounts none (the doctor mints as the runtime account).
  token_file_variables = ["HYPERFLEET_API_TOKEN_FILE", "PULL_SECRET_SERVICE_TOKEN_FILE"]
  token_file_secrets = { for name, secret in {
    HYPERFLEET_API_TOKEN_FILE      = var.hyperfleet_api_auth == "token-file" ? var.hyperfleet_api_token_secret : ""
    PULL_SECRET_SERVICE_TOKEN_FILE = local.pull_secret_service_token_file ? var.pull_secret_service_token_secret : ""
  } : name => secret if secret != "" }
  # What doctor_command fetches to temporary files on a workstation: those token files and the CA bundles.
  doctor_file_secrets = merge(local.token_file_secrets, local.ca_bundle_secrets)
  # The services the function calls with a Google ID token of its own (doctor_command says how the doctor mints it).
  id_token_services = compact([
    var.hyperfleet_api_auth == "google-id-token" ? "the HyperFleet API" : "",
    local.pull_secret_service && var.pull_secret_service_auth == "google-id-token" ? "the Pull Secret Service" : "",
  ])

  # service-account-token (variables.tf hyperfleet_token_cluster): the cluster whose TokenRequest mints the token.
  hyperfleet_service_account_token = var.hyperfleet_api_auth == "service-account-token"
  # The service's own token settings only when HyperFleet's are not there to default to (satoken_settings.py).
  pull_secret_service_account_token = local.pull_secret_service && var.pull_secret_service_auth == "service-account-token" && var.hyperfleet_api_auth != "service-account-token"
  token_cluster_project             = var.hyperfleet_token_cluster == "" ? "" : split("/", var.hyperfleet_token_cluster)[1]

  management_cluster_project  = split("/", var.management_cluster)[1]
  management_cluster_projects = toset(distinct(concat([local.management_cluster_project], var.management_cluster_project_ids)))
  # The clusters a placement may name: those of the projects iam.tf grants clusterViewer in, and no other.
  allowed_management_clusters = [for p in sort(local.management_cluster_projects) : "projects/${p}/locations/*/clusters/*"]
  hyperfleet_token_mount_path = "/etc/secrets/hyperfleet"
  hyperfleet_token_file_name  = "api-token"
  cloud_run_log_filter        = "resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"${local.function_name}\""
  pubsub_service_agent_member = google_project_service_identity.pubsub.member
  project_number              = data.google_project.this.number

  # Pub/Sub push waits ack_deadline for the function's answer and redelivers after it, so the
  # triggers' subscriptions get the function timeout plus a minute (timeout_seconds <= 540 keeps this
  # within Pub/Sub's 600 s). variables.tf keeps timeout_seconds >= RETRY_DEADLINE + 30, and >= 330 for
  # the rotation fan-out: RETRY_DEADLINE < timeout < ack deadline, so a running reconcile is never
  # redelivered, and a failed one is retried by Pub/Sub, not cut off.
  trigger_ack_deadline_seconds = var.timeout_seconds + 60
}

# The project number, for the IAM conditions and the service agents' e-mails. Every data source of this module
# waits for google_project_service.resource_manager alone, never for google_project_service.apis: a data source
# whose depends_on has a planned change is read at apply time, its values unknown at plan, and every IAM binding
# whose condition names a project number is then planned "must be replaced" (deleted, then created: a live
# permission gap) -- which enabling one more API in a later release would do (issue 42, item 6;
# tests/infra/test_data_source_deferral.py shows it with a real terraform). The Cloud Resource Manager API is
# changed only on the first apply, when there is nothing to replace yet.
data "google_project" "this" {
  project_id = var.project_id

  depends_on = [google_project_service.resource_manager]
}

resource "google_project_service" "resource_manager" {
  project            = var.project_id
  service            = "cloudresourcemanager.googleapis.com" # data.google_project and every project IAM grant
  disable_on_destroy = false
}

# Every API the function and this configuration use. Disabling an API on destroy would break
# whatever else in the project uses it, hence disable_on_destroy = false everywhere.
resource "google_project_service" "apis" {
  for_each = toset(local.required_apis)

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

# An API enabled in this apply is not at once usable by every service behind it: a call in the next seconds can
# fail with SERVICE_DISABLED, which the provider does not retry. Every resource of this module that calls a Google
# API waits this long after enablement (depends_on this sleep, never on google_project_service.apis directly:
# tests/infra/test_first_apply.py), as the function waits for IAM. A time_sleep waits on create only, so the
# triggers re-create it when the set of APIs changes: an API a later release adds is waited for too, and an apply
# that enables nothing costs nothing.
resource "time_sleep" "api_propagation" {
  create_duration = "${var.api_propagation_wait_seconds}s"

  triggers = {
    apis = join(",", sort(concat(
      keys(google_project_service.apis),
      [google_project_service.resource_manager.service],
      [for s in google_project_service.compute : s.service],
      [for p in sort(keys(google_project_service.secret_project_secretmanager)) : "${p}/secretmanager.googleapis.com"],
    )))
  }

  depends_on = [
    google_project_service.apis,
    google_project_service.compute,
    google_project_service.resource_manager,
    google_project_service.secret_project_secretmanager,
  ]
}

# Direct VPC egress only: Cloud Run resolves the network and subnetwork through the Compute API. Not in
# required_apis because enabling it in a new project also creates the "default" network.
resource "google_project_service" "compute" {
  count = var.vpc_network == "" ? 0 : 1

  project            = var.project_id
  service            = "compute.googleapis.com"
  disable_on_destroy = false
}

# Secret Manager must also be on in every project that holds per-cluster secrets.
resource "google_project_service" "secret_project_secretmanager" {
  for_each = setsubtract(local.secret_project_ids, [var.project_id])

  project            = each.value
  service            = "secretmanager.googleapis.com"
  disable_on_destroy = false
}

# The Pub/Sub service agent is created lazily; generating it here lets the IAM grants below
# (dead-lettering, OIDC tokens for push, CMEK) succeed on a brand-new project.
resource "google_project_service_identity" "pubsub" {
  provider = google-beta

  project = var.project_id
  service = "pubsub.googleapis.com"

  depends_on = [time_sleep.api_propagation]
}

# The Eventarc service agent and its roles/eventarc.serviceAgent are the project's, not this adapter's: every
# trigger in the project (other adapters', other regions') uses them, and a `terraform destroy` of one adapter that
# owned the binding removed it from under the others, while two states holding it fought over it (issue 42,
# item 7). They are made once per project, outside every adapter's state (README.md, Deployment, step 1); the
# production root, which takes over the state of the releases before the module, forgets the old binding through
# a `removed` block (environments/production/moved.tf) without removing it.

# IAM grants take up to a few minutes to reach every service (https://cloud.google.com/iam/docs/access-change-propagation);
# the function's build (build account), its trigger (Eventarc and Pub/Sub service agents, trigger account) and
# its first start (runtime account, token secrets) use grants made in this same apply. The provider's own gen2
# example with a dedicated build account waits 60 s after the grants (cloudfunctions2_function basic_builder).
# iam_propagation_wait_seconds (default 60 s) is at the short end of what users report for the Eventarc agent's
# role (#25294): raise it when a first apply still fails with that agent's "Permission denied" (README.md).
resource "time_sleep" "iam_propagation" {
  create_duration = "${var.iam_propagation_wait_seconds}s"

  # A time_sleep waits on create only: the triggers re-create it when a grant is created or replaced on a later
  # apply (switching to a token file adds the token grant), so the function's update waits for that grant too.
  # An unchanged grant keeps its id, and an apply that grants nothing new waits for nothing.
  triggers = {
    grants = sha1(jsonencode(concat(
      [google_project_iam_member.build_log_writer.id, google_project_iam_member.build_source_reader.id],
      [google_artifact_registry_repository_iam_member.build_writer.id],
      google_secret_manager_secret_iam_member.runtime_hyperfleet_token[*].id,
      google_secret_manager_secret_iam_member.runtime_pull_secret_service_token[*].id,
      [for g in google_secret_manager_secret_iam_member.runtime_ca_bundle : g.id],
      [google_service_account_iam_member.pubsub_agent_trigger_token.id],
      [google_pubsub_topic_iam_member.runtime_fan_out_publisher.id],
    )))
  }

  depends_on = [
    google_project_iam_member.build_log_writer,
    google_project_iam_member.build_source_reader,
    google_artifact_registry_repository_iam_member.build_writer,
    google_secret_manager_secret_iam_member.runtime_hyperfleet_token,
    google_secret_manager_secret_iam_member.runtime_pull_secret_service_token,
    google_secret_manager_secret_iam_member.runtime_ca_bundle,
    google_service_account_iam_member.pubsub_agent_trigger_token,
    google_pubsub_topic_iam_member.runtime_fan_out_publisher,
  ]
}

# The commit this state was last applied from (the build passes -var source_commit=$COMMIT_SHA). The build reads
# it from its saved plan's prior state and refuses to apply a commit that does not descend from it (issue 51, item
# 3: an older commit's build waiting for the state lock applied over a newer deploy); scripts/release-order.sh.
resource "terraform_data" "release" {
  input = {
    commit = var.source_commit
  }
}
