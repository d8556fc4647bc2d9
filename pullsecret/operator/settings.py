"""The function's settings by name: every variable it reads, and which of them change what a reconcile writes.

`FUNCTION_VARIABLES` is what the playground's env file carries and what the function process may inherit;
`RESULT_VARIABLES` is what the CLI compares with the deployed function's before it writes
(pullsecret.operator.deployed): the rest only change how it gets there (timeouts, logging, caches, endpoints
of emulators, the local path of a token file), not what ends up in Secret Manager, on the cluster or in the
status. `AMBIENT_VARIABLES` are read by pullsecret/ but are no setting of the function: client libraries' own
conventions and the operator CLI's. tests/unit/test_operator_settings.py finds every read in every file of
pullsecret/ and checks that its name is listed here.
"""

from __future__ import annotations

# How, not what: a workstation may differ from the deployed function in these and still write the same things.
HOW_VARIABLES = frozenset(
    {
        "LOG_LEVEL",
        "HYPERFLEET_TIMEOUT",
        "PULL_SECRET_SERVICE_TIMEOUT",
        "REGISTRY_TIMEOUT",
        "REGISTRY_DEADLINE",
        "REGISTRY_CONCURRENCY",
        "REGISTRY_CACHE_TTL",
        "PULL_SECRET_SOURCE_TTL",
        "PULL_SECRET_SERVICE_TTL",  # when the service is asked again, not what a reconcile writes
        "RETRY_DEADLINE",
        "MAX_EVENT_AGE",
        "HYPERFLEET_API_TOKEN_FILE",  # where the token lies locally, not what it says
        "PULL_SECRET_SERVICE_TOKEN_FILE",
        "REGISTRY_CA_BUNDLE",
        "SECRET_MANAGER_EMULATOR_HOST",
        "GKE_EMULATOR_HOST",
        "RESOURCE_MANAGER_EMULATOR_HOST",
        "MANAGEMENT_ENDPOINT",  # how the control plane is reached
        "HYPERFLEET_SYSTEM_HEADER",  # how the API admits the calls
        "HYPERFLEET_API_AUTH_SCHEME",
        "HYPERFLEET_API_CA_BUNDLE",
        "PULL_SECRET_SERVICE_CA_BUNDLE",
        "VPC_EGRESS",
        # The rotation fan-out's pace: one reconcile writes the same whatever they say.
        "ADAPTER_TOPIC",
        "ROTATION_PUBLISH_RATE",
        "ROTATION_SLICE",
        "ROTATION_WRITES_PER_CLUSTER",
        "SECRET_WRITE_QUOTA",
    }
)

RESULT_VARIABLES = frozenset(
    {
        "ADAPTER_NAME",
        "ADMISSION_POLICY_NAME",  # which instance's policy must guard a write (pullsecret/delivery/direct/settings.py)
        "ALLOWED_MANAGEMENT_CLUSTERS",
        "ALLOWED_SECRET_PROJECTS",  # which projects a spec may name for its secret (settings/secret_projects.py)
        "DELETION_POLICY",
        "DEPLOYMENT_ID",  # the label that says which deployment owns a secret
        "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE",
        "EXTERNAL_SECRETS_REFRESH_INTERVAL",  # what the status tells the cluster's owner
        "FIELD_MANAGER",
        "HYPERFLEET_API_AUDIENCE",
        "HYPERFLEET_API_AUTH",
        "HYPERFLEET_API_SERVICE_ACCOUNT",  # who the adapter is at HyperFleet (satoken_settings)
        "HYPERFLEET_API_TOKEN_CLUSTER",
        "HYPERFLEET_API_URL",
        "HYPERFLEET_STATUS_METHOD",
        "KUBERNETES_DELIVERY",
        "KUBERNETES_SECRET_TEMPLATE",
        "MANAGEMENT_CLUSTER",
        "MANAGEMENT_CLUSTER_TEMPLATE",
        "MANAGEMENT_NAMESPACE_PATTERN",
        "MANAGEMENT_NAMESPACE_TEMPLATE",
        "MERGE_CANONICAL_REGISTRIES",
        "MERGE_PRECEDENCE",
        "PLACEMENT_ADAPTER",
        "PRECONDITION_ADAPTERS",
        "PULL_SECRET_SERVICE_AUDIENCE",
        "PULL_SECRET_SERVICE_AUTH",
        "PULL_SECRET_SERVICE_REGISTRIES",
        "PULL_SECRET_SERVICE_SERVICE_ACCOUNT",
        "PULL_SECRET_SERVICE_TOKEN_CLUSTER",
        "PULL_SECRET_SERVICE_URL",
        "PULL_SECRET_SOURCE",
        "REGISTRY_ALLOWED_HOSTS",
        "REGISTRY_ENFORCE_PLATFORM",
        "REGISTRY_SKIP_HOSTS",
        "REGISTRY_TOKEN_SCOPES",
        "REGISTRY_TRUSTED_REALMS",
        "REGISTRY_VERIFICATION",
        "RETAIN_VERSIONS",
        "SECRET_ID_TEMPLATE",
        "SECRET_KMS_KEY",
        "SECRET_PROJECT_ID",
        "SECRET_REPLICATION_LOCATIONS",
    }
)

# Read, but not the function's settings: the playground neither carries nor drops them, the CLI compares none.
AMBIENT_VARIABLES = frozenset(
    {
        "GOOGLE_APPLICATION_CREDENTIALS",  # google-auth's; pullsecret/identity/bearer.py only asks whether it is set
        "PUBSUB_EMULATOR_HOST",  # the Pub/Sub client library's (pullsecret/source/publishing.py)
        "PULLSECRET_DEPLOYED_FUNCTION",  # the operator CLI's --deployed default (pullsecret/operator/deployed.py)
        "GCE_METADATA_HOST",  # google-auth's metadata server; the CLI names it when it gave no token (operator/cli.py)
        "EMULATORS_ADMIN",  # the playground's env file exports it: a shell left from one (operator/staleness.py)
        "FUNCTION_URL",  # likewise
        "PULLSECRET_OPERATOR_KUBECONFIG",  # inspect and fleet read with it (pullsecret/delivery/direct/settings.py)
        "PULLSECRET_PLAYGROUND",  # the state folder of the playground a shell sourced (operator/playground.py)
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDFUNCTIONS",  # where gcloud asks for --deployed (operator/deployed.py)
    }
)

# The operator's own read credentials, a mode's settings (pullsecret/delivery/direct/settings.py): the CLI hands them
# only to the commands that read (inspect, fleet without --fix); writes and the doctor never use them.
VIEW_VARIABLES = frozenset({"PULLSECRET_OPERATOR_KUBECONFIG"})

FUNCTION_VARIABLES = tuple(sorted(RESULT_VARIABLES | HOW_VARIABLES))

# Which source a value belongs to: the playground's SOURCE= picks them, a shell's leftovers must not.
SOURCE_VARIABLES = frozenset({"PULL_SECRET_SOURCE", "PULL_SECRET_SERVICE_URL", "PULL_SECRET_SERVICE_TOKEN_FILE"})
