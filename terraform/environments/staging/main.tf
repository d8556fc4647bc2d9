# A thin root: this environment's backend (backend.tf), providers and values (terraform.tfvars) around the
# module at the top of terraform/ (terraform/README.md, Layout). Every root under environments/ has this same
# main.tf, variables.tf and outputs.tf (tests/infra/test_roots.py); only backend.tf and terraform.tfvars differ.
# variables.tf is the module's own (a copy, held equal by the tests): every setting of the module is a setting of the
# root, typed and validated as the module declares it, and passed through below; nothing set in a tfvars file is
# dropped (issue 51, item 10), and the build refuses a key no variable declares (scripts/preflight.sh).
# Written by `python -m tests.infra.roots`.

provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

module "adapter" {
  source = "../.."

  project_id                           = var.project_id
  region                               = var.region
  name_suffix                          = var.name_suffix
  source_commit                        = var.source_commit
  environment                          = var.environment
  secret_project_shared_with           = var.secret_project_shared_with
  function_name                        = var.function_name
  labels                               = var.labels
  existing_cluster_events_topic        = var.existing_cluster_events_topic
  cluster_events_topic_name            = var.cluster_events_topic_name
  cluster_events_publishers            = var.cluster_events_publishers
  message_retention_duration           = var.message_retention_duration
  pubsub_kms_key_name                  = var.pubsub_kms_key_name
  dead_letter_max_delivery_attempts    = var.dead_letter_max_delivery_attempts
  configure_dead_letter                = var.configure_dead_letter
  enable_source_rotation               = var.enable_source_rotation
  configure_source_topics              = var.configure_source_topics
  rotation_publish_rate                = var.rotation_publish_rate
  registry_verification                = var.registry_verification
  registry_allowed_hosts               = var.registry_allowed_hosts
  registry_trusted_realms              = var.registry_trusted_realms
  pinned_secret_project_id             = var.pinned_secret_project_id
  secret_project_ids                   = var.secret_project_ids
  pull_secret_source_secret            = var.pull_secret_source_secret
  pull_secret_source_version           = var.pull_secret_source_version
  pull_secret_service_url              = var.pull_secret_service_url
  pull_secret_service_auth             = var.pull_secret_service_auth
  pull_secret_service_audience         = var.pull_secret_service_audience
  pull_secret_service_token_secret     = var.pull_secret_service_token_secret
  hyperfleet_api_ca_bundle_secret      = var.hyperfleet_api_ca_bundle_secret
  pull_secret_service_ca_bundle_secret = var.pull_secret_service_ca_bundle_secret
  registry_ca_bundle_secret            = var.registry_ca_bundle_secret
  pull_secret_service_registries       = var.pull_secret_service_registries
  secret_id_template                   = var.secret_id_template
  secret_replication_locations         = var.secret_replication_locations
  secret_kms_key                       = var.secret_kms_key
  deletion_policy                      = var.deletion_policy
  retain_versions                      = var.retain_versions
  hyperfleet_api_url                   = var.hyperfleet_api_url
  hyperfleet_api_token_secret          = var.hyperfleet_api_token_secret
  hyperfleet_api_auth                  = var.hyperfleet_api_auth
  hyperfleet_token_cluster             = var.hyperfleet_token_cluster
  hyperfleet_service_account           = var.hyperfleet_service_account
  hyperfleet_api_auth_scheme           = var.hyperfleet_api_auth_scheme
  hyperfleet_api_audience              = var.hyperfleet_api_audience
  kubernetes_delivery                  = var.kubernetes_delivery
  external_secrets_service_account     = var.external_secrets_service_account
  external_secrets_refresh_interval    = var.external_secrets_refresh_interval
  hyperfleet_system_header             = var.hyperfleet_system_header
  hyperfleet_status_method             = var.hyperfleet_status_method
  adapter_name                         = var.adapter_name
  precondition_adapters                = var.precondition_adapters
  management_cluster                   = var.management_cluster
  management_cluster_project_ids       = var.management_cluster_project_ids
  management_endpoint                  = var.management_endpoint
  management_namespace_template        = var.management_namespace_template
  kubernetes_secret_template           = var.kubernetes_secret_template
  management_namespace_pattern         = var.management_namespace_pattern
  runtime                              = var.runtime
  log_level                            = var.log_level
  max_event_age_seconds                = var.max_event_age_seconds
  available_memory                     = var.available_memory
  available_cpu                        = var.available_cpu
  ingress_settings                     = var.ingress_settings
  operators                            = var.operators
  operator_doctor_until                = var.operator_doctor_until
  manual_invokers                      = var.manual_invokers
  retry_deadline_seconds               = var.retry_deadline_seconds
  vpc_network                          = var.vpc_network
  vpc_subnetwork                       = var.vpc_subnetwork
  vpc_egress                           = var.vpc_egress
  timeout_seconds                      = var.timeout_seconds
  max_instance_request_concurrency     = var.max_instance_request_concurrency
  max_instance_count                   = var.max_instance_count
  min_instance_count                   = var.min_instance_count
  notification_channel_ids             = var.notification_channel_ids
  failure_rate_threshold               = var.failure_rate_threshold
  api_error_threshold                  = var.api_error_threshold
  fleet_metric_prefix                  = var.fleet_metric_prefix
  slow_reconcile_threshold_ms          = var.slow_reconcile_threshold_ms
  api_propagation_wait_seconds         = var.api_propagation_wait_seconds
  iam_propagation_wait_seconds         = var.iam_propagation_wait_seconds
  log_metric_wait_seconds              = var.log_metric_wait_seconds
}

# The CMEK grants of the Pub/Sub and Secret Manager service agents (and that agent's identity) were made in
# every root sharing a key, the same binding in each state; the bootstrap makes them once per project now
# (scripts/bootstrap.sh; issue 51, item 7). Forgotten here, never deleted.
removed {
  from = module.adapter.google_kms_crypto_key_iam_member.pubsub_cmek

  lifecycle {
    destroy = false
  }
}

removed {
  from = module.adapter.google_kms_crypto_key_iam_member.secret_cmek

  lifecycle {
    destroy = false
  }
}

removed {
  from = module.adapter.google_project_service_identity.secret_projects_secretmanager

  lifecycle {
    destroy = false
  }
}
