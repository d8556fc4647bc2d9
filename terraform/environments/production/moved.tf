# The releases before the module applied terraform/ itself as the root, with its state under the prefix
# hyperfleet-pullsecret: this root takes that state over. Each resource moves into module.adapter unchanged
# (name_suffix = "" keeps every name), so the first apply after the switch plans no replacement
# (tests/infra/test_roots.py checks that every resource of the module is listed here).

moved {
  from = google_storage_bucket.function_source
  to   = module.adapter.google_storage_bucket.function_source
}

moved {
  from = google_storage_bucket_object.function_source
  to   = module.adapter.google_storage_bucket_object.function_source
}

moved {
  from = google_artifact_registry_repository.functions
  to   = module.adapter.google_artifact_registry_repository.functions
}

moved {
  from = google_cloudfunctions2_function.adapter
  to   = module.adapter.google_cloudfunctions2_function.adapter
}

moved {
  from = terraform_data.trigger_dead_letter
  to   = module.adapter.terraform_data.trigger_dead_letter
}

moved {
  from = terraform_data.rotation_trigger_ack_deadline
  to   = module.adapter.terraform_data.rotation_trigger_ack_deadline
}

moved {
  from = terraform_data.fan_out_trigger_dead_letter
  to   = module.adapter.terraform_data.fan_out_trigger_dead_letter
}

moved {
  from = google_service_account.runtime
  to   = module.adapter.google_service_account.runtime
}

moved {
  from = google_service_account.trigger
  to   = module.adapter.google_service_account.trigger
}

moved {
  from = google_service_account.build
  to   = module.adapter.google_service_account.build
}

moved {
  from = google_project_iam_custom_role.secret_manager_managed
  to   = module.adapter.google_project_iam_custom_role.secret_manager_managed
}

moved {
  from = google_project_iam_custom_role.secret_manager_creator
  to   = module.adapter.google_project_iam_custom_role.secret_manager_creator
}

moved {
  from = google_project_iam_custom_role.secret_manager_record_keeper
  to   = module.adapter.google_project_iam_custom_role.secret_manager_record_keeper
}

moved {
  from = google_project_iam_member.runtime_secret_manager_managed
  to   = module.adapter.google_project_iam_member.runtime_secret_manager_managed
}

moved {
  from = google_project_iam_member.runtime_secret_manager_record_keeper
  to   = module.adapter.google_project_iam_member.runtime_secret_manager_record_keeper
}

moved {
  from = google_project_iam_member.runtime_secret_manager_creator
  to   = module.adapter.google_project_iam_member.runtime_secret_manager_creator
}

moved {
  from = google_secret_manager_secret_iam_member.runtime_pull_secret_source
  to   = module.adapter.google_secret_manager_secret_iam_member.runtime_pull_secret_source
}

moved {
  from = google_secret_manager_secret_iam_member.runtime_hyperfleet_token
  to   = module.adapter.google_secret_manager_secret_iam_member.runtime_hyperfleet_token
}

moved {
  from = google_secret_manager_secret_iam_member.runtime_pull_secret_service_token
  to   = module.adapter.google_secret_manager_secret_iam_member.runtime_pull_secret_service_token
}

moved {
  from = google_secret_manager_secret_iam_member.runtime_ca_bundle
  to   = module.adapter.google_secret_manager_secret_iam_member.runtime_ca_bundle
}

moved {
  from = google_project_iam_member.runtime_cluster_viewer
  to   = module.adapter.google_project_iam_member.runtime_cluster_viewer
}

moved {
  from = google_project_iam_custom_role.cluster_connect
  to   = module.adapter.google_project_iam_custom_role.cluster_connect
}

moved {
  from = google_project_iam_member.runtime_cluster_connect
  to   = module.adapter.google_project_iam_member.runtime_cluster_connect
}

moved {
  from = google_cloud_run_v2_service_iam_member.trigger_invoker
  to   = module.adapter.google_cloud_run_v2_service_iam_member.trigger_invoker
}

