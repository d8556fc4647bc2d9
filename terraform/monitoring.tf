# ---------------------------------------------------------------------------
# Log-based metrics from the function's structured (Cloud Logging JSON) log lines.
# Gen2 functions log as their Cloud Run service: resource.type="cloud_run_revision".
#   end of every reconcile: operation="reconcile", result, duration_ms
#   API errors:             service (secretmanager|kubernetes|gke|hyperfleet), error_kind, operation
# ---------------------------------------------------------------------------

locals {
  metric_prefix = replace(local.function_name, "-", "_")
  reconcile_log_filter = join(" AND ", [
    local.cloud_run_log_filter,
    "jsonPayload.operation=\"reconcile\"",
    "jsonPayload.result:*",
  ])
}

resource "google_logging_metric" "reconciles" {
  project = var.project_id
  name    = "${local.metric_prefix}_reconciles"
  filter  = local.reconcile_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Pull-secret reconciles by result"

    labels {
      key         = "result"
      value_type  = "STRING"
      description = "applied, unchanged, skipped, terminal or transient"
    }
  }

  label_extractors = {
    result = "EXTRACT(jsonPayload.result)"
  }

  depends_on = [time_sleep.api_propagation]
}

resource "google_logging_metric" "reconcile_duration" {
  project         = var.project_id
  name            = "${local.metric_prefix}_reconcile_duration"
  filter          = "${local.reconcile_log_filter} AND jsonPayload.duration_ms:*"
  value_extractor = "EXTRACT(jsonPayload.duration_ms)"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "DISTRIBUTION"
    unit         = "ms"
    display_name = "Pull-secret reconcile duration"

    labels {
      key         = "result"
      value_type  = "STRING"
      description = "applied, unchanged, skipped, terminal or transient"
    }
  }

  label_extractors = {
    result = "EXTRACT(jsonPayload.result)"
  }

  bucket_options {
    exponential_buckets {
      num_finite_buckets = 24
      growth_factor      = 2
      scale              = 10 # 10 ms .. ~23 h
    }
  }

  depends_on = [time_sleep.api_propagation]
}

resource "google_logging_metric" "slow_reconciles" {
  project = var.project_id
  name    = "${local.metric_prefix}_slow_reconciles"
  filter  = "${local.reconcile_log_filter} AND jsonPayload.duration_ms>=${var.slow_reconcile_threshold_ms}"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Pull-secret reconciles slower than ${var.slow_reconcile_threshold_ms} ms"
  }

  depends_on = [time_sleep.api_propagation]
}

resource "google_logging_metric" "api_errors" {
  project = var.project_id
  name    = "${local.metric_prefix}_api_errors"
  filter = join(" AND ", [
    local.cloud_run_log_filter,
    "jsonPayload.error_kind:*",
    "jsonPayload.service=(\"secretmanager\" OR \"kubernetes\" OR \"gke\" OR \"hyperfleet\")",
  ])

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Pull-secret adapter API errors"

    labels {
      key         = "service"
      value_type  = "STRING"
      description = "secretmanager, kubernetes, gke or hyperfleet"
    }
    labels {
      key         = "error_kind"
      value_type  = "STRING"
      description = "transient or terminal"
    }
    labels {
      key         = "operation"
      value_type  = "STRING"
      description = "the API call, e.g. secretmanager.add_version, kubernetes.apply"
    }
  }

  label_extractors = {
    service    = "EXTRACT(jsonPayload.service)"
    error_kind = "EXTRACT(jsonPayload.error_kind)"
    operation  = "EXTRACT(jsonPayload.operation)"
  }

  depends_on = [time_sleep.api_propagation]
}

# Monitoring resolves a new log-based metric some time after Logging creates it: an alert policy created right
# after its metric in the same apply fails with "Cannot find metric(s)" (the first build would be red). The
# alert policies on these metrics wait for this; time_sleep waits on create only, so later applies cost nothing.
resource "time_sleep" "log_metrics" {
  create_duration = "${var.log_metric_wait_seconds}s"

  depends_on = [
    google_logging_metric.reconciles,
    google_logging_metric.reconcile_duration,
    google_logging_metric.slow_reconciles,
    google_logging_metric.api_errors,
    google_logging_metric.events_processed,
    google_logging_metric.event_processing_duration,
    google_logging_metric.framework_errors,
  ]
}

# ---------------------------------------------------------------------------
# The adapter framework's metrics, by their names (hyperfleet-adapter 3f746a5 pkg/metrics/recorder.go:
# hyperfleet_adapter_events_processed_total{status}, hyperfleet_adapter_event_processing_duration_seconds,
# hyperfleet_adapter_errors_total{error_type}, each with component, version and adapter_name), so that a fleet
# dashboard built for framework adapters shows this one too. Read from the reconcile line's event_status,
# duration_s and error_type (pullsecret/handler.py framework_fields); component is the Cloud Run service (the
# function), version its revision, adapter_name the line's `adapter` label (ADAPTER_NAME). Log-based metric
# names are unique per project: a second deployment in the same project sets fleet_metric_prefix.
# ---------------------------------------------------------------------------

