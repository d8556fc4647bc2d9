# ---------------------------------------------------------------------------
# Where the function runs
# ---------------------------------------------------------------------------

variable "project_id" {
  description = "Project that hosts the function, its topics, service accounts, metrics and alerts."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "The project_id must be a GCP project ID (6-30 chars, lowercase letters, digits, hyphens)."
  }
}

variable "region" {
  description = "Region of the function, its Eventarc trigger and its Artifact Registry repository (e.g. europe-west1)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "The region must be a GCP region name such as us-central1 or europe-west1."
  }
}

variable "name_suffix" {
  description = "Suffix of every name this instance creates that must be unique in its project or in a shared secret or management project: service accounts (hf-pullsecret-run-SUFFIX), custom roles (hyperfleetPullSecretManager_SUFFIX), the function and its topics, triggers and bucket (FUNCTION_NAME-SUFFIX), the Sentinel topic it creates, log-based metrics (SUFFIX_ prefix unless fleet_metric_prefix is set), alert policies and the dashboard. Set one per instance when two instances share a project (two regions) or a secret project (two environments). Empty: the names of a single deployment. It cannot be changed once applied: every name would be replaced, and the topics that hold events (Sentinel's, the fan-out's, the dead letters and their subscription) carry prevent_destroy, so such a plan is refused (terraform/README.md, \"What is never destroyed\"); deploy another instance under the new suffix instead."
  type        = string
  default     = ""

  validation {
    # 7 characters keep hf-pullsecret-trigger-SUFFIX within the 30 of a service account id.
    condition     = can(regex("^([a-z][a-z0-9]{0,6})?$", var.name_suffix))
    error_message = "The name_suffix must be empty or 1-7 lower-case letters and digits, starting with a letter."
  }
}

variable "source_commit" {
  description = "The commit being applied (the build passes $COMMIT_SHA; by hand, `git rev-parse HEAD`). Recorded in the state (terraform_data.release): the build refuses to apply a commit that does not descend from the recorded one (scripts/release-order.sh). Empty: nothing recorded, and the next build's check has nothing to compare."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([0-9a-f]{40})?$", var.source_commit))
    error_message = "The source_commit must be empty or a full 40-character git commit id."
  }
}

variable "environment" {
  description = "The environment this instance belongs to (production, staging, ...). With it set, the plan refuses a secret project labelled hyperfleet-environment with another environment (the bootstrap labels each secret project with the first environment it serves; read from its effective_labels), unless that environment is in secret_project_shared_with: staging never shares production's secrets, grants or deployer rights by default (issue 51, item 8). Empty: no check."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][a-z0-9-]{0,29})?$", var.environment))
    error_message = "The environment must be empty or 1-30 lower-case letters, digits and hyphens, starting with a letter."
  }
}

variable "secret_project_shared_with" {
  description = "Other environments whose secret projects this instance may use too: the explicit opt-in to sharing (their instances then hold an unconditioned secrets.create and their deployers projectIamAdmin in the same project). Empty (the default): a secret project labelled for another environment refuses the plan."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for e in var.secret_project_shared_with : can(regex("^[a-z][a-z0-9-]{0,29}$", e))])
    error_message = "Each entry of secret_project_shared_with must be an environment name: 1-30 lower-case letters, digits and hyphens."
  }
}

variable "function_name" {
  description = "Name of the Cloud Run function (also its Cloud Run service and the prefix of related resources)."
  type        = string
  default     = "hyperfleet-pullsecret-adapter"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,40}[a-z0-9]$", var.function_name))
    error_message = "The function_name must be 4-42 chars of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "labels" {
  description = "Extra labels put on every labelled resource."
  type        = map(string)
  default     = {}

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "Label keys must match [a-z][a-z0-9_-]{0,62} and values [a-z0-9_-]{0,63}."
  }
}

# ---------------------------------------------------------------------------
# Topics
# ---------------------------------------------------------------------------

variable "existing_cluster_events_topic" {
  description = "Full id (projects/P/topics/T) of the topic Sentinel already publishes cluster events to. Empty: create one named cluster_events_topic_name."
  type        = string
  default     = ""

  validation {
    condition     = var.existing_cluster_events_topic == "" || can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", var.existing_cluster_events_topic))
    error_message = "The existing_cluster_events_topic must be empty or projects/PROJECT/topics/TOPIC."
  }
}

variable "cluster_events_topic_name" {
  description = "Name of the cluster events topic created when existing_cluster_events_topic is empty."
  type        = string
  default     = "hyperfleet-cluster-events"

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", var.cluster_events_topic_name)) && !startswith(lower(var.cluster_events_topic_name), "goog")
    error_message = "The cluster_events_topic_name must be a valid Pub/Sub topic name (3-255 chars, not starting with goog)."
  }
}

variable "cluster_events_publishers" {
  description = "Principals (e.g. serviceAccount:sentinel@P.iam.gserviceaccount.com) granted roles/pubsub.publisher on the created cluster events topic."
  type        = list(string)
  default     = []

  validation {
    condition = alltrue([
      for m in var.cluster_events_publishers : can(regex("^(serviceAccount|group|user|principal|principalSet):", m))
    ])
    error_message = "Each publisher must be an IAM member such as serviceAccount:EMAIL; allUsers and allAuthenticatedUsers are not accepted."
  }
}

variable "message_retention_duration" {
  description = "How long the topics keep messages (seconds with an s suffix, 600s to 2678400s)."
  type        = string
  default     = "604800s"

  validation {
    condition = (
      can(regex("^[0-9]+s$", var.message_retention_duration))
      && try(tonumber(trimsuffix(var.message_retention_duration, "s")) >= 600, false)
      && try(tonumber(trimsuffix(var.message_retention_duration, "s")) <= 2678400, false)
    )
    error_message = "The message_retention_duration must be between 600s and 2678400s (31 days)."
  }
}

variable "pubsub_kms_key_name" {
  description = "Optional CMEK (projects/P/locations/L/keyRings/R/cryptoKeys/K) for the created topics. Empty: Google-managed encryption."
  type        = string
  default     = ""

  validation {
    condition     = var.pubsub_kms_key_name == "" || can(regex("^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$", var.pubsub_kms_key_name))
    error_message = "The pubsub_kms_key_name must be empty or a full Cloud KMS crypto key name."
  }
}

