# The values that differ between environments; the module (../..) validates each.

variable "project_id" {
  description = "The function's project."
  type        = string
}

variable "region" {
  description = "The function's region."
  type        = string
}

variable "name_suffix" {
  description = "The module's name_suffix: one per instance sharing a project or a secret project."
  type        = string
  default     = ""
}

variable "cluster_events_publishers" {
  description = "Who may publish to the Sentinel topic this instance creates (Sentinel's identity)."
  type        = list(string)
  default     = []
}

variable "pinned_secret_project_id" {
  description = "SECRET_PROJECT_ID: the project holding every cluster's secret."
  type        = string
  default     = ""
}

variable "secret_id_template" {
  description = "SECRET_ID_TEMPLATE; instances sharing a secret project need templates whose IAM conditions cannot cover each other's secrets."
  type        = string
  default     = "hyperfleet-{cluster_id}-pull-secret"
}

variable "pull_secret_source_secret" {
  description = "The platform pull secret, projects/P/secrets/S."
  type        = string
}

variable "hyperfleet_api_url" {
  description = "The HyperFleet API's base URL."
  type        = string
}

variable "hyperfleet_api_token_secret" {
  description = "The HyperFleet API token secret, projects/P/secrets/S."
  type        = string
}

variable "management_cluster" {
  description = "The management cluster, projects/P/locations/L/clusters/C."
  type        = string
}

variable "management_namespace_pattern" {
  description = "MANAGEMENT_NAMESPACE_PATTERN."
  type        = string
  default     = "^clusters-[a-z0-9-]+$"
}

variable "notification_channel_ids" {
  description = "Alert notification channels."
  type        = list(string)
  default     = []
}

variable "operators" {
  description = "Principals granted the operator CLI's role (terraform/README.md, Operators)."
  type        = list(string)
  default     = []
}

variable "manual_invokers" {
  description = "Principals who may run gcloud functions call."
  type        = list(string)
  default     = []
}
