# ---------------------------------------------------------------------------
# The function itself. Terraform owns the deployment (see README.md, "Who deploys"):
# source archive, build identity, runtime identity, environment, trigger and dead-letter step
# are all in one reviewed plan. Cloud Build only tests and then runs terraform apply.
# ---------------------------------------------------------------------------

locals {
  repository_root = "${path.module}/.."
  # Bucket names are global and at most 63 characters. PROJECT-FUNCTION-src when it fits (every name of the releases
  # before this one, unchanged); else its first 50 characters, a hash of the whole and -src, so that a long project
  # id never cuts the suffix off and two instances never render one name (issue 51, item 2: truncated to 59, every
  # suffix of a 27-character project id gave the same bucket).
  source_bucket_base = "${var.project_id}-${local.function_name}"
  source_bucket_name = length(local.source_bucket_base) <= 59 ? "${local.source_bucket_base}-src" : "${substr(local.source_bucket_base, 0, 50)}-${substr(sha256(local.source_bucket_base), 0, 8)}-src"
  # Exactly what Cloud Functions needs to build and run the function: no tests, emulators, venvs.
  function_source_files = sort(concat(
    # The admission policy's template: the function renders it to check the installed one (admission_policy.py).
    ["main.py", "requirements.txt", "terraform/kubernetes/admission-policy.yaml"],
    tolist(fileset(local.repository_root, "pullsecret/**/*.py")),
  ))

  function_environment = {
    HYPERFLEET_API_URL        = var.hyperfleet_api_url
    HYPERFLEET_API_TOKEN_FILE = var.hyperfleet_api_auth == "token-file" ? "${local.hyperfleet_token_mount_path}/${local.hyperfleet_token_file_name}" : ""
    HYPERFLEET_API_AUTH       = var.hyperfleet_api_auth
    HYPERFLEET_API_AUDIENCE   = var.hyperfleet_api_audience
    # service-account-token (docs/trust.md): the token cluster and the account; the service takes the same ones.
    HYPERFLEET_API_TOKEN_CLUSTER        = local.hyperfleet_service_account_token ? var.hyperfleet_token_cluster : ""
    HYPERFLEET_API_SERVICE_ACCOUNT      = local.hyperfleet_service_account_token ? var.hyperfleet_service_account : ""
    HYPERFLEET_API_AUTH_SCHEME          = local.hyperfleet_service_account_token ? var.hyperfleet_api_auth_scheme : ""
    PULL_SECRET_SERVICE_TOKEN_CLUSTER   = local.pull_secret_service_account_token ? var.hyperfleet_token_cluster : ""
    PULL_SECRET_SERVICE_SERVICE_ACCOUNT = local.pull_secret_service_account_token ? var.hyperfleet_service_account : ""
    # Private root CAs (ca_bundles.tf): the mounted PEM file, or unset.
    HYPERFLEET_API_CA_BUNDLE      = local.ca_bundle_environment["HYPERFLEET_API_CA_BUNDLE"]
    PULL_SECRET_SERVICE_CA_BUNDLE = local.ca_bundle_environment["PULL_SECRET_SERVICE_CA_BUNDLE"]
    REGISTRY_CA_BUNDLE            = local.ca_bundle_environment["REGISTRY_CA_BUNDLE"]
    HYPERFLEET_STATUS_METHOD      = var.hyperfleet_status_method
    HYPERFLEET_SYSTEM_HEADER      = var.hyperfleet_system_header
    ADAPTER_NAME                  = var.adapter_name
    PRECONDITION_ADAPTERS         = join(",", var.precondition_adapters)
    # Exactly one source (variables.tf): the platform pull secret, or the Pull Secret Service. An empty value is
    # unset for the function (pullsecret/config.py), so each mode's variables are set in that mode only.
    PULL_SECRET_SOURCE             = local.pull_secret_service ? "" : "${var.pull_secret_source_secret}/versions/${var.pull_secret_source_version}"
    PULL_SECRET_SERVICE_URL        = var.pull_secret_service_url
    PULL_SECRET_SERVICE_AUTH       = local.pull_secret_service ? var.pull_secret_service_auth : ""
    PULL_SECRET_SERVICE_AUDIENCE   = local.pull_secret_service ? var.pull_secret_service_audience : ""
    PULL_SECRET_SERVICE_TOKEN_FILE = local.pull_secret_service_token_file ? "${local.pull_secret_service_token_mount}/${local.pull_secret_service_token_name}" : ""
    PULL_SECRET_SERVICE_REGISTRIES = local.pull_secret_service ? join(",", var.pull_secret_service_registries) : ""
    SECRET_PROJECT_ID              = var.pinned_secret_project_id
    # The projects iam.tf grants Secret Manager roles in, and no other: a cluster's spec naming another is refused.
    ALLOWED_SECRET_PROJECTS       = join(",", sort(local.secret_project_ids))
    MANAGEMENT_CLUSTER            = var.management_cluster
    ALLOWED_MANAGEMENT_CLUSTERS   = join(",", local.allowed_management_clusters)
    MANAGEMENT_ENDPOINT           = var.management_endpoint
    MANAGEMENT_NAMESPACE_TEMPLATE = var.management_namespace_template
    MANAGEMENT_NAMESPACE_PATTERN  = var.management_namespace_pattern
    KUBERNETES_SECRET_TEMPLATE    = var.kubernetes_secret_template
    # Direct mode: this instance's admission policy (outputs.tf renders it under the same name).
    ADMISSION_POLICY_NAME = var.kubernetes_delivery == "direct" ? local.admission_policy_name : ""
    # external_secrets.tf: with external-secrets, no Kubernetes call; access granted to this principal instead.
    KUBERNETES_DELIVERY                 = var.kubernetes_delivery
    EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE = local.external_secrets_principal_template
    EXTERNAL_SECRETS_REFRESH_INTERVAL   = var.kubernetes_delivery == "external-secrets" ? var.external_secrets_refresh_interval : ""
    LOG_LEVEL                           = var.log_level
    MAX_EVENT_AGE                       = tostring(var.max_event_age_seconds)
    SECRET_REPLICATION_LOCATIONS        = join(",", var.secret_replication_locations)
    SECRET_KMS_KEY                      = var.secret_kms_key
    DELETION_POLICY                     = var.deletion_policy
    RETAIN_VERSIONS                     = tostring(var.retain_versions)
    REGISTRY_VERIFICATION               = var.registry_verification
    REGISTRY_ALLOWED_HOSTS              = join(",", var.registry_allowed_hosts)
    REGISTRY_TRUSTED_REALMS             = join(",", var.registry_trusted_realms)
    SECRET_ID_TEMPLATE                  = var.secret_id_template
    RETRY_DEADLINE                      = tostring(var.retry_deadline_seconds)
    VPC_EGRESS                          = var.vpc_network == "" ? "false" : "true" # private control planes are reachable
    # Source rotation (rotation.tf): where the fan-out publishes one reconcile event per cluster
    # (the topic this function's trigger listens on; empty turns the fan-out off) and how fast.
    ADAPTER_TOPIC         = local.fan_out_topic_id
    ROTATION_PUBLISH_RATE = tostring(var.rotation_publish_rate)
    # One invocation fans out this long, then hands the rest on (pullsecret/source/rotation.py): under the function
    # timeout with 30 s for the hand-on, so a fan-out is never killed mid-slice.
    ROTATION_SLICE = tostring(var.timeout_seconds - 30)
    # functions-framework's gunicorn thread count: one thread per concurrent request Cloud Run sends.
    THREADS = tostring(var.max_instance_request_concurrency)
    # Set by the platform on every deploy; declared here so plans stay clean.
    LOG_EXECUTION_ID = "true"
  }
}

