# ---------------------------------------------------------------------------
# Source rotation (see README.md, "Source rotation", and ../docs/lifecycle.md).
# When the platform pull secret gets a new version, Secret Manager publishes SECRET_VERSION_ADD
# to the topics configured on that secret. This wires one such topic to the function:
#   notification topic  <- Secret Manager service agent of the source secret's project (publisher)
#   second trigger      -> the function's Cloud Run service, as the trigger account
#   function            -> one reconcile event per cluster on ADAPTER_TOPIC, the adapter's own fan-out
#                          topic (never Sentinel's: every adapter subscribed there would re-reconcile every
#                          cluster at each rotation), as the runtime account (publisher on that topic only)
#   third trigger       -> the fan-out topic back to the function
# The fan-out topic, its trigger and the runtime's publisher grant exist in both source modes: `python -m pullsecret
# rekey` publishes there too (issue 48, item 5), and the rekey account of operators.tf may publish there as well.
# `topics` on the source secret is set by scripts/configure-source-rotation-topic.sh, because the
# platform team owns that secret (Terraform cannot set one field of a resource it does not own).
# The notification topic, its trigger and the gcloud step are platform mode only: service mode
# (pull_secret_service_url) has no platform pull secret, and variables.tf refuses enable_source_rotation there (the Pull Secret Service rotates;
# Sentinel's next event delivers).
# ---------------------------------------------------------------------------

locals {
  # The function's Cloud Run service, by short name: service_config[0].service is the full
  # projects/P/locations/L/services/S name; Eventarc's cloud_run_service.service takes S.
  function_service_name = reverse(split("/", google_cloudfunctions2_function.adapter.service_config[0].service))[0]
  # ADAPTER_TOPIC: the adapter's own fan-out topic (below), in both source modes: the rotation fan-out publishes
  # there (platform mode), and so does `python -m pullsecret rekey` (both modes; issue 48, item 5).
  fan_out_topic_id = google_pubsub_topic.fan_out.id
}

# The Secret Manager service agent of the project holding the source secret (it is that project's
# agent that publishes the secret's notifications). Created lazily by Google; generating it here
# makes the grant below work on a project that never used Secret Manager notifications or CMEK.
resource "google_project_service_identity" "secretmanager" {
  provider = google-beta
  count    = var.enable_source_rotation ? 1 : 0

  project = local.pull_secret_source_project
  service = "secretmanager.googleapis.com"

  depends_on = [time_sleep.api_propagation] # serviceusage / iam on the deployer's quota project first
}

# Secret Manager notifications about the platform pull secret land here.
resource "google_pubsub_topic" "source_rotation" {
  # checkov:skip=CKV_GCP_83:CMEK is optional (pubsub_kms_key_name); Google-managed encryption is the default and notifications carry only secret metadata, never payloads.
  count = var.enable_source_rotation ? 1 : 0

  project                    = var.project_id
  name                       = "${local.function_name}-source-rotation"
  labels                     = local.labels
  message_retention_duration = var.message_retention_duration
  kms_key_name               = local.pubsub_kms_key_name

  depends_on = [time_sleep.api_propagation]
}

# Only the Secret Manager service agent may publish to the notification topic.
resource "google_pubsub_topic_iam_member" "source_rotation_secretmanager_publisher" {
  count = var.enable_source_rotation ? 1 : 0

  project = var.project_id
  topic   = google_pubsub_topic.source_rotation[0].name
  role    = "roles/pubsub.publisher"
  member  = google_project_service_identity.secretmanager[0].member
}

# The adapter's own fan-out events (the rotation's reconcile events and its continuations, and `rekey`'s: the compromise
# response, issue 48 item 5) go to a topic of this adapter alone, read by the function's own trigger: on Sentinel's
# topic every other adapter subscribed to it would re-reconcile every cluster (issue 42, item 8). In both source
# modes: a service-mode instance runs `rekey` too, and needs the topic, its trigger and its dead-letter alert.
resource "google_pubsub_topic" "fan_out" {
  # checkov:skip=CKV_GCP_83:CMEK is optional (pubsub_kms_key_name); Google-managed encryption is the default and the messages carry only cluster ids.
  project                    = var.project_id
  name                       = "${local.function_name}-fan-out"
  labels                     = local.labels
  message_retention_duration = var.message_retention_duration
  kms_key_name               = local.pubsub_kms_key_name

  # Events in flight (a rekey's, a rotation's) live here: a destroy or a replacement (name_suffix, the KMS key)
  # must be a deliberate edit, never a side effect of a plan (terraform/README.md, "What is never destroyed").
  lifecycle {
    prevent_destroy = true
  }

  depends_on = [time_sleep.api_propagation]
}

