# The bootstrap of one root: what must exist before its first `terraform apply`, and what is shared by everything in
# a project and so belongs to no root's state (issue 51, items 1, 5, 7, 8 and 9). Rendered from the root's own values
# (its variables.tf, the module's, and its terraform.tfvars) by scripts/bootstrap.sh, offline: no provider, no state.
# The output is a bash script; review it, then run it as an Owner of the projects it names. Every command is
# idempotent (a secret that exists is not created again: the platform pull secret a second root shares is left as it
# is), so a second root's bootstrap, or a re-run, changes nothing that is already right.
#
# It does, in order:
#   1. the bootstrap APIs in each project the root touches;
#   2. the project's own shared things (never in a root's state, so no root's destroy removes them): Eventarc's
#      service agent and its role; the Pub/Sub and Secret Manager service agents' grants on the CMEK keys;
#   3. each secret project's environment label (hyperfleet-environment; the plan refuses another environment's
#      project unless it is in secret_project_shared_with);
#   4. the deployer account of the function project and its roles, per scope as ../../cloudbuild.yaml lists them,
#      on every project the root names: the function's, each secret project, each management project, the token
#      cluster's, the platform pull secret's; projectIamAdmin conditioned on the roles this module grants there;
#   5. the low-privilege test account, which runs the tests and nothing else (../../cloudbuild-test.yaml);
#   6. each secret the root names (the HyperFleet token, the platform pull secret or the Pull Secret Service token,
#      each CA bundle), created only when missing, from the file $DATA_DIR/<secret id>, and the deployer's right to
#      bind the runtime account on it.