data "archive_file" "function_source" {
  type        = "zip"
  output_path = "${path.module}/.build/function-source.zip"

  dynamic "source" {
    for_each = toset(local.function_source_files)
    content {
      filename = source.value
      content  = file("${local.repository_root}/${source.value}")
    }
  }
}

resource "google_storage_bucket" "function_source" {
  # checkov:skip=CKV_GCP_62:Access logging of a bucket that only holds build source archives; Cloud Audit Logs cover who changed it.
  project                     = var.project_id
  name                        = local.source_bucket_name
  location                    = var.region
  labels                      = local.labels
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true

  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 30
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [time_sleep.api_propagation]
}

resource "google_storage_bucket_object" "function_source" {
  # Content-addressed name: a source change is a new object, hence a new build and revision.
  name   = "function-source-${data.archive_file.function_source.output_md5}.zip"
  bucket = google_storage_bucket.function_source.name
  source = data.archive_file.function_source.output_path
}

resource "google_artifact_registry_repository" "functions" {
  # checkov:skip=CKV_GCP_84:Images hold only the open-source function code and its public dependencies; Google-managed encryption suffices.
  project       = var.project_id
  location      = var.region
  repository_id = "${local.function_name}-images"
  description   = "Images built for ${local.function_name}."
  format        = "DOCKER"
  labels        = local.labels

  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 10
    }
  }

  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s"
    }
  }

  depends_on = [time_sleep.api_propagation]
}

