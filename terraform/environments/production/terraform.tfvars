# production: edit for your projects and commit; Cloud Build applies this root when _ROOT=production.
project_id                = "hyperfleet-adapters-prod"
region                    = "europe-west1"
environment               = "production"
name_suffix               = ""
cluster_events_publishers = ["serviceAccount:hyperfleet-sentinel@hyperfleet-adapters-prod.iam.gserviceaccount.com"]

# Production's secret project, shared by its regions (one environment); each instance's template keeps its secrets
# apart there.
pinned_secret_project_id  = "hyperfleet-secrets-prod"
secret_id_template        = "hyperfleet-{cluster_id}-pull-secret"
pull_secret_source_secret = "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret"

hyperfleet_api_url          = "https://hyperfleet.example.com"
hyperfleet_api_token_secret = "projects/hyperfleet-adapters-prod/secrets/hyperfleet-api-token"
management_cluster          = "projects/hyperfleet-mgmt-prod/locations/europe-west1/clusters/mc-eu-1"

operators       = ["group:hyperfleet-oncall@example.com"]
manual_invokers = ["group:hyperfleet-oncall@example.com"]