variable "dead_letter_max_delivery_attempts" {
  description = "Delivery attempts on the trigger's subscription before an event goes to the dead-letter topic (5-100). The default is HyperFleet ADR-0017's budget (hyperfleet-infra terraform/main.tf max_delivery_attempts = 5)."
  type        = number
  default     = 5

  validation {
    condition     = var.dead_letter_max_delivery_attempts >= 5 && var.dead_letter_max_delivery_attempts <= 100 && floor(var.dead_letter_max_delivery_attempts) == var.dead_letter_max_delivery_attempts
    error_message = "The dead_letter_max_delivery_attempts must be an integer between 5 and 100 (the Pub/Sub limits)."
  }
}

variable "configure_dead_letter" {
  description = "Run scripts/configure-trigger-dead-letter.sh (needs gcloud) after the trigger exists, to put the dead-letter policy on the Eventarc-managed subscription."
  type        = bool
  default     = true
}

# ---------------------------------------------------------------------------
# Source rotation (rotation.tf)
# ---------------------------------------------------------------------------

variable "enable_source_rotation" {
  description = "Fan out a new version of the platform pull secret to every cluster: notification topic, Secret Manager service agent publisher grant, second trigger, the adapter's own fan-out topic (ADAPTER_TOPIC, never Sentinel's) with its trigger and the runtime account's publisher grant there. False: clusters pick up a new source on Sentinel's next cycle only. Platform mode only: must be false with pull_secret_service_url (the service rotates; the next Sentinel event delivers)."
  type        = bool
  default     = true

  # Refused rather than ignored: an explicit true in service mode would otherwise be silently dropped.
  validation {
    condition     = !(var.enable_source_rotation && var.pull_secret_service_url != "")
    error_message = "Set enable_source_rotation = false with pull_secret_service_url: source rotation fans out a new version of the platform pull secret, and service mode has none (the Pull Secret Service rotates each cluster's credentials and Sentinel's next event for the cluster delivers them; docs/lifecycle.md)."
  }

  # The fan-out's progress record (pullsecret/source/progress.py) is a secret in SECRET_PROJECT_ID, or in the
  # function's own project when none is pinned: the runtime account's Secret Manager roles must cover that project,
  # or the first rotation ends in PermissionDenied.
  validation {
    condition     = !var.enable_source_rotation || var.pinned_secret_project_id != "" || contains(var.secret_project_ids, var.project_id)
    error_message = "With enable_source_rotation and no pinned_secret_project_id, the rotation's progress record is written to project_id: add project_id to secret_project_ids (or pin a secret project, or turn source rotation off)."
  }
}

variable "configure_source_topics" {
  description = "Run scripts/configure-source-rotation-topic.sh (needs gcloud and secretmanager.secrets.update on the source secret) to add the notification topic to the source secret's topics. False: the platform team adds it (see README.md, Source rotation)."
  type        = bool
  default     = true
}

variable "rotation_publish_rate" {
  description = "ROTATION_PUBLISH_RATE: reconcile events per second the rotation fan-out publishes (0.1-1000). 9 = 90 % of Secret Manager's 600 writes/min per project at one write per changed cluster; a fan-out longer than timeout_seconds hands the rest on to a continuation message."
  type        = number
  default     = 9

  validation {
    condition     = var.rotation_publish_rate >= 0.1 && var.rotation_publish_rate <= 1000
    error_message = "The rotation_publish_rate must be between 0.1 and 1000 events per second."
  }
}

variable "registry_verification" {
  description = "REGISTRY_VERIFICATION: check each new registry credential with its registry: off, report (status only) or enforce (a refused credential blocks the write). The registries must be reachable through the function's egress."
  type        = string
  default     = "report"

  validation {
    condition     = contains(["off", "report", "enforce"], var.registry_verification)
    error_message = "The registry_verification must be off, report or enforce."
  }
}

variable "registry_allowed_hosts" {
  description = "REGISTRY_ALLOWED_HOSTS: host[:port] entries registry verification may contact although they are IP addresses, private names, other ports or resolve to private networks (an on-premises registry). Leave empty in production: nothing of the platform's own network is probed."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for h in var.registry_allowed_hosts : can(regex("^(\\[[0-9a-fA-F:.]+\\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$", h))])
    error_message = "Every registry_allowed_hosts entry must be host[:port] (an IPv6 address in brackets)."
  }
}

variable "registry_trusted_realms" {
  description = "REGISTRY_TRUSTED_REALMS: registry=realm host-name pairs whose token realm lies on another registrable domain and may still receive that registry's credential (vetted like a registry host). Default: Red Hat's registry and its SSO."
  type        = list(string)
  default     = ["registry.redhat.io=sso.redhat.com"]

  validation {
    condition     = alltrue([for p in var.registry_trusted_realms : can(regex("^[A-Za-z0-9.-]+=[A-Za-z0-9.-]+$", p))])
    error_message = "Every registry_trusted_realms entry must be registry=realm, two host names without scheme, port or path."
  }
}

# ---------------------------------------------------------------------------
# Where secrets live and come from
# ---------------------------------------------------------------------------

variable "pinned_secret_project_id" {
  description = "SECRET_PROJECT_ID: one project that holds every cluster's secret (the MVP's project). Empty: each cluster's spec.platform.gcp.projectID."
  type        = string
  default     = ""

  validation {
    condition     = var.pinned_secret_project_id == "" || can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.pinned_secret_project_id))
    error_message = "The pinned_secret_project_id must be empty or a GCP project ID."
  }
}

variable "secret_project_ids" {
  description = "Further projects the function may write per-cluster secrets to (customer projects when no project is pinned). The pinned project is added automatically."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.secret_project_ids : can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", p))])
    error_message = "Every secret_project_ids entry must be a GCP project ID."
  }
}

