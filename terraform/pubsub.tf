locals {
  create_cluster_events_topic = var.existing_cluster_events_topic == ""
  cluster_events_topic_id = (
    local.create_cluster_events_topic
    ? google_pubsub_topic.cluster_events[0].id
    : var.existing_cluster_events_topic
  )
  pubsub_kms_key_name = var.pubsub_kms_key_name == "" ? null : var.pubsub_kms_key_name
}

# The topic Sentinel publishes cluster reconcile events to (unless an existing one is given).
resource "google_pubsub_topic" "cluster_events" {
  # checkov:skip=CKV_GCP_83:CMEK is optional (pubsub_kms_key_name); Google-managed encryption is the default and the messages carry only cluster ids.
  count = local.create_cluster_events_topic ? 1 : 0

  project                    = var.project_id
  name                       = local.cluster_events_topic_name
  labels                     = local.labels
  message_retention_duration = var.message_retention_duration
  kms_key_name               = local.pubsub_kms_key_name

  # Holds events (Sentinel's, or the only copy of a failed one): a `terraform destroy`, or a change that replaces it
  # (name_suffix, cluster_events_topic_name, function_name, pubsub_kms_key_name), must be a deliberate edit of this
  # block, never a side effect of a plan (terraform/README.md, "What is never destroyed").
  lifecycle {
    prevent_destroy = true
  }

  depends_on = [time_sleep.api_propagation]
}

# Events that exhausted their delivery attempts land here for inspection and replay.
resource "google_pubsub_topic" "dead_letter" {
  # checkov:skip=CKV_GCP_83:CMEK is optional (pubsub_kms_key_name); Google-managed encryption is the default and the messages carry only cluster ids.
  project                    = var.project_id
  name                       = "${local.function_name}-dead-letter"
  labels                     = local.labels
  message_retention_duration = var.message_retention_duration
  kms_key_name               = local.pubsub_kms_key_name

  # Holds events (Sentinel's, or the only copy of a failed one): a `terraform destroy`, or a change that replaces it
  # (name_suffix, cluster_events_topic_name, function_name, pubsub_kms_key_name), must be a deliberate edit of this
  # block, never a side effect of a plan (terraform/README.md, "What is never destroyed").
  lifecycle {
    prevent_destroy = true
  }

  depends_on = [time_sleep.api_propagation]
}

# A pull subscription so dead-lettered messages are kept (a topic without subscriptions drops them).
resource "google_pubsub_subscription" "dead_letter" {
  project              = var.project_id
  name                 = "${local.function_name}-dead-letter"
  topic                = google_pubsub_topic.dead_letter.id
  labels               = local.labels
  ack_deadline_seconds = 60
  # Subscriptions keep messages at most 7 days (topics up to 31).
  message_retention_duration = "${min(tonumber(trimsuffix(var.message_retention_duration, "s")), 604800)}s"
  retain_acked_messages      = false

  expiration_policy {
    ttl = "" # never expires, even when nobody pulls for a long time
  }

  # The only copy of every dead-lettered event: never deleted by a plan (see the topics above).
  lifecycle {
    prevent_destroy = true
  }
}

# Sentinel's identity (and anyone else listed) may publish to the topic this configuration creates.
resource "google_pubsub_topic_iam_member" "cluster_events_publishers" {
  for_each = local.create_cluster_events_topic ? toset(var.cluster_events_publishers) : toset([])

  project = var.project_id
  topic   = google_pubsub_topic.cluster_events[0].name
  role    = "roles/pubsub.publisher"
  member  = each.value
}

# Dead-lettering: the Pub/Sub service agent republishes undeliverable messages to the dead-letter topic.
# (Its roles/pubsub.subscriber on the trigger's subscription is granted by the dead-letter step in function.tf.)
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.dead_letter.name
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_service_agent_member
}

# With CMEK (pubsub_kms_key_name), the Pub/Sub service agent must be able to use the key: that grant is the project's
# (every instance of the project, in every root, uses the same agent and key), so it is made once per project outside
# every root's state, by the bootstrap (terraform/scripts/bootstrap.sh; issue 51, item 7), and no root's destroy
# removes it from under the others.