moved {
  from = google_cloud_run_v2_service_iam_member.manual_invokers
  to   = module.adapter.google_cloud_run_v2_service_iam_member.manual_invokers
}

moved {
  from = google_cloudfunctions2_function_iam_member.manual_invokers_viewer
  to   = module.adapter.google_cloudfunctions2_function_iam_member.manual_invokers_viewer
}

moved {
  from = google_service_account_iam_member.pubsub_agent_trigger_token
  to   = module.adapter.google_service_account_iam_member.pubsub_agent_trigger_token
}

moved {
  from = google_project_iam_member.build_log_writer
  to   = module.adapter.google_project_iam_member.build_log_writer
}

moved {
  from = google_artifact_registry_repository_iam_member.build_writer
  to   = module.adapter.google_artifact_registry_repository_iam_member.build_writer
}

moved {
  from = google_project_iam_member.build_source_reader
  to   = module.adapter.google_project_iam_member.build_source_reader
}

moved {
  from = google_project_service.resource_manager
  to   = module.adapter.google_project_service.resource_manager
}

moved {
  from = google_project_service.apis
  to   = module.adapter.google_project_service.apis
}

moved {
  from = time_sleep.api_propagation
  to   = module.adapter.time_sleep.api_propagation
}

moved {
  from = google_project_service.compute
  to   = module.adapter.google_project_service.compute
}

moved {
  from = google_project_service.secret_project_secretmanager
  to   = module.adapter.google_project_service.secret_project_secretmanager
}

moved {
  from = google_project_service_identity.pubsub
  to   = module.adapter.google_project_service_identity.pubsub
}

moved {
  from = time_sleep.iam_propagation
  to   = module.adapter.time_sleep.iam_propagation
}

moved {
  from = google_logging_metric.reconciles
  to   = module.adapter.google_logging_metric.reconciles
}

moved {
  from = google_logging_metric.reconcile_duration
  to   = module.adapter.google_logging_metric.reconcile_duration
}

moved {
  from = google_logging_metric.slow_reconciles
  to   = module.adapter.google_logging_metric.slow_reconciles
}

moved {
  from = google_logging_metric.api_errors
  to   = module.adapter.google_logging_metric.api_errors
}

moved {
  from = time_sleep.log_metrics
  to   = module.adapter.time_sleep.log_metrics
}

moved {
  from = google_logging_metric.events_processed
  to   = module.adapter.google_logging_metric.events_processed
}

moved {
  from = google_logging_metric.event_processing_duration
  to   = module.adapter.google_logging_metric.event_processing_duration
}

moved {
  from = google_logging_metric.framework_errors
  to   = module.adapter.google_logging_metric.framework_errors
}

moved {
  from = google_monitoring_alert_policy.reconcile_failure_rate
  to   = module.adapter.google_monitoring_alert_policy.reconcile_failure_rate
}

moved {
  from = google_monitoring_alert_policy.api_errors
  to   = module.adapter.google_monitoring_alert_policy.api_errors
}

moved {
  from = google_monitoring_alert_policy.slow_reconcile
  to   = module.adapter.google_monitoring_alert_policy.slow_reconcile
}

moved {
  from = google_monitoring_alert_policy.dead_lettered
  to   = module.adapter.google_monitoring_alert_policy.dead_lettered
}

moved {
  from = google_monitoring_dashboard.adapter
  to   = module.adapter.google_monitoring_dashboard.adapter
}

moved {
  from = google_project_iam_custom_role.operator_secrets
  to   = module.adapter.google_project_iam_custom_role.operator_secrets
}

moved {
  from = google_project_iam_custom_role.operator_lister
  to   = module.adapter.google_project_iam_custom_role.operator_lister
}

moved {
  from = google_project_iam_member.operator_secrets
  to   = module.adapter.google_project_iam_member.operator_secrets
}