locals {
  b_suffix      = var.name_suffix == "" ? "" : "_${var.name_suffix}"
  b_project     = var.project_id
  b_deployer    = "hf-pullsecret-deployer@${var.project_id}.iam.gserviceaccount.com"
  b_tester      = "hf-pullsecret-tester@${var.project_id}.iam.gserviceaccount.com"
  b_secrets     = distinct(compact(concat([var.pinned_secret_project_id], var.secret_project_ids)))
  b_management  = distinct(concat([split("/", var.management_cluster)[1]], var.management_cluster_project_ids))
  b_token       = var.hyperfleet_token_cluster == "" ? [] : [split("/", var.hyperfleet_token_cluster)[1]]
  b_source      = var.pull_secret_source_secret == "" ? [] : [split("/", var.pull_secret_source_secret)[1]]
  b_all         = distinct(concat([local.b_project], local.b_secrets, local.b_management, local.b_token, local.b_source))
  b_service_url = var.pull_secret_service_url != ""

  # The deployer's roles per scope: exactly ../../cloudbuild.yaml's list (tests/infra/test_bootstrap.py holds them
  # equal). projectIamAdmin is granted apart, conditioned (b_iam_roles).
  b_roles = {
    function = [
      "roles/artifactregistry.admin", "roles/cloudbuild.builds.viewer", "roles/cloudfunctions.admin",
      "roles/eventarc.admin", "roles/iam.roleAdmin", "roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountUser",
      "roles/logging.configWriter", "roles/logging.logWriter", "roles/monitoring.alertPolicyEditor",
      "roles/monitoring.dashboardEditor", "roles/pubsub.admin", "roles/run.admin",
      "roles/serviceusage.serviceUsageAdmin", "roles/storage.admin",
    ]
    secret     = ["roles/iam.roleAdmin", "roles/serviceusage.serviceUsageAdmin"]
    management = ["roles/iam.roleAdmin"]
    token      = ["roles/iam.roleAdmin"]
    source     = ["roles/serviceusage.serviceUsageAdmin"]
  }
  # The roles this module grants with google_project_iam_member, per scope (the custom ones with this instance's
  # suffix): what the deployer's projectIamAdmin may add or remove there, and nothing else.
  b_grants = {
    function   = ["roles/logging.logWriter", "roles/storage.objectAdmin"]
    secret     = [for r in ["Manager", "Creator", "RecordKeeper", "Operator", "Lister", "Rekey"] : "hyperfleetPullSecret${r}${local.b_suffix}"]
    management = concat(["roles/container.clusterViewer"], [for r in ["ClusterConnect", "OperatorClusters"] : "hyperfleetPullSecret${r}${local.b_suffix}"])
    token      = ["hyperfleetPullSecretTokenCluster${local.b_suffix}"]
    source     = []
  }
  b_scopes = {
    for p in local.b_all : p => compact([
      p == local.b_project ? "function" : "",
      contains(local.b_secrets, p) ? "secret" : "",
      contains(local.b_management, p) ? "management" : "",
      contains(local.b_token, p) ? "token" : "",
      contains(local.b_source, p) ? "source" : "",
    ])
  }
  b_project_roles = { for p, scopes in local.b_scopes : p => sort(distinct(flatten([for s in scopes : local.b_roles[s]]))) }
  b_iam_roles = { for p, scopes in local.b_scopes : p => sort(distinct([
    for r in flatten([for s in scopes : local.b_grants[s]]) : startswith(r, "roles/") ? r : "projects/${p}/roles/${r}"
  ])) }

  # The secrets the module binds the runtime account on (iam.tf), by the variable naming each.
  b_named_secrets = distinct(compact([
    var.hyperfleet_api_auth == "token-file" ? var.hyperfleet_api_token_secret : "",
    local.b_service_url ? "" : var.pull_secret_source_secret,
    local.b_service_url && var.pull_secret_service_auth == "token-file" ? var.pull_secret_service_token_secret : "",
    var.hyperfleet_api_ca_bundle_secret,
    var.pull_secret_service_ca_bundle_secret,
    var.registry_ca_bundle_secret,
  ]))

  b_kms_keys = var.secret_kms_key == "" ? [] : distinct([
    for location in(length(var.secret_replication_locations) > 0 ? var.secret_replication_locations : ["global"]) :
    replace(var.secret_kms_key, "{location}", location)
  ])

  b_lines = concat(
    [
      "#!/usr/bin/env bash",
      "# Bootstrap of the root for ${var.project_id} (${var.region}${var.name_suffix == "" ? "" : ", suffix ${var.name_suffix}"}), rendered from its values by terraform/scripts/bootstrap.sh.",
      "set -euo pipefail",
      ": \"$${DATA_DIR:?set DATA_DIR to the directory holding the first value of each secret, in a file named after it}\"",
      "",
      "# 1. The bootstrap APIs, in every project this root touches.",
      "gcloud services enable serviceusage.googleapis.com cloudresourcemanager.googleapis.com iam.googleapis.com storage.googleapis.com secretmanager.googleapis.com cloudbuild.googleapis.com eventarc.googleapis.com pubsub.googleapis.com --project=${local.b_project}",
    ],
    [for p in local.b_all : "gcloud services enable serviceusage.googleapis.com cloudresourcemanager.googleapis.com iam.googleapis.com secretmanager.googleapis.com --project=${p}" if p != local.b_project],
    [
      "",
      "# 2. What the project shares with every instance in it, in no root's state.",
      "number=\"$(gcloud projects describe ${local.b_project} --format='value(projectNumber)')\"",
      "gcloud beta services identity create --service=eventarc.googleapis.com --project=${local.b_project}",
      "gcloud projects add-iam-policy-binding ${local.b_project} --role=roles/eventarc.serviceAgent --condition=None --member=\"serviceAccount:service-$${number}@gcp-sa-eventarc.iam.gserviceaccount.com\"",
    ],
    var.pubsub_kms_key_name == "" ? [] : [
      "gcloud beta services identity create --service=pubsub.googleapis.com --project=${local.b_project}",
      "gcloud kms keys add-iam-policy-binding ${var.pubsub_kms_key_name} --role=roles/cloudkms.cryptoKeyEncrypterDecrypter --member=\"serviceAccount:service-$${number}@gcp-sa-pubsub.iam.gserviceaccount.com\"",
    ],
    flatten([for p in(length(local.b_kms_keys) > 0 ? local.b_secrets : []) : concat(
      [
        "gcloud beta services identity create --service=secretmanager.googleapis.com --project=${p}",
        "agent=\"service-$(gcloud projects describe ${p} --format='value(projectNumber)')@gcp-sa-secretmanager.iam.gserviceaccount.com\"",
      ],
      [for key in local.b_kms_keys : "gcloud kms keys add-iam-policy-binding ${key} --role=roles/cloudkms.cryptoKeyEncrypterDecrypter --member=\"serviceAccount:$${agent}\""],
    )]),
    var.environment == "" ? [] : concat(
      ["", "# 3. Each secret project's environment: set when absent; another environment's is refused unless shared."],
      flatten([for p in local.b_secrets : [
        "label=\"$(gcloud projects describe ${p} --format='value(labels.hyperfleet-environment)')\"",
        "case \"$label\" in ''|${join("|", concat([var.environment], var.secret_project_shared_with))}) ;; *) echo \"${p} is $label's secret project; give ${var.environment} its own, or list $label in secret_project_shared_with\" >&2; exit 1 ;; esac",
        "if [ -z \"$label\" ]; then gcloud alpha projects update ${p} --update-labels=hyperfleet-environment=${var.environment}; fi",
      ]]),
    ),
    [
      "",
      "# 4. The deployer (Cloud Build runs plan and apply as it) and its roles, per scope (../../cloudbuild.yaml).",
      "gcloud iam service-accounts describe ${local.b_deployer} --project=${local.b_project} >/dev/null 2>/dev/null || gcloud iam service-accounts create hf-pullsecret-deployer --project=${local.b_project} --display-name='HyperFleet pull-secret adapter deployer'",
    ],
    flatten([for p in local.b_all : concat(
      [for role in local.b_project_roles[p] : "gcloud projects add-iam-policy-binding ${p} --member=serviceAccount:${local.b_deployer} --role=${role} --condition=None"],
      length(local.b_iam_roles[p]) == 0 ? [] : [
        # The unconditioned grant of the releases before this one would void the condition: removed (absent: nothing).
        "gcloud projects remove-iam-policy-binding ${p} --member=serviceAccount:${local.b_deployer} --role=roles/resourcemanager.projectIamAdmin --condition=None >/dev/null 2>/dev/null || true",
        "gcloud projects add-iam-policy-binding ${p} --member=serviceAccount:${local.b_deployer} --role=roles/resourcemanager.projectIamAdmin --condition=\"^|^title=hyperfleet-pullsecret${local.b_suffix}|description=only the roles this instance grants|expression=api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly([${join(", ", [for r in local.b_iam_roles[p] : "'${r}'"])}])\"",
      ],
    )]),
    [
      "",
      "# 5. The test account: the tests run as it, with no right beyond writing their build's logs.",
      "gcloud iam service-accounts describe ${local.b_tester} --project=${local.b_project} >/dev/null 2>/dev/null || gcloud iam service-accounts create hf-pullsecret-tester --project=${local.b_project} --display-name='HyperFleet pull-secret adapter tests'",
      "gcloud projects add-iam-policy-binding ${local.b_project} --member=serviceAccount:${local.b_tester} --role=roles/logging.logWriter --condition=None",
      "",
      "# 6. The secrets this root names: created when missing, and the deployer's right to bind the runtime account.",
    ],
    flatten([for s in local.b_named_secrets : [
      "gcloud secrets describe ${split("/", s)[3]} --project=${split("/", s)[1]} >/dev/null 2>/dev/null || gcloud secrets create ${split("/", s)[3]} --project=${split("/", s)[1]} --replication-policy=automatic --data-file=\"$DATA_DIR/${split("/", s)[3]}\"",
      "gcloud secrets add-iam-policy-binding ${split("/", s)[3]} --project=${split("/", s)[1]} --member=serviceAccount:${local.b_deployer} --role=roles/secretmanager.admin --condition=None",
    ]]),
  )
}

output "script" {
  description = "The bootstrap of this root, a bash script (review it, then run it as an Owner of the projects it names)."
  value       = join("\n", concat(local.b_lines, [""]))
}

output "deployer_roles" {
  description = "project -> the deployer's roles there (projectIamAdmin apart), for the tests."
  value       = local.b_project_roles
}

output "deployer_iam_roles" {
  description = "project -> the roles the deployer's projectIamAdmin may grant there, for the tests."
  value       = local.b_iam_roles
}

output "secrets" {
  description = "The secrets the script creates when missing and lets the deployer bind on."
  value       = local.b_named_secrets
}
