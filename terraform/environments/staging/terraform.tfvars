# staging: edit for your projects and commit; Cloud Build applies this root when _ROOT=staging.
project_id                = "hyperfleet-adapters-stg"
region                    = "europe-west1"
environment               = "staging"
name_suffix               = "stg"
cluster_events_publishers = ["serviceAccount:hyperfleet-sentinel@hyperfleet-adapters-stg.iam.gserviceaccount.com"]

# Staging's own secret project (issue 51, item 8): its runtime's unconditioned secrets.create and its deployer's
# projectIamAdmin never reach production's secrets; the template keeps the suffix all the same.
pinned_secret_project_id  = "hyperfleet-secrets-stg"
secret_id_template        = "hyperfleet-{cluster_id}-pull-secret-stg"
pull_secret_source_secret = "projects/hyperfleet-secrets-stg/secrets/platform-pull-secret"

hyperfleet_api_url          = "https://hyperfleet.stg.example.com"
hyperfleet_api_token_secret = "projects/hyperfleet-adapters-stg/secrets/hyperfleet-api-token-stg"
management_cluster          = "projects/hyperfleet-mgmt-stg/locations/europe-west1/clusters/mc-stg-1"

operators       = ["group:hyperfleet-oncall@example.com"]
manual_invokers = ["group:hyperfleet-oncall@example.com"]
