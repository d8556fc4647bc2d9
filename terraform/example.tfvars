# Example variables for the HyperFleet pull-secret adapter. Copy to e.g. prod.tfvars (ignored by git)
# and adjust. Nothing here is secret: the token and pull secret stay in Secret Manager.

project_id = "hyperfleet-adapters-prod"
region     = "europe-west1"

# Sentinel's broker publishes to this topic. Leave existing_cluster_events_topic empty to create
# "hyperfleet-cluster-events", or name the topic Sentinel already uses (same project).
existing_cluster_events_topic = ""
cluster_events_publishers     = ["serviceAccount:hyperfleet-sentinel@hyperfleet-adapters-prod.iam.gserviceaccount.com"]

dead_letter_max_delivery_attempts = 10

# Source rotation: a new version of the platform pull secret is fanned out to every cluster (README.md,
# "Source rotation"). configure_source_topics = false when the platform team adds the topic to their secret.
enable_source_rotation  = true
configure_source_topics = true
rotation_publish_rate   = 20

# Secret Manager: pin one project (MVP) or list the customer projects the function may write to.
pinned_secret_project_id  = "hyperfleet-secrets-prod"
pull_secret_source_secret = "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret"

# Service mode instead (README.md, "Per-cluster credentials: the Pull Secret Service"): each cluster gets its own
# credentials from the HyperFleet Pull Secret Service. Exactly one of pull_secret_source_secret and
# pull_secret_service_url is set, and source rotation does not apply (the service rotates):
# pull_secret_source_secret        = ""
# enable_source_rotation           = false
# pull_secret_service_url          = "https://pull-secret-service.hyperfleet.example.com"
# pull_secret_service_registries   = ["quay", "rhit"]
# The service as its design record describes it authenticates Kubernetes ServiceAccount tokens: keep one in
# Secret Manager and mount it (docs/trust.md). google-id-token (the default) needs the service to accept
# Google-signed ID tokens of the runtime account.
# pull_secret_service_auth         = "token-file"
# pull_secret_service_token_secret = "projects/hyperfleet-adapters-prod/secrets/pull-secret-service-token"

hyperfleet_api_url          = "https://hyperfleet.example.com"
hyperfleet_api_token_secret = "projects/hyperfleet-adapters-prod/secrets/hyperfleet-api-token"
hyperfleet_status_method    = "PUT"

management_cluster           = "projects/hyperfleet-mgmt-prod/locations/europe-west1/clusters/mc-eu-1"
management_namespace_pattern = "^clusters-[a-z0-9-]+$"

deletion_policy = "DELETE"
retain_versions = 3

# Manual trigger (README.md, "Manual trigger"): ALLOW_ALL lets these principals run `gcloud functions call`;
# Cloud Run's IAM refuses everyone else. ALLOW_INTERNAL_ONLY closes the URL to callers outside the VPC.
ingress_settings = "ALLOW_ALL"
manual_invokers  = ["group:hyperfleet-oncall@example.com"]

# RETRY_DEADLINE; timeout_seconds must stay >= it + 30 (>= 330 with source rotation), and the triggers' ack
# deadline follows as timeout_seconds + 60.
retry_deadline_seconds = 60
timeout_seconds        = 540

# Private management cluster endpoint: Direct VPC egress (README.md, "Private management clusters").
# vpc_network    = "projects/hyperfleet-net-prod/global/networks/shared"
# vpc_subnetwork = "projects/hyperfleet-net-prod/regions/europe-west1/subnetworks/functions"

notification_channel_ids = ["projects/hyperfleet-adapters-prod/notificationChannels/1234567890"]