variable "pull_secret_source_secret" {
  description = "Platform mode (PULL_SECRET_SOURCE): the platform pull secret in Secret Manager, as projects/P/secrets/S (the function reads only this secret), the same for every cluster. Empty in service mode: exactly one of it and pull_secret_service_url is set."
  type        = string
  default     = ""

  validation {
    condition     = var.pull_secret_source_secret == "" || can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/secrets/[A-Za-z0-9_-]{1,255}$", var.pull_secret_source_secret))
    error_message = "The pull_secret_source_secret must be projects/PROJECT_ID/secrets/SECRET_ID (or empty with pull_secret_service_url)."
  }
}

variable "pull_secret_source_version" {
  description = "Version of the platform pull secret to read: latest or a version number."
  type        = string
  default     = "latest"

  validation {
    condition     = can(regex("^(latest|[1-9][0-9]*)$", var.pull_secret_source_version))
    error_message = "The pull_secret_source_version must be latest or a positive version number."
  }
}

# ---------------------------------------------------------------------------
# Service mode: per-cluster credentials from the HyperFleet Pull Secret Service (README.md,
# "Per-cluster credentials: the Pull Secret Service"), in place of pull_secret_source_secret.
# ---------------------------------------------------------------------------

variable "pull_secret_service_url" {
  description = "PULL_SECRET_SERVICE_URL: base URL (https) of the HyperFleet Pull Secret Service; the function calls {base}/v1/clusters/{cluster_id}/pull-secrets and each cluster gets its own credentials. Empty: platform mode (pull_secret_source_secret). Exactly one of the two is set."
  type        = string
  default     = ""

  validation {
    condition     = var.pull_secret_service_url == "" || can(regex("^https://[^\\s/?#@]+(/[^\\s?#]*)?$", var.pull_secret_service_url))
    error_message = "The pull_secret_service_url must be empty or an https:// base URL without credentials, query or fragment (a bearer token never goes over plain HTTP)."
  }

  validation {
    condition     = (var.pull_secret_service_url == "") != (var.pull_secret_source_secret == "")
    error_message = "Exactly one of pull_secret_source_secret (platform mode: one platform pull secret for every cluster) and pull_secret_service_url (service mode: per-cluster credentials from the Pull Secret Service) must be set."
  }
}

variable "pull_secret_service_auth" {
  description = "PULL_SECRET_SERVICE_AUTH: google-id-token (an ID token of the runtime account, audience pull_secret_service_audience; the service must accept Google-signed ID tokens, docs/trust.md) token-file (a bearer token from pull_secret_service_token_secret, mounted as a file) or service-account-token (the adapter's ServiceAccount token minted on hyperfleet_token_cluster for audience pull_secret_service_audience: the design record's TokenReview). Used only with pull_secret_service_url."
  type        = string
  default     = "google-id-token"

  validation {
    condition     = contains(["google-id-token", "token-file", "service-account-token"], var.pull_secret_service_auth)
    error_message = "The pull_secret_service_auth must be google-id-token, token-file or service-account-token."
  }
}

variable "pull_secret_service_audience" {
  description = "PULL_SECRET_SERVICE_AUDIENCE: the audience of the ID tokens (google-id-token). Empty: the function uses pull_secret_service_url (without a trailing slash). Only with pull_secret_service_url."
  type        = string
  default     = ""

  validation {
    condition     = var.pull_secret_service_audience == "" || (var.pull_secret_service_url != "" && can(regex("^[!-~]{1,256}$", var.pull_secret_service_audience)))
    error_message = "The pull_secret_service_audience must be empty, or one printable word of at most 256 characters with pull_secret_service_url set."
  }

  # One identity per audience (docs/trust.md): both ServiceAccount tokens (the service takes the gateway's token
  # cluster and account, function.tf) or both Google ID tokens of the runtime account, for one audience, are one
  # credential: the service could replay at the HyperFleet API what it receives. The function refuses it at cold
  # start too (PULL_SECRET_SERVICE_AUDIENCE; empty here is the URL without its trailing slashes).
  validation {
    condition = !(var.pull_secret_service_url != "" && var.pull_secret_service_auth == var.hyperfleet_api_auth &&
      contains(["service-account-token", "google-id-token"], var.hyperfleet_api_auth) &&
      (var.pull_secret_service_audience != "" ? var.pull_secret_service_audience :
    replace(var.pull_secret_service_url, "/\\/+$/", "")) == var.hyperfleet_api_audience)
    error_message = "The pull_secret_service_audience (empty: pull_secret_service_url) must not be hyperfleet_api_audience when pull_secret_service_auth and hyperfleet_api_auth are both service-account-token (one token cluster and ServiceAccount) or both google-id-token (the runtime account): the service would receive tokens the HyperFleet API admits. Give the service its own audience (empty: its URL)."
  }
}

variable "pull_secret_service_token_secret" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the Pull Secret Service bearer token (e.g. a Kubernetes ServiceAccount token the service's TokenReview accepts); mounted as a file (PULL_SECRET_SERVICE_TOKEN_FILE), never an env var. Required with pull_secret_service_auth = token-file in service mode, empty otherwise."
  type        = string
  default     = ""

  validation {
    condition = (var.pull_secret_service_url != "" && var.pull_secret_service_auth == "token-file" ?
      can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/secrets/[A-Za-z0-9_-]{1,255}$", var.pull_secret_service_token_secret)) :
    var.pull_secret_service_token_secret == "")
    error_message = "The pull_secret_service_token_secret must be projects/PROJECT_ID/secrets/SECRET_ID with pull_secret_service_url and pull_secret_service_auth = token-file, and empty otherwise (no token to mount)."
  }

  # One identity per audience: one token for both would let the service replay it at the HyperFleet API.
  validation {
    condition     = var.pull_secret_service_token_secret == "" || var.pull_secret_service_token_secret != var.hyperfleet_api_token_secret
    error_message = "The pull_secret_service_token_secret must not be hyperfleet_api_token_secret: the service would receive the token the HyperFleet API admits. Give the service a token of its own."
  }
}