locals {
  framework_labels = {
    component    = "EXTRACT(resource.labels.service_name)"
    version      = "EXTRACT(resource.labels.revision_name)"
    adapter_name = "EXTRACT(labels.adapter)"
  }
  framework_filter = "${local.reconcile_log_filter} AND jsonPayload.event_status:*"
}

resource "google_logging_metric" "events_processed" {
  project = var.project_id
  name    = "${local.fleet_metric_prefix}hyperfleet_adapter_events_processed_total"
  filter  = local.framework_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "HyperFleet adapter events processed (${local.function_name})"

    labels {
      key         = "status"
      value_type  = "STRING"
      description = "success, failed or skipped (the adapter framework's statuses)"
    }
    labels {
      key         = "component"
      value_type  = "STRING"
      description = "the Cloud Run service (the function)"
    }
    labels {
      key         = "version"
      value_type  = "STRING"
      description = "the Cloud Run revision"
    }
    labels {
      key         = "adapter_name"
      value_type  = "STRING"
      description = "ADAPTER_NAME"
    }
  }

  label_extractors = merge(local.framework_labels, { status = "EXTRACT(jsonPayload.event_status)" })

  depends_on = [time_sleep.api_propagation]
}

resource "google_logging_metric" "event_processing_duration" {
  project         = var.project_id
  name            = "${local.fleet_metric_prefix}hyperfleet_adapter_event_processing_duration_seconds"
  filter          = "${local.framework_filter} AND jsonPayload.duration_s:*"
  value_extractor = "EXTRACT(jsonPayload.duration_s)"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "DISTRIBUTION"
    unit         = "s"
    display_name = "HyperFleet adapter event processing duration (${local.function_name})"

    labels {
      key         = "component"
      value_type  = "STRING"
      description = "the Cloud Run service (the function)"
    }
    labels {
      key         = "version"
      value_type  = "STRING"
      description = "the Cloud Run revision"
    }
    labels {
      key         = "adapter_name"
      value_type  = "STRING"
      description = "ADAPTER_NAME"
    }
  }

  label_extractors = local.framework_labels

  bucket_options {
    explicit_buckets {
      bounds = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120] # the framework's buckets
    }
  }

  depends_on = [time_sleep.api_propagation]
}

resource "google_logging_metric" "framework_errors" {
  project = var.project_id
  name    = "${local.fleet_metric_prefix}hyperfleet_adapter_errors_total"
  filter  = "${local.framework_filter} AND jsonPayload.error_type:*"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "HyperFleet adapter errors (${local.function_name})"

    labels {
      key         = "error_type"
      value_type  = "STRING"
      description = "the phase that failed: preconditions, resources, registry or unknown"
    }
    labels {
      key         = "component"
      value_type  = "STRING"
      description = "the Cloud Run service (the function)"
    }
    labels {
      key         = "version"
      value_type  = "STRING"
      description = "the Cloud Run revision"
    }
    labels {
      key         = "adapter_name"
      value_type  = "STRING"
      description = "ADAPTER_NAME"
    }
  }

  label_extractors = merge(local.framework_labels, { error_type = "EXTRACT(jsonPayload.error_type)" })

  depends_on = [time_sleep.api_propagation]
}

# ---------------------------------------------------------------------------
# Alerts
# ---------------------------------------------------------------------------

locals {
  user_metric = "logging.googleapis.com/user"
  # projects/P/locations/L/triggers/NAME -> NAME
  trigger_short_name = reverse(split("/", google_cloudfunctions2_function.adapter.event_trigger[0].trigger))[0]
}

resource "google_monitoring_alert_policy" "reconcile_failure_rate" {
  project               = var.project_id
  display_name          = "${local.function_name}: reconcile failure rate above ${var.failure_rate_threshold * 100}%"
  combiner              = "OR"
  notification_channels = var.notification_channel_ids
  severity              = "ERROR"
  user_labels           = local.labels

  conditions {
    display_name = "terminal+transient / all reconciles over 10 min > ${var.failure_rate_threshold}"

    condition_threshold {
      filter             = "resource.type=\"cloud_run_revision\" AND metric.type=\"${local.user_metric}/${google_logging_metric.reconciles.name}\" AND metric.label.result=monitoring.regex.full_match(\"terminal|transient\")"
      denominator_filter = "resource.type=\"cloud_run_revision\" AND metric.type=\"${local.user_metric}/${google_logging_metric.reconciles.name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = var.failure_rate_threshold
      duration           = "0s"

      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }

      denominator_aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "3600s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "More than ${var.failure_rate_threshold * 100}% of pull-secret reconciles ended terminal or transient in the last 10 minutes. Look at the function's ERROR logs (labels.cluster_id, jsonPayload.error_kind, jsonPayload.service) and the dead-letter subscription ${google_pubsub_subscription.dead_letter.name}."
  }

  depends_on = [time_sleep.log_metrics] # the log-based metric it reads exists for Monitoring
}