# Earlier releases created the fan-out with source rotation only (count): its one instance keeps its state.
moved {
  from = google_pubsub_topic.fan_out[0]
  to   = google_pubsub_topic.fan_out
}

# The runtime account publishes to the fan-out topic (ADAPTER_TOPIC) and to no other topic.
resource "google_pubsub_topic_iam_member" "runtime_fan_out_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.fan_out.name
  role    = "roles/pubsub.publisher"
  member  = google_service_account.runtime.member
}

moved {
  from = google_pubsub_topic_iam_member.runtime_fan_out_publisher[0]
  to   = google_pubsub_topic_iam_member.runtime_fan_out_publisher
}

# Earlier releases granted the runtime account publisher on the cluster events topic for the fan-out; that grant
# is gone (removed on the next apply), the topic stays.

# Third trigger of the same function: the fan-out topic -> the function's Cloud Run service, as the trigger account
# (like the source rotation trigger below: nothing else is granted for it).
resource "google_eventarc_trigger" "fan_out" {
  project         = var.project_id
  location        = var.region
  name            = "${local.function_name}-fan-out"
  service_account = google_service_account.trigger.email
  labels          = local.labels

  matching_criteria {
    attribute = "type"
    value     = "google.cloud.pubsub.topic.v1.messagePublished"
  }

  transport {
    pubsub {
      topic = google_pubsub_topic.fan_out.id
    }
  }

  destination {
    cloud_run_service {
      service = local.function_service_name
      region  = var.region
    }
  }

  depends_on = [
    time_sleep.api_propagation,
    time_sleep.iam_propagation,
    google_cloud_run_v2_service_iam_member.trigger_invoker,
    google_service_account_iam_member.pubsub_agent_trigger_token,
  ]
}

moved {
  from = google_eventarc_trigger.fan_out[0]
  to   = google_eventarc_trigger.fan_out
}

# Second trigger of the same function: notification topic -> the function's Cloud Run service.
# The trigger account already holds roles/run.invoker on that service (iam.tf) and the Pub/Sub
# service agent may mint its OIDC tokens; nothing else is granted for this trigger.
resource "google_eventarc_trigger" "source_rotation" {
  count = var.enable_source_rotation ? 1 : 0

  project         = var.project_id
  location        = var.region
  name            = "${local.function_name}-source-rotation"
  service_account = google_service_account.trigger.email
  labels          = local.labels

  matching_criteria {
    attribute = "type"
    value     = "google.cloud.pubsub.topic.v1.messagePublished"
  }

  transport {
    pubsub {
      topic = google_pubsub_topic.source_rotation[0].id
    }
  }

  destination {
    cloud_run_service {
      service = local.function_service_name
      region  = var.region
    }
  }

  depends_on = [
    time_sleep.api_propagation, # eventarc.googleapis.com usable (main.tf)
    google_cloud_run_v2_service_iam_member.trigger_invoker,
    google_service_account_iam_member.pubsub_agent_trigger_token,
  ]
}

# `topics` on the source secret: added with gcloud (idempotent, verified), after the service agent
# may publish (Secret Manager checks that when the topic is added). On destroy (or when either
# variable turns false) the topic is removed from the secret again; a failure there is reported
# and does not block the destroy.
resource "terraform_data" "source_rotation_topic" {
  count = var.enable_source_rotation && var.configure_source_topics ? 1 : 0

  # Provisioners run on create only: a new topic or source secret replaces the step, which first
  # removes the old topic from the old secret (destroy provisioner), then adds the new one.
  triggers_replace = [
    google_pubsub_topic.source_rotation[0].id,
    var.pull_secret_source_secret,
  ]

  input = {
    secret_project = local.pull_secret_source_project
    secret         = local.pull_secret_source_id
    topic          = google_pubsub_topic.source_rotation[0].id
    script         = "${path.module}/scripts/configure-source-rotation-topic.sh"
  }

  provisioner "local-exec" {
    interpreter = ["bash", "-c"]
    command     = self.input.script
    environment = {
      ACTION         = "add"
      SECRET_PROJECT = self.input.secret_project
      SECRET         = self.input.secret
      TOPIC          = self.input.topic
    }
  }

  provisioner "local-exec" {
    when        = destroy
    on_failure  = continue
    interpreter = ["bash", "-c"]
    command     = self.input.script
    environment = {
      ACTION         = "remove"
      SECRET_PROJECT = self.input.secret_project
      SECRET         = self.input.secret
      TOPIC          = self.input.topic
    }
  }

  # Last: no notification is published before the trigger can deliver it.
  depends_on = [
    google_pubsub_topic_iam_member.source_rotation_secretmanager_publisher,
    google_eventarc_trigger.source_rotation,
  ]
}
