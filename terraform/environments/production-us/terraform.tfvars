# production-us: edit for your projects and commit; Cloud Build applies this root when _ROOT=production-us.
project_id                = "hyperfleet-adapters-prod"
region                    = "us-east1"
environment               = "production"
name_suffix               = "us"
cluster_events_publishers = ["serviceAccount:hyperfleet-sentinel-us@hyperfleet-adapters-prod.iam.gserviceaccount.com"]

# Production's secret project, shared by its regions (one environment); each instance's template keeps its secrets
# apart there.
pinned_secret_project_id  = "hyperfleet-secrets-prod"
secret_id_template        = "hyperfleet-{cluster_id}-pull-secret-us"
pull_secret_source_secret = "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret"

hyperfleet_api_url          = "https://hyperfleet-us.example.com"
hyperfleet_api_token_secret = "projects/hyperfleet-adapters-prod/secrets/hyperfleet-api-token-us"
management_cluster          = "projects/hyperfleet-mgmt-prod/locations/us-east1/clusters/mc-us-1"

operators       = ["group:hyperfleet-oncall@example.com"]
manual_invokers = ["group:hyperfleet-oncall@example.com"]