resource "google_cloudfunctions2_function" "adapter" {
  # checkov:skip=CKV_GCP_124:ingress_settings defaults to ALLOW_ALL so an operator holding roles/run.invoker can run `gcloud functions call` (README, Manual trigger); Cloud Run IAM still refuses every unauthenticated or non-invoker request (no public grant exists). Set ALLOW_INTERNAL_ONLY to close the URL.
  project     = var.project_id
  location    = var.region
  name        = local.function_name
  description = "HyperFleet pull-secret adapter: stores each cluster's pull secret in Secret Manager and on its management cluster."
  labels      = local.labels

  build_config {
    runtime           = var.runtime
    entry_point       = "handle_cluster_event"
    service_account   = google_service_account.build.id
    docker_repository = google_artifact_registry_repository.functions.id

    source {
      storage_source {
        bucket = google_storage_bucket.function_source.name
        object = google_storage_bucket_object.function_source.name
      }
    }
  }

  service_config {
    service_account_email            = google_service_account.runtime.email
    ingress_settings                 = var.ingress_settings
    all_traffic_on_latest_revision   = true
    available_memory                 = var.available_memory
    available_cpu                    = var.available_cpu
    timeout_seconds                  = var.timeout_seconds
    max_instance_request_concurrency = var.max_instance_request_concurrency
    max_instance_count               = var.max_instance_count
    min_instance_count               = var.min_instance_count
    environment_variables            = local.function_environment

    # Direct VPC egress (vpc_network set): reach private management cluster endpoints through the VPC.
    direct_vpc_egress = var.vpc_network == "" ? null : "VPC_EGRESS_${var.vpc_egress}"
    dynamic "direct_vpc_network_interface" {
      for_each = var.vpc_network == "" ? [] : [var.vpc_network]
      content {
        network    = direct_vpc_network_interface.value
        subnetwork = var.vpc_subnetwork == "" ? null : var.vpc_subnetwork
      }
    }

    # The API token (token-file only: google-id-token has no token to mount).
    dynamic "secret_volumes" {
      for_each = var.hyperfleet_api_auth == "token-file" ? [var.hyperfleet_api_token_secret] : []
      content {
        mount_path = local.hyperfleet_token_mount_path
        project_id = local.hyperfleet_token_project
        secret     = local.hyperfleet_token_secret_id
        versions {
          version = "latest"
          path    = local.hyperfleet_token_file_name
        }
      }
    }

    # The Pull Secret Service token (service mode with token-file only), at its own mount path.
    dynamic "secret_volumes" {
      for_each = local.pull_secret_service_token_file ? [var.pull_secret_service_token_secret] : []
      content {
        mount_path = local.pull_secret_service_token_mount
        project_id = local.pull_secret_service_token_project
        secret     = local.pull_secret_service_token_secret_id
        versions {
          version = "latest"
          path    = local.pull_secret_service_token_name
        }
      }
    }

    # Private root CAs (ca_bundles.tf): each PEM secret's latest version as ca.pem, in a volume of its own.
    dynamic "secret_volumes" {
      for_each = local.ca_bundle_volumes
      content {
        mount_path = secret_volumes.value.mount_path
        project_id = secret_volumes.value.project_id
        secret     = secret_volumes.value.secret
        versions {
          version = "latest"
          path    = local.ca_bundle_file_name
        }
      }
    }
  }

  event_trigger {
    trigger_region        = var.region
    event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
    pubsub_topic          = local.cluster_events_topic_id
    retry_policy          = "RETRY_POLICY_RETRY"
    service_account_email = google_service_account.trigger.email
  }

  lifecycle {
    precondition {
      condition     = length(local.secret_project_ids) > 0
      error_message = "Set pinned_secret_project_id or secret_project_ids: the function needs at least one project to store secrets in."
    }
    precondition {
      condition     = var.kubernetes_delivery == "direct" || length(local.management_cluster_projects) == 1
      error_message = "kubernetes_delivery = external-secrets serves the management clusters of one project (one workload identity pool, external_secrets.tf): leave management_cluster_project_ids empty."
    }
    precondition {
      condition     = split("/", local.cluster_events_topic_id)[1] == var.project_id
      error_message = "The cluster events topic must be in project_id: Eventarc creates the trigger's subscription beside the trigger."
    }
  }

  # The APIs and the grants it relies on, through their propagation waits (main.tf).
  depends_on = [
    time_sleep.api_propagation,
    time_sleep.iam_propagation,
  ]
}