resource "google_monitoring_alert_policy" "api_errors" {
  project               = var.project_id
  display_name          = "${local.function_name}: API errors"
  combiner              = "OR"
  notification_channels = var.notification_channel_ids
  severity              = "WARNING"
  user_labels           = local.labels

  conditions {
    display_name = "Secret Manager / Kubernetes / GKE / HyperFleet API errors per service over 10 min > ${var.api_error_threshold}"

    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND metric.type=\"${local.user_metric}/${google_logging_metric.api_errors.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.api_error_threshold
      duration        = "0s"

      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.service"]
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "3600s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The pull-secret adapter logged more than ${var.api_error_threshold} errors from one backing API in 10 minutes. The metric label `service` names the API; `error_kind=terminal` errors (PERMISSION_DENIED, Forbidden, invalid input) need a human, transient ones are retried."
  }

  depends_on = [time_sleep.log_metrics] # the log-based metric it reads exists for Monitoring
}

resource "google_monitoring_alert_policy" "slow_reconcile" {
  project               = var.project_id
  display_name          = "${local.function_name}: reconcile slower than ${var.slow_reconcile_threshold_ms / 1000} s"
  combiner              = "OR"
  notification_channels = var.notification_channel_ids
  severity              = "WARNING"
  user_labels           = local.labels

  conditions {
    display_name = "a reconcile took at least ${var.slow_reconcile_threshold_ms} ms"

    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND metric.type=\"${local.user_metric}/${google_logging_metric.slow_reconciles.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "3600s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "A pull-secret reconcile took at least ${var.slow_reconcile_threshold_ms} ms (function timeout ${var.timeout_seconds} s). Check jsonPayload.duration_ms of operation=reconcile lines and the Secret Manager / GKE latencies."
  }

  depends_on = [time_sleep.log_metrics] # the log-based metric it reads exists for Monitoring
}

resource "google_monitoring_alert_policy" "dead_lettered" {
  project               = var.project_id
  display_name          = "${local.function_name}: events dead-lettered"
  combiner              = "OR"
  notification_channels = var.notification_channel_ids
  severity              = "ERROR"
  user_labels           = local.labels

  # One condition per trigger whose subscription has a dead-letter policy (function.tf): the cluster events trigger
  # and the fan-out trigger (the rotation's and rekey's reconcile events, in both source modes); either one
  # forwarding a message fires the alert (combiner OR). The documented dead-letter metric is the source
  # subscription's (https://cloud.google.com/pubsub/docs/dead-letter-topics); Eventarc names a trigger's
  # subscription eventarc-REGION-TRIGGER-sub-NNN.
  conditions {
    display_name = "messages the cluster events trigger's subscription forwarded to ${google_pubsub_topic.dead_letter.name}"

    condition_threshold {
      filter          = "resource.type=\"pubsub_subscription\" AND resource.label.subscription_id=starts_with(\"eventarc-${var.region}-${local.trigger_short_name}-sub-\") AND metric.type=\"pubsub.googleapis.com/subscription/dead_letter_message_count\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }

      trigger {
        count = 1
      }
    }
  }

  conditions {
    display_name = "messages the fan-out trigger's subscription forwarded to ${google_pubsub_topic.dead_letter.name}"

    condition_threshold {
      filter          = "resource.type=\"pubsub_subscription\" AND resource.label.subscription_id=starts_with(\"eventarc-${var.region}-${google_eventarc_trigger.fan_out.name}-sub-\") AND metric.type=\"pubsub.googleapis.com/subscription/dead_letter_message_count\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "3600s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Reconcile events (Sentinel's, or the fan-out's: a rotation or a rekey) exhausted ${var.dead_letter_max_delivery_attempts} delivery attempts. Pull them from subscription ${google_pubsub_subscription.dead_letter.name}, fix the cause, and republish them to the cluster events topic."
  }
}

# ---------------------------------------------------------------------------
# Dashboard: what an operator watches during a rotation burst (issue 13). The function's own log-based
# metrics above, Secret Manager's request counts as Google records them for the consumer project
# (serviceruntime.googleapis.com on consumed_api: the project that holds the secrets; with secret projects
# other than project_id, add them to this project's metrics scope to see their series), and Pub/Sub's
# dead-letter topic and subscription.
# ---------------------------------------------------------------------------

resource "google_monitoring_dashboard" "adapter" {
  project = var.project_id
  # Checked by tests/infra/test_dashboard.py: rendered by a real terraform, parsed as the Monitoring API's
  # Dashboard message.
  dashboard_json = templatefile("${path.module}/dashboard.json.tftpl", {
    function_name            = local.function_name
    adapter_name             = var.adapter_name
    reconciles_metric        = "${local.user_metric}/${google_logging_metric.reconciles.name}"
    events_metric            = "${local.user_metric}/${google_logging_metric.events_processed.name}"
    duration_metric          = "${local.user_metric}/${google_logging_metric.event_processing_duration.name}"
    api_errors_metric        = "${local.user_metric}/${google_logging_metric.api_errors.name}"
    dead_letter_topic        = google_pubsub_topic.dead_letter.name
    dead_letter_subscription = google_pubsub_subscription.dead_letter.name
  })

  depends_on = [time_sleep.api_propagation]
}