variable "hyperfleet_api_ca_bundle_secret" {
  description = "Secret Manager secret (projects/P/secrets/S) whose latest version is the PEM of the root CA(s) the HyperFleet API's TLS chains to (a private root, e.g. hyperfleet-gateway's self-signed one); mounted as a file (ca_bundles.tf) that HYPERFLEET_API_CA_BUNDLE names, the runtime account granted access to that one secret. Empty: the public roots."
  type        = string
  default     = ""

  validation {
    condition     = var.hyperfleet_api_ca_bundle_secret == "" || can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/secrets/[A-Za-z0-9_-]{1,255}$", var.hyperfleet_api_ca_bundle_secret))
    error_message = "The hyperfleet_api_ca_bundle_secret must be empty or projects/PROJECT_ID/secrets/SECRET_ID (a secret whose latest version is the PEM bundle)."
  }
}

variable "pull_secret_service_ca_bundle_secret" {
  description = "Secret Manager secret (projects/P/secrets/S) whose latest version is the PEM of the root CA(s) the Pull Secret Service's TLS chains to; mounted as a file (ca_bundles.tf) that PULL_SECRET_SERVICE_CA_BUNDLE names, the runtime account granted access to that one secret. Service mode only (pull_secret_service_url); empty: the public roots."
  type        = string
  default     = ""

  validation {
    condition = (var.pull_secret_service_ca_bundle_secret == "" ||
      (var.pull_secret_service_url != "" &&
    can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/secrets/[A-Za-z0-9_-]{1,255}$", var.pull_secret_service_ca_bundle_secret))))
    error_message = "The pull_secret_service_ca_bundle_secret must be empty, or projects/PROJECT_ID/secrets/SECRET_ID with pull_secret_service_url (the service is called in service mode only)."
  }
}

variable "registry_ca_bundle_secret" {
  description = "Secret Manager secret (projects/P/secrets/S) whose latest version is a PEM bundle trusted instead of the system roots for registry calls (REGISTRY_CA_BUNDLE: every registry the function verifies must chain to it, so include the public roots if it verifies public registries too); mounted as a file (ca_bundles.tf), the runtime account granted access to that one secret. Empty: the system roots."
  type        = string
  default     = ""

  validation {
    condition     = var.registry_ca_bundle_secret == "" || can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/secrets/[A-Za-z0-9_-]{1,255}$", var.registry_ca_bundle_secret))
    error_message = "The registry_ca_bundle_secret must be empty or projects/PROJECT_ID/secrets/SECRET_ID (a secret whose latest version is the PEM bundle)."
  }
}

variable "pull_secret_service_registries" {
  description = "PULL_SECRET_SERVICE_REGISTRIES: the registry ids the function asks the Pull Secret Service credentials for (the DDR's quay = Quay robot account, rhit = registry.redhat.io service account). Used only with pull_secret_service_url."
  type        = list(string)
  default     = ["quay", "rhit"]

  validation {
    condition     = length(var.pull_secret_service_registries) >= 1 && length(var.pull_secret_service_registries) <= 8 && alltrue([for r in var.pull_secret_service_registries : can(regex("^[a-z0-9][a-z0-9_-]{0,31}$", r))])
    error_message = "The pull_secret_service_registries must list 1 to 8 registry ids of lowercase letters, digits, - and _ (at most 32 characters, e.g. quay, rhit)."
  }
}

variable "secret_id_template" {
  description = "SECRET_ID_TEMPLATE: id of each cluster's Secret Manager secret; {cluster_id} appears once, with a fixed prefix and suffix. The runtime account's IAM condition covers exactly the ids of this form (prefix...suffix), so no other secret in a secret project may be named like it."
  type        = string
  default     = "hyperfleet-{cluster_id}-pull-secret"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]+\\{cluster_id\\}[A-Za-z0-9_-]+$", var.secret_id_template))
    error_message = "The secret_id_template must be PREFIX{cluster_id}SUFFIX with a non-empty prefix and suffix of letters, digits, - and _ (the IAM condition is built from both)."
  }

  # The IAM condition grants every secret named PREFIX...SUFFIX in a secret project: the secrets this
  # configuration names for other purposes must not fall under it (the function could change them).
  validation {
    condition = alltrue([
      for secret in compact([var.pull_secret_source_secret, var.hyperfleet_api_token_secret, var.pull_secret_service_token_secret]) : !(
        contains(concat([var.pinned_secret_project_id], var.secret_project_ids), split("/", secret)[1])
        && startswith(split("/", secret)[3], split("{cluster_id}", var.secret_id_template)[0])
        && endswith(split("/", secret)[3], split("{cluster_id}", var.secret_id_template)[1])
      )
    ])
    error_message = "The pull_secret_source_secret, hyperfleet_api_token_secret or pull_secret_service_token_secret is in a secret project and named like secret_id_template (PREFIX...SUFFIX): the runtime account's Secret Manager grant would cover it. Rename that secret or change secret_id_template."
  }
}

variable "secret_replication_locations" {
  description = "SECRET_REPLICATION_LOCATIONS: user-managed replication locations for new secrets. Empty: automatic replication."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for l in var.secret_replication_locations : can(regex("^[a-z]+-[a-z]+[0-9]+$", l))])
    error_message = "Every secret_replication_locations entry must be a region such as europe-west1."
  }
}

variable "secret_kms_key" {
  description = "SECRET_KMS_KEY: optional CMEK for new per-cluster secrets (full crypto key name)."
  type        = string
  default     = ""

  validation {
    condition     = var.secret_kms_key == "" || can(regex("^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$", var.secret_kms_key))
    error_message = "The secret_kms_key must be empty or a full Cloud KMS crypto key name."
  }
}

variable "deletion_policy" {
  description = "DELETION_POLICY: what happens to a cluster's Secret Manager secret when the cluster is deleted."
  type        = string
  default     = "DELETE"

  validation {
    condition     = contains(["DELETE", "DISABLE", "RETAIN"], var.deletion_policy)
    error_message = "The deletion_policy must be DELETE, DISABLE or RETAIN."
  }
}

variable "retain_versions" {
  description = "RETAIN_VERSIONS: enabled versions kept per secret; older ones are destroyed (they are billed while they exist)."
  type        = number
  default     = 3

  validation {
    condition     = var.retain_versions >= 1 && var.retain_versions <= 100 && floor(var.retain_versions) == var.retain_versions
    error_message = "The retain_versions must be an integer between 1 and 100."
  }
}