# ---------------------------------------------------------------------------
# Ack deadline and dead-lettering on the trigger's subscription.
# Eventarc creates and owns the push subscription behind the trigger; neither
# google_cloudfunctions2_function nor google_eventarc_trigger can set its ack deadline or
# dead-letter policy (hashicorp/terraform-provider-google#17697, #25069). Eventarc documents
# updating that subscription with gcloud, which is what this step does, re-running whenever the
# trigger, the dead-letter topic, the attempt count or the ack deadline changes. It also grants the
# Pub/Sub service agent roles/pubsub.subscriber on that one subscription (required for dead-lettering).
# ---------------------------------------------------------------------------

resource "terraform_data" "trigger_dead_letter" {
  count = var.configure_dead_letter ? 1 : 0

  triggers_replace = [
    google_cloudfunctions2_function.adapter.event_trigger[0].trigger,
    google_pubsub_topic.dead_letter.id,
    var.dead_letter_max_delivery_attempts,
    local.trigger_ack_deadline_seconds,
  ]

  provisioner "local-exec" {
    interpreter = ["bash", "-c"]
    command     = "${path.module}/scripts/configure-trigger-dead-letter.sh"
    environment = {
      PROJECT_ID            = var.project_id
      REGION                = var.region
      TRIGGER               = google_cloudfunctions2_function.adapter.event_trigger[0].trigger
      DEAD_LETTER_TOPIC     = google_pubsub_topic.dead_letter.id
      MAX_DELIVERY_ATTEMPTS = tostring(var.dead_letter_max_delivery_attempts)
      PUBSUB_SERVICE_AGENT  = local.pubsub_service_agent_member
      ACK_DEADLINE_SECONDS  = tostring(local.trigger_ack_deadline_seconds)
    }
  }

  depends_on = [google_pubsub_topic_iam_member.dead_letter_publisher]
}

# The source rotation trigger's subscription gets the same ack deadline (a fan-out runs up to
# max(RETRY_DEADLINE, 300) s); no dead-letter policy there (DEAD_LETTER_TOPIC empty): a notification
# that keeps failing is retried until Pub/Sub's retention ends, and Sentinel's cycle covers the rest.
resource "terraform_data" "rotation_trigger_ack_deadline" {
  count = var.configure_dead_letter && var.enable_source_rotation ? 1 : 0

  triggers_replace = [
    google_eventarc_trigger.source_rotation[0].id,
    local.trigger_ack_deadline_seconds,
  ]

  provisioner "local-exec" {
    interpreter = ["bash", "-c"]
    command     = "${path.module}/scripts/configure-trigger-dead-letter.sh"
    environment = {
      PROJECT_ID           = var.project_id
      REGION               = var.region
      TRIGGER              = google_eventarc_trigger.source_rotation[0].name
      ACK_DEADLINE_SECONDS = tostring(local.trigger_ack_deadline_seconds)
    }
  }
}

# The fan-out trigger's subscription: the cluster events trigger's ack deadline and dead-letter policy (its
# messages are reconcile events like Sentinel's), in both source modes (rotation.tf); the "events dead-lettered"
# alert watches it too (monitoring.tf).
resource "terraform_data" "fan_out_trigger_dead_letter" {
  count = var.configure_dead_letter ? 1 : 0

  triggers_replace = [
    google_eventarc_trigger.fan_out.id,
    google_pubsub_topic.dead_letter.id,
    var.dead_letter_max_delivery_attempts,
    local.trigger_ack_deadline_seconds,
  ]

  provisioner "local-exec" {
    interpreter = ["bash", "-c"]
    command     = "${path.module}/scripts/configure-trigger-dead-letter.sh"
    environment = {
      PROJECT_ID            = var.project_id
      REGION                = var.region
      TRIGGER               = google_eventarc_trigger.fan_out.name
      DEAD_LETTER_TOPIC     = google_pubsub_topic.dead_letter.id
      MAX_DELIVERY_ATTEMPTS = tostring(var.dead_letter_max_delivery_attempts)
      PUBSUB_SERVICE_AGENT  = local.pubsub_service_agent_member
      ACK_DEADLINE_SECONDS  = tostring(local.trigger_ack_deadline_seconds)
    }
  }

  depends_on = [google_pubsub_topic_iam_member.dead_letter_publisher]
}
