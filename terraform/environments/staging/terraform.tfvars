# staging: edit for your projects and commit; Cloud Build applies this root when _ROOT=staging.
project_id                = "hyperfleet-adapters-stg"
region                    = "europe-west1"
name_suffix               = "stg"
cluster_events_publishers = ["serviceAccount:hyperfleet-sentinel@hyperfleet-adapters-stg.iam.gserviceaccount.com"]

# The secret project production and staging share; each instance's template keeps its secrets apart there.
pinned_secret_project_id  = "hyperfleet-secrets-prod"
secret_id_template        = "hyperfleet-{cluster_id}-pull-secret-stg"
pull_secret_source_secret = "projects/hyperfleet-secrets-prod/secrets/platform-pull-secret"

hyperfleet_api_url          = "https://hyperfleet.stg.example.com"
hyperfleet_api_token_secret = "projects/hyperfleet-adapters-stg/secrets/hyperfleet-api-token-stg"
management_cluster          = "projects/hyperfleet-mgmt-stg/locations/europe-west1/clusters/mc-stg-1"

operators       = ["group:hyperfleet-oncall@example.com"]
manual_invokers = ["group:hyperfleet-oncall@example.com"]