# ---------------------------------------------------------------------------
# HyperFleet API and the management cluster
# ---------------------------------------------------------------------------

variable "hyperfleet_api_url" {
  description = "HYPERFLEET_API_URL: base URL of the HyperFleet API (https)."
  type        = string

  validation {
    condition     = can(regex("^https://[^\\s/]+(/[^\\s]*)?$", var.hyperfleet_api_url))
    error_message = "The hyperfleet_api_url must be an https:// URL."
  }
}

variable "hyperfleet_api_token_secret" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the HyperFleet API bearer token; mounted as a file, never an env var. Empty with hyperfleet_api_auth = google-id-token."
  type        = string
  default     = ""

  validation {
    condition = (var.hyperfleet_api_auth != "token-file" ? var.hyperfleet_api_token_secret == "" :
    can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/secrets/[A-Za-z0-9_-]{1,255}$", var.hyperfleet_api_token_secret)))
    error_message = "The hyperfleet_api_token_secret must be projects/PROJECT_ID/secrets/SECRET_ID with hyperfleet_api_auth = token-file, and empty with google-id-token or service-account-token (no token exists to mount)."
  }
}

variable "hyperfleet_api_auth" {
  description = "HYPERFLEET_API_AUTH: token-file (a bearer token from hyperfleet_api_token_secret), google-id-token (an ID token of the runtime account, minted by the metadata server; README.md \"API-side configuration for google-id-token\") or service-account-token (a Kubernetes ServiceAccount token minted by TokenRequest on hyperfleet_token_cluster, for HyperFleet behind hyperfleet-gateway; docs/trust.md)."
  type        = string
  default     = "token-file"

  validation {
    condition     = contains(["token-file", "google-id-token", "service-account-token"], var.hyperfleet_api_auth)
    error_message = "The hyperfleet_api_auth must be token-file, google-id-token or service-account-token."
  }
}

variable "hyperfleet_token_cluster" {
  description = "HYPERFLEET_API_TOKEN_CLUSTER: the GKE cluster that runs HyperFleet (projects/P/locations/L/clusters/C), whose TokenRequest mints the adapter's ServiceAccount token. Required with hyperfleet_api_auth or pull_secret_service_auth = service-account-token, empty otherwise. The runtime account gets container.clusters.get (and connect with management_endpoint = dns) in its project, nothing more; apply output token_cluster_manifests on it."
  type        = string
  default     = ""

  validation {
    condition = (
      var.hyperfleet_api_auth == "service-account-token" || var.pull_secret_service_auth == "service-account-token" ?
      can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/locations/[a-z0-9-]+/clusters/[a-z]([-a-z0-9]{0,38}[a-z0-9])?$", var.hyperfleet_token_cluster)) :
      var.hyperfleet_token_cluster == ""
    )
    error_message = "The hyperfleet_token_cluster must be projects/PROJECT_ID/locations/LOCATION/clusters/NAME with a service-account-token mode, and empty otherwise."
  }
}

variable "hyperfleet_service_account" {
  description = "HYPERFLEET_API_SERVICE_ACCOUNT: the adapter's Kubernetes ServiceAccount (namespace/name) on hyperfleet_token_cluster; the namespace is the gateway's, and the name goes on its allow-list (output gateway_allowed_service_accounts)."
  type        = string
  default     = "hyperfleet/pullsecret-adapter"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", var.hyperfleet_service_account))
    error_message = "The hyperfleet_service_account must be namespace/name of a Kubernetes ServiceAccount."
  }
}

variable "hyperfleet_api_auth_scheme" {
  description = "HYPERFLEET_API_AUTH_SCHEME: the Authorization scheme with a ServiceAccount token, ServiceAccount (hyperfleet-gateway's machine identity, the default) or Bearer. Empty: the function's default."
  type        = string
  default     = ""

  validation {
    condition     = contains(["", "ServiceAccount", "Bearer"], var.hyperfleet_api_auth_scheme)
    error_message = "The hyperfleet_api_auth_scheme must be empty, ServiceAccount or Bearer."
  }
}

variable "hyperfleet_api_audience" {
  description = "HYPERFLEET_API_AUDIENCE: the audience of the ID tokens (google-id-token); the API must accept exactly this value."
  type        = string
  default     = "hyperfleet-api"

  validation {
    condition     = can(regex("^[!-~]{1,256}$", var.hyperfleet_api_audience))
    error_message = "The hyperfleet_api_audience must be one printable word of at most 256 characters."
  }
}

variable "kubernetes_delivery" {
  description = "KUBERNETES_DELIVERY: direct (the function writes the Kubernetes Secret on the management cluster) or external-secrets (it connects to no cluster: it grants the namespace's External Secrets Operator service account read access to the Secret Manager secret; the external_secrets_manifests output is what the management cluster applies)."
  type        = string
  default     = "direct"

  validation {
    condition     = contains(["direct", "external-secrets"], var.kubernetes_delivery)
    error_message = "The kubernetes_delivery must be direct or external-secrets."
  }
}

variable "external_secrets_service_account" {
  description = "external-secrets: the Kubernetes service account, in each cluster namespace, that the SecretStore authenticates as; its Workload Identity principal is what the function grants roles/secretmanager.secretAccessor on the cluster's secret."
  type        = string
  default     = "hyperfleet-pull-secret-reader"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.external_secrets_service_account))
    error_message = "The external_secrets_service_account must be a Kubernetes service account name (a DNS label)."
  }
}

variable "external_secrets_refresh_interval" {
  description = "external-secrets: the rendered ExternalSecret's refreshInterval (a Go duration such as 5m or 1h30m, not zero: zero stops ESO refreshing). A new Secret Manager version reaches the Kubernetes Secret within it; the function's Available message states it (EXTERNAL_SECRETS_REFRESH_INTERVAL)."
  type        = string
  default     = "5m"

  validation {
    condition     = can(regex("^([0-9]+h)?([0-9]+m)?([0-9]+s)?$", var.external_secrets_refresh_interval)) && can(regex("[1-9]", var.external_secrets_refresh_interval))
    error_message = "The external_secrets_refresh_interval must be a non-zero duration in hours, minutes and seconds, e.g. 5m or 1h30m."
  }
}

