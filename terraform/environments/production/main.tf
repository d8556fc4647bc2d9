# A thin root: this environment's backend (backend.tf), providers and values (terraform.tfvars) around the
# module at the top of terraform/ (terraform/README.md, Layout). Every root under environments/ has this same
# main.tf, variables.tf and outputs.tf (tests/infra/test_roots.py); only backend.tf and terraform.tfvars differ.

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

  project_id                   = var.project_id
  region                       = var.region
  name_suffix                  = var.name_suffix
  cluster_events_publishers    = var.cluster_events_publishers
  pinned_secret_project_id     = var.pinned_secret_project_id
  secret_id_template           = var.secret_id_template
  pull_secret_source_secret    = var.pull_secret_source_secret
  hyperfleet_api_url           = var.hyperfleet_api_url
  hyperfleet_api_token_secret  = var.hyperfleet_api_token_secret
  management_cluster           = var.management_cluster
  management_namespace_pattern = var.management_namespace_pattern
  notification_channel_ids     = var.notification_channel_ids
  operators                    = var.operators
  manual_invokers              = var.manual_invokers
}
