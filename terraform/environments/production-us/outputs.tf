# Every output of the module, so `terraform output -raw NAME` reads the same in every root.

output "project_id" {
  value = module.adapter.project_id
}

output "region" {
  value = module.adapter.region
}

output "function_name" {
  value = module.adapter.function_name
}

output "function_uri" {
  value = module.adapter.function_uri
}

output "function_service" {
  value = module.adapter.function_service
}

output "eventarc_trigger" {
  value = module.adapter.eventarc_trigger
}

output "cluster_events_topic" {
  value = module.adapter.cluster_events_topic
}

output "dead_letter_topic" {
  value = module.adapter.dead_letter_topic
}

output "dead_letter_subscription" {
  value = module.adapter.dead_letter_subscription
}

output "dead_letter_max_delivery_attempts" {
  value = module.adapter.dead_letter_max_delivery_attempts
}

output "source_rotation_topic" {
  value = module.adapter.source_rotation_topic
}

output "fan_out_topic" {
  value = module.adapter.fan_out_topic
}

output "source_rotation_trigger" {
  value = module.adapter.source_rotation_trigger
}

output "secret_manager_service_agent" {
  value = module.adapter.secret_manager_service_agent
}

output "pubsub_service_agent" {
  value = module.adapter.pubsub_service_agent
}

output "runtime_service_account_email" {
  value = module.adapter.runtime_service_account_email
}

output "trigger_service_account_email" {
  value = module.adapter.trigger_service_account_email
}

output "build_service_account_email" {
  value = module.adapter.build_service_account_email
}

output "function_source_bucket" {
  value = module.adapter.function_source_bucket
}

output "artifact_registry_repository" {
  value = module.adapter.artifact_registry_repository
}

output "secret_manager_custom_roles" {
  value = module.adapter.secret_manager_custom_roles
}

output "kubernetes_manifests" {
  value = module.adapter.kubernetes_manifests
}

output "token_cluster_manifests" {
  value = module.adapter.token_cluster_manifests
}

output "gateway_allowed_service_accounts" {
  value = module.adapter.gateway_allowed_service_accounts
}

output "trigger_ack_deadline_seconds" {
  value = module.adapter.trigger_ack_deadline_seconds
}

output "doctor_command" {
  value = module.adapter.doctor_command
}

output "rekey_service_account_email" {
  value = module.adapter.rekey_service_account_email
}