variable "hyperfleet_system_header" {
  description = "HYPERFLEET_SYSTEM_HEADER: the API's server.tenant.system_header (e.g. X-HyperFleet-System), sent as true on every call, for an API reached directly with tenancy on. Empty (default): not sent. A gateway strips it."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([A-Za-z0-9!#$%&'*+.^_`|~-]{1,64})?$", var.hyperfleet_system_header))
    error_message = "The hyperfleet_system_header must be empty or an HTTP header name."
  }
}

variable "hyperfleet_status_method" {
  description = "HYPERFLEET_STATUS_METHOD: PUT (API v0.3.0 and later) or POST (v0.2.1 and earlier)."
  type        = string
  default     = "PUT"

  validation {
    condition     = contains(["PUT", "POST"], var.hyperfleet_status_method)
    error_message = "The hyperfleet_status_method must be PUT or POST."
  }
}

variable "adapter_name" {
  description = "ADAPTER_NAME: the adapter name reported in statuses."
  type        = string
  default     = "pullsecret"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,62}$", var.adapter_name))
    error_message = "The adapter_name must be lowercase letters, digits and hyphens."
  }
}

variable "precondition_adapters" {
  description = "PRECONDITION_ADAPTERS: adapters whose Available condition must be True before this one acts."
  type        = list(string)
  default     = ["validation", "dns", "placement"]

  validation {
    condition     = alltrue([for a in var.precondition_adapters : can(regex("^[a-z][a-z0-9-]{0,62}$", a))])
    error_message = "Every precondition adapter must be a lowercase adapter name."
  }
}

variable "management_cluster" {
  description = "MANAGEMENT_CLUSTER: default GKE management cluster, projects/P/locations/L/clusters/C."
  type        = string

  validation {
    condition     = can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/locations/[a-z0-9-]+/clusters/[a-z][a-z0-9-]{0,38}[a-z0-9]$", var.management_cluster))
    error_message = "The management_cluster must be projects/PROJECT_ID/locations/LOCATION/clusters/NAME."
  }
}

variable "management_cluster_project_ids" {
  description = "Further projects holding management clusters the placement adapter may name (the default cluster's project is added automatically)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.management_cluster_project_ids : can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", p))])
    error_message = "Every management_cluster_project_ids entry must be a GCP project ID."
  }
}

variable "management_endpoint" {
  description = "MANAGEMENT_ENDPOINT: reach the management cluster's control plane by its ip endpoint (CA from the GKE API) or its dns endpoint."
  type        = string
  default     = "ip"

  validation {
    condition     = contains(["ip", "dns"], var.management_endpoint)
    error_message = "The management_endpoint must be ip or dns."
  }
}

variable "management_namespace_template" {
  description = "MANAGEMENT_NAMESPACE_TEMPLATE: namespace of a cluster's Secret on the management cluster; must contain {cluster_id}."
  type        = string
  default     = "clusters-{cluster_id}"

  validation {
    condition     = strcontains(var.management_namespace_template, "{cluster_id}")
    error_message = "The management_namespace_template must contain {cluster_id}."
  }
}

variable "kubernetes_secret_template" {
  description = "KUBERNETES_SECRET_TEMPLATE: name of a cluster's Secret on the management cluster; {cluster_id} once. The admission policy admits only the name it gives the Secret's cluster-id label."
  type        = string
  default     = "{cluster_id}-pull-secret"

  validation {
    # Lowercase DNS-subdomain characters around one {cluster_id}: the text is also embedded in the policy's CEL.
    condition     = can(regex("^[a-z0-9.-]*\\{cluster_id\\}[a-z0-9.-]*$", var.kubernetes_secret_template))
    error_message = "The kubernetes_secret_template must contain {cluster_id} once, around it only a-z, 0-9, '.' and '-'."
  }
}

variable "management_namespace_pattern" {
  description = "MANAGEMENT_NAMESPACE_PATTERN: anchored RE2 pattern every target namespace must match (also enforced by the ValidatingAdmissionPolicy)."
  type        = string
  default     = "^clusters-[a-z0-9-]+$"

  validation {
    condition = (
      startswith(var.management_namespace_pattern, "^") && endswith(var.management_namespace_pattern, "$")
      # regexall only raises on an invalid pattern (regex also raises when nothing matches, which an
      # anchored pattern never does against a fixed probe word).
      && can(regexall(var.management_namespace_pattern, "")) && !strcontains(var.management_namespace_pattern, "'")
    )
    error_message = "The management_namespace_pattern must be a valid RE2 pattern anchored with ^ and $ and without single quotes."
  }
}

# ---------------------------------------------------------------------------
# Function runtime
# ---------------------------------------------------------------------------

variable "runtime" {
  description = "Cloud Run functions runtime."
  type        = string
  default     = "python311"

  validation {
    condition     = contains(["python311", "python312", "python313"], var.runtime)
    error_message = "The runtime must be python311, python312 or python313."
  }
}

variable "log_level" {
  description = "LOG_LEVEL of the function."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "The log_level must be DEBUG, INFO, WARNING or ERROR."
  }
}

variable "max_event_age_seconds" {
  description = "MAX_EVENT_AGE: events older than this are acknowledged without work (bounds retries of a bug)."
  type        = number
  default     = 3600

  validation {
    condition     = var.max_event_age_seconds >= 60 && var.max_event_age_seconds <= 604800
    error_message = "The max_event_age_seconds must be between 60 and 604800."
  }
}

variable "available_memory" {
  description = "Memory of each function instance (e.g. 512Mi, 1Gi)."
  type        = string
  default     = "512Mi"

  validation {
    condition     = can(regex("^[1-9][0-9]*(Mi|Gi)$", var.available_memory))
    error_message = "The available_memory must look like 512Mi or 1Gi."
  }
}

variable "available_cpu" {
  description = "vCPUs of each function instance; concurrency above 1 needs at least 1."
  type        = string
  default     = "1"

  validation {
    condition     = contains(["1", "2", "4", "6", "8"], var.available_cpu)
    error_message = "The available_cpu must be 1, 2, 4, 6 or 8 (concurrent requests need a whole vCPU)."
  }
}