moved {
  from = google_project_iam_member.operator_lister
  to   = module.adapter.google_project_iam_member.operator_lister
}

moved {
  from = google_project_iam_custom_role.operator_clusters
  to   = module.adapter.google_project_iam_custom_role.operator_clusters
}

moved {
  from = google_project_iam_member.operator_clusters
  to   = module.adapter.google_project_iam_member.operator_clusters
}

moved {
  from = google_project_iam_custom_role.operator_doctor
  to   = module.adapter.google_project_iam_custom_role.operator_doctor
}

moved {
  from = google_service_account_iam_member.operator_doctor
  to   = module.adapter.google_service_account_iam_member.operator_doctor
}

moved {
  from = google_pubsub_topic.cluster_events
  to   = module.adapter.google_pubsub_topic.cluster_events
}

moved {
  from = google_pubsub_topic.dead_letter
  to   = module.adapter.google_pubsub_topic.dead_letter
}

moved {
  from = google_pubsub_subscription.dead_letter
  to   = module.adapter.google_pubsub_subscription.dead_letter
}

moved {
  from = google_pubsub_topic_iam_member.cluster_events_publishers
  to   = module.adapter.google_pubsub_topic_iam_member.cluster_events_publishers
}

moved {
  from = google_pubsub_topic_iam_member.dead_letter_publisher
  to   = module.adapter.google_pubsub_topic_iam_member.dead_letter_publisher
}

moved {
  from = google_project_service_identity.secretmanager
  to   = module.adapter.google_project_service_identity.secretmanager
}

moved {
  from = google_pubsub_topic.source_rotation
  to   = module.adapter.google_pubsub_topic.source_rotation
}

moved {
  from = google_pubsub_topic_iam_member.source_rotation_secretmanager_publisher
  to   = module.adapter.google_pubsub_topic_iam_member.source_rotation_secretmanager_publisher
}

moved {
  from = google_pubsub_topic.fan_out
  to   = module.adapter.google_pubsub_topic.fan_out
}

moved {
  from = google_pubsub_topic_iam_member.runtime_fan_out_publisher
  to   = module.adapter.google_pubsub_topic_iam_member.runtime_fan_out_publisher
}

moved {
  from = google_eventarc_trigger.fan_out
  to   = module.adapter.google_eventarc_trigger.fan_out
}

moved {
  from = google_eventarc_trigger.source_rotation
  to   = module.adapter.google_eventarc_trigger.source_rotation
}

moved {
  from = terraform_data.source_rotation_topic
  to   = module.adapter.terraform_data.source_rotation_topic
}

# New with service-account-token (issue 39): absent from the old state, so these moves are no-ops there; listed
# so that a state that already has them (applied before this root existed) keeps them.
moved {
  from = google_project_iam_custom_role.token_cluster
  to   = module.adapter.google_project_iam_custom_role.token_cluster
}

moved {
  from = google_project_iam_member.runtime_token_cluster
  to   = module.adapter.google_project_iam_member.runtime_token_cluster
}

# The Eventarc agent's role belonged to this state; it is the project's now (README.md, Deployment, step 1):
# forgotten here without being removed from the project.
removed {
  from = google_project_iam_member.eventarc_agent

  lifecycle {
    destroy = false
  }
}

# The CMEK grants of the service agents (and the Secret Manager agent's identity) are the projects' now (issue 51,
# item 7: the same binding in every root sharing a key; the bootstrap makes them once per project). The old state's
# copies are forgotten, never deleted (main.tf forgets those already moved into the module).
removed {
  from = google_kms_crypto_key_iam_member.pubsub_cmek

  lifecycle {
    destroy = false
  }
}

removed {
  from = google_kms_crypto_key_iam_member.secret_cmek

  lifecycle {
    destroy = false
  }
}

removed {
  from = google_project_service_identity.secret_projects_secretmanager

  lifecycle {
    destroy = false
  }
}