variable "ingress_settings" {
  description = "Ingress of the function's Cloud Run service. ALLOW_ALL (default): the URL answers from anywhere, but only principals holding roles/run.invoker on the service get past Cloud Run's IAM check (no allUsers grant exists), which is what `gcloud functions call` needs from an operator's machine. ALLOW_INTERNAL_ONLY: only the project's VPC and Google-internal sources (the Eventarc trigger still works), so `gcloud functions call` from outside fails and publishing to the topic is the only manual trigger. See terraform/README.md, Manual trigger."
  type        = string
  default     = "ALLOW_ALL"

  validation {
    condition     = contains(["ALLOW_ALL", "ALLOW_INTERNAL_ONLY", "ALLOW_INTERNAL_AND_GCLB"], var.ingress_settings)
    error_message = "The ingress_settings must be ALLOW_ALL, ALLOW_INTERNAL_ONLY or ALLOW_INTERNAL_AND_GCLB."
  }
}

variable "operators" {
  description = "Principals (e.g. group:hyperfleet-oncall@example.com) granted what the operator CLI needs for this configuration's modes (operators.tf; terraform/README.md, Operators): inspect, fleet and fleet --fix on the adapter's own secrets, the management clusters' endpoint (direct), rekey as an account of its own (hf-pullsecret-rekey-SUFFIX, which they may impersonate), and, only until operator_doctor_until, the doctor's impersonation of the runtime account. Empty: nothing is granted. Public principals are refused."
  type        = list(string)
  default     = []

  validation {
    condition = alltrue([
      for m in var.operators : can(regex("^(serviceAccount|group|user|principal|principalSet):", m))
    ])
    error_message = "Each operator must be an IAM member such as group:EMAIL; allUsers and allAuthenticatedUsers are not accepted."
  }
}

variable "operator_doctor_until" {
  description = "RFC 3339 UTC time (e.g. 2026-12-01T18:00:00Z) until which `operators` may impersonate the runtime account to run the doctor from a workstation (doctor_command); IAM refuses the grant from that time on. Empty (the default): no such grant at all, standing or not; the doctor inside the function (gcloud functions call, manual_invokers) needs none. At most 7 days after the plan."
  type        = string
  default     = ""

  validation {
    condition = var.operator_doctor_until == "" || (
      can(regex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", var.operator_doctor_until))
      && can(timecmp(var.operator_doctor_until, plantimestamp()))
      && try(timecmp(var.operator_doctor_until, timeadd(plantimestamp(), "168h")) <= 0, false)
    )
    error_message = "The operator_doctor_until must be empty or an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ) at most 7 days after the plan: the doctor's impersonation of the runtime account is never a standing grant."
  }
}

variable "manual_invokers" {
  description = "Principals (e.g. group:hyperfleet-oncall@example.com) granted roles/run.invoker on the function's Cloud Run service, so they can run `gcloud functions call`. Public principals are refused."
  type        = list(string)
  default     = []

  validation {
    condition = alltrue([
      for m in var.manual_invokers : can(regex("^(serviceAccount|group|user|principal|principalSet):", m))
    ])
    error_message = "Each manual invoker must be an IAM member such as group:EMAIL; allUsers and allAuthenticatedUsers are not accepted."
  }
}

variable "retry_deadline_seconds" {
  description = "RETRY_DEADLINE: seconds of in-process retries per reconcile before the event goes back to Pub/Sub (a rotation fan-out gets at least 300). Must leave timeout_seconds room: see timeout_seconds."
  type        = number
  default     = 60

  validation {
    condition     = var.retry_deadline_seconds >= 1 && var.retry_deadline_seconds <= 480
    error_message = "The retry_deadline_seconds must be between 1 and 480."
  }
}

variable "vpc_network" {
  description = "Direct VPC egress (for private management clusters): the VPC network (name or projects/P/global/networks/N) the function sends traffic through. Empty: no VPC egress (the function reaches only public endpoints)."
  type        = string
  default     = ""

  validation {
    condition     = var.vpc_network == "" || can(regex("^([a-z]([-a-z0-9]{0,61}[a-z0-9])?|projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/global/networks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)$", var.vpc_network))
    error_message = "The vpc_network must be empty, a network name or projects/PROJECT/global/networks/NETWORK."
  }
}

variable "vpc_subnetwork" {
  description = "Direct VPC egress: subnetwork (name or projects/P/regions/R/subnetworks/S, in the function's region) whose addresses the function instances take. Needs vpc_network; empty with vpc_network set: the subnetwork named like the network."
  type        = string
  default     = ""

  validation {
    condition     = var.vpc_subnetwork == "" || (var.vpc_network != "" && can(regex("^([a-z]([-a-z0-9]{0,61}[a-z0-9])?|projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/regions/[a-z]+-[a-z]+[0-9]+/subnetworks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)$", var.vpc_subnetwork)))
    error_message = "The vpc_subnetwork must be empty, or (with vpc_network set) a subnetwork name or projects/PROJECT/regions/REGION/subnetworks/SUBNET."
  }
}

variable "vpc_egress" {
  description = "Direct VPC egress: PRIVATE_RANGES_ONLY (default: only RFC 1918 destinations, e.g. a private GKE endpoint, go through the VPC; Google APIs and the HyperFleet API stay direct) or ALL_TRAFFIC (everything through the VPC, which then needs Cloud NAT or Private Google Access). Used only with vpc_network."
  type        = string
  default     = "PRIVATE_RANGES_ONLY"

  validation {
    condition     = contains(["PRIVATE_RANGES_ONLY", "ALL_TRAFFIC"], var.vpc_egress)
    error_message = "The vpc_egress must be PRIVATE_RANGES_ONLY or ALL_TRAFFIC."
  }
}

variable "timeout_seconds" {
  description = "Function timeout; event-driven functions allow at most 540 s (the 5-minute slow-reconcile alert needs more than 300)."
  type        = number
  default     = 540

  validation {
    condition     = var.timeout_seconds >= 60 && var.timeout_seconds <= 540
    error_message = "The timeout_seconds must be between 60 and 540."
  }

  # A reconcile retries in-process for up to RETRY_DEADLINE, plus one call in flight (<= 30 s), and must
  # answer before the function times out; the trigger's ack deadline is timeout_seconds + 60 (main.tf).
  validation {
    condition     = var.timeout_seconds >= var.retry_deadline_seconds + 30
    error_message = "The timeout_seconds must be at least retry_deadline_seconds + 30, or a reconcile still retrying is cut off by the timeout."
  }

  # The rotation fan-out (one notification, every cluster) runs for up to max(RETRY_DEADLINE, 300) s.
  validation {
    condition     = !var.enable_source_rotation || var.timeout_seconds >= max(var.retry_deadline_seconds, 300) + 30
    error_message = "With enable_source_rotation the timeout_seconds must be at least max(retry_deadline_seconds, 300) + 30: the rotation fan-out may run that long."
  }
}

variable "max_instance_request_concurrency" {
  description = "Concurrent events per instance (the function's clients are shared and thread-safe)."
  type        = number
  default     = 16

  validation {
    condition     = var.max_instance_request_concurrency >= 1 && var.max_instance_request_concurrency <= 1000
    error_message = "The max_instance_request_concurrency must be between 1 and 1000."
  }
}

variable "max_instance_count" {
  description = "Maximum instances; with concurrency this bounds Secret Manager write bursts (600 writes/min per project)."
  type        = number
  default     = 5

  validation {
    condition     = var.max_instance_count >= 1 && var.max_instance_count <= 100
    error_message = "The max_instance_count must be between 1 and 100."
  }
}

variable "min_instance_count" {
  description = "Warm instances kept (0 scales to zero)."
  type        = number
  default     = 0

  validation {
    condition     = var.min_instance_count >= 0 && var.min_instance_count <= 10
    error_message = "The min_instance_count must be between 0 and 10."
  }
}

# ---------------------------------------------------------------------------
# Observability
# ---------------------------------------------------------------------------

variable "notification_channel_ids" {
  description = "Cloud Monitoring notification channels (projects/P/notificationChannels/N) the alerts notify."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.notification_channel_ids : can(regex("^projects/[^/]+/notificationChannels/[0-9]+$", c))])
    error_message = "Every notification channel must be projects/PROJECT/notificationChannels/ID."
  }
}

variable "failure_rate_threshold" {
  description = "Alert when the share of reconciles ending terminal or transient over 10 minutes exceeds this (0-1)."
  type        = number
  default     = 0.1

  validation {
    condition     = var.failure_rate_threshold > 0 && var.failure_rate_threshold < 1
    error_message = "The failure_rate_threshold must be between 0 and 1 (exclusive)."
  }
}

variable "api_error_threshold" {
  description = "Alert when more than this many Secret Manager / Kubernetes / GKE / HyperFleet API errors are logged in 10 minutes."
  type        = number
  default     = 5

  validation {
    condition     = var.api_error_threshold >= 0
    error_message = "The api_error_threshold must not be negative."
  }
}

variable "fleet_metric_prefix" {
  description = "Prefix of the log-based metrics named as the adapter framework's (hyperfleet_adapter_events_processed_total, ..._event_processing_duration_seconds, ..._errors_total). Empty (default): the framework's own names, which a fleet dashboard queries; set it only for a second deployment in the same project (log-based metric names are unique per project)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][a-z0-9_]{0,30}_)?$", var.fleet_metric_prefix))
    error_message = "The fleet_metric_prefix must be empty or lower-case letters, digits and underscores ending in an underscore."
  }
}

variable "slow_reconcile_threshold_ms" {
  description = "A reconcile taking at least this long (milliseconds) raises the slow-reconcile alert. Default 60000: one that spent its whole default RETRY_DEADLINE retrying."
  type        = number
  default     = 60000

  validation {
    condition     = var.slow_reconcile_threshold_ms >= 1000
    error_message = "The slow_reconcile_threshold_ms must be at least 1000."
  }

  # A reconcile gives up by RETRY_DEADLINE plus the one call in flight (30 s): a longer threshold never fires.
  validation {
    condition     = var.slow_reconcile_threshold_ms < (var.retry_deadline_seconds + 30) * 1000
    error_message = "The slow_reconcile_threshold_ms must be below (retry_deadline_seconds + 30) * 1000: a reconcile ends by then, so the slow-reconcile alert could never fire."
  }
}

# ---------------------------------------------------------------------------
# First-apply waits (main.tf, monitoring.tf): time_sleep waits on create only, so they cost a fresh project's
# first apply and nothing after.
# ---------------------------------------------------------------------------

variable "api_propagation_wait_seconds" {
  description = "Seconds the function and the Eventarc triggers wait after the APIs are enabled (a call right after enablement can fail with SERVICE_DISABLED, which the provider does not retry)."
  type        = number
  default     = 60

  validation {
    condition     = var.api_propagation_wait_seconds >= 30 && var.api_propagation_wait_seconds <= 1800
    error_message = "The api_propagation_wait_seconds must be between 30 and 1800."
  }
}

variable "iam_propagation_wait_seconds" {
  description = "Seconds the function and its trigger wait after the grants they rely on, the Eventarc service agent's role included. 60 is the short end of what users of hashicorp/terraform-provider-google#25294 report: raise it (e.g. 180) when a first apply fails with \"Permission denied while using the Eventarc Service Agent\"."
  type        = number
  default     = 60

  validation {
    condition     = var.iam_propagation_wait_seconds >= 60 && var.iam_propagation_wait_seconds <= 1800
    error_message = "The iam_propagation_wait_seconds must be between 60 and 1800."
  }
}

variable "log_metric_wait_seconds" {
  description = "Seconds the alert policies wait after their log-based metrics are created (Monitoring answers \"Cannot find metric(s)\" for a metric created moments before)."
  type        = number
  default     = 60

  validation {
    condition     = var.log_metric_wait_seconds >= 30 && var.log_metric_wait_seconds <= 1800
    error_message = "The log_metric_wait_seconds must be between 30 and 1800."
  }
}
