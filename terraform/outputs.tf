output "project_id" {
  description = "Project hosting the function."
  value       = var.project_id
}

output "region" {
  description = "Region of the function and its trigger."
  value       = var.region
}

output "function_name" {
  description = "Cloud Run function name (for gcloud functions describe/call --gen2 --region)."
  value       = google_cloudfunctions2_function.adapter.name
}

output "function_uri" {
  description = "HTTPS URI of the function (ingress per ingress_settings; callers need roles/run.invoker)."
  value       = google_cloudfunctions2_function.adapter.service_config[0].uri
}

output "function_service" {
  description = "The function's Cloud Run service (full resource name)."
  value       = google_cloudfunctions2_function.adapter.service_config[0].service
}

output "eventarc_trigger" {
  description = "The Eventarc trigger delivering cluster events to the function."
  value       = google_cloudfunctions2_function.adapter.event_trigger[0].trigger
}

output "cluster_events_topic" {
  description = "Topic Sentinel publishes cluster reconcile events to (configure Sentinel's broker with it)."
  value       = local.cluster_events_topic_id
}

output "dead_letter_topic" {
  description = "Dead-letter topic of the trigger's subscription."
  value       = google_pubsub_topic.dead_letter.id
}

output "dead_letter_subscription" {
  description = "Pull subscription holding dead-lettered events."
  value       = google_pubsub_subscription.dead_letter.id
}

output "dead_letter_max_delivery_attempts" {
  description = "Delivery attempts before dead-lettering (for scripts/configure-trigger-dead-letter.sh)."
  value       = var.dead_letter_max_delivery_attempts
}

output "source_rotation_topic" {
  description = "Topic Secret Manager notifies when the platform pull secret changes (null when enable_source_rotation is false); it must be in the source secret's topics."
  value       = var.enable_source_rotation ? google_pubsub_topic.source_rotation[0].id : null
}

output "fan_out_topic" {
  description = "ADAPTER_TOPIC: the adapter's own topic for its fan-out events (the source rotation's, and `python -m pullsecret rekey`'s), read by its own trigger only, in both source modes. Never Sentinel's topic."
  value       = google_pubsub_topic.fan_out.id
}

output "source_rotation_trigger" {
  description = "The Eventarc trigger delivering source rotation notifications to the function (null when enable_source_rotation is false)."
  value       = var.enable_source_rotation ? google_eventarc_trigger.source_rotation[0].name : null
}

output "secret_manager_service_agent" {
  description = "Secret Manager service agent of the source secret's project (member form), publisher on the rotation topic (null when enable_source_rotation is false)."
  value       = var.enable_source_rotation ? google_project_service_identity.secretmanager[0].member : null
}

output "pubsub_service_agent" {
  description = "The Pub/Sub service agent (member form), which dead-letters and signs push tokens."
  value       = local.pubsub_service_agent_member
}

output "runtime_service_account_email" {
  description = "Runtime identity of the function; also its Kubernetes user name on management clusters."
  value       = google_service_account.runtime.email
}

output "trigger_service_account_email" {
  description = "Identity Eventarc uses to invoke the function."
  value       = google_service_account.trigger.email
}

output "build_service_account_email" {
  description = "Identity that builds the function image."
  value       = google_service_account.build.email
}

output "function_source_bucket" {
  description = "Bucket holding the function source archives."
  value       = google_storage_bucket.function_source.name
}

output "artifact_registry_repository" {
  description = "Artifact Registry repository of the function images."
  value       = google_artifact_registry_repository.functions.id
}

output "secret_manager_custom_roles" {
  description = "Custom roles granted to the runtime account in each secret project."
  value = {
    for p in local.secret_project_ids : p => {
      managed = google_project_iam_custom_role.secret_manager_managed[p].id
      creator = google_project_iam_custom_role.secret_manager_creator[p].id
      record  = google_project_iam_custom_role.secret_manager_record_keeper[p].id
    }
  }
}

output "kubernetes_manifests" {
  description = "RBAC and ValidatingAdmissionPolicy to apply on every management cluster: terraform output -raw kubernetes_manifests | kubectl apply -f -"
  value = join("\n---\n", [
    for f in ["rbac.yaml", "admission-policy.yaml"] : templatefile("${path.module}/kubernetes/${f}", {
      runtime_sa_email  = google_service_account.runtime.email
      namespace_pattern = var.management_namespace_pattern
      adapter_name      = var.adapter_name
      # The Secret's name around its cluster id (pullsecret/delivery/admission_policy.py splits it the same way).
      secret_name_prefix = split("{cluster_id}", var.kubernetes_secret_template)[0]
      secret_name_suffix = split("{cluster_id}", var.kubernetes_secret_template)[1]
      # The policy's and its binding's name, per instance: the function's ADMISSION_POLICY_NAME (function.tf).
      policy_name = local.admission_policy_name
    })
  ])
}

output "token_cluster_manifests" {
  description = "service-account-token: the adapter's ServiceAccount, the Role (create on serviceaccounts/token for that one name) and the RoleBinding to the runtime account's Kubernetes user, for hyperfleet_token_cluster: terraform output -raw token_cluster_manifests | kubectl apply --server-side -f -. Empty in the other modes."
  value = var.hyperfleet_token_cluster == "" ? "" : templatefile("${path.module}/kubernetes/token-cluster.yaml", {
    runtime_sa_email = google_service_account.runtime.email
    namespace        = split("/", var.hyperfleet_service_account)[0]
    service_account  = split("/", var.hyperfleet_service_account)[1]
  })
}

output "gateway_allowed_service_accounts" {
  description = "service-account-token: what the HyperFleet deployment adds to hyperfleet-gateway's auth.machineIdentity.allowedServiceAccounts (in the gateway's namespace, which must be the account's) so that the gateway admits the adapter. Empty in the other modes."
  value = var.hyperfleet_token_cluster == "" ? null : {
    namespace              = split("/", var.hyperfleet_service_account)[0]
    allowedServiceAccounts = [split("/", var.hyperfleet_service_account)[1]]
    audience               = var.hyperfleet_api_audience
    kubernetes_user        = "system:serviceaccount:${replace(var.hyperfleet_service_account, "/", ":")}"
  }
}

output "trigger_ack_deadline_seconds" {
  description = "Ack deadline set on the triggers' Pub/Sub subscriptions (timeout_seconds + 60; see README.md)."
  value       = local.trigger_ack_deadline_seconds
}

output "doctor_command" {
  description = "The preflight (python -m pullsecret doctor; README.md, Deployment): run it after apply, before the first event. It reads only and prints one line per check with its fix. Rendered for this configuration's modes: each token the function reads from a mounted file (token-file) and each mounted CA bundle (ca_bundles.tf) is fetched to a temporary file as the runtime identity; with google-id-token the doctor mints the runtime identity's ID token through the impersonated login."
  value = join("\n", compact(concat(
    [
      "# Inside the deployed function (needs roles/run.invoker on its service, i.e. manual_invokers, and an ingress that admits you):",
      "gcloud functions call ${google_cloudfunctions2_function.adapter.name} --gen2 --region=${var.region} --project=${var.project_id} \\",
      "  --cloud-event='{\"specversion\":\"1.0\",\"type\":\"com.redhat.hyperfleet.pullsecret.doctor\",\"source\":\"operator\",\"id\":\"doctor\",\"datacontenttype\":\"application/json\",\"data\":{}}'",
      "# Or from a workstation, in a checkout of this release, as the runtime identity (needs roles/iam.serviceAccountTokenCreator on it):",
      "gcloud auth application-default login --impersonate-service-account=${google_service_account.runtime.email}",
    ],
    [for name, value in local.function_environment : "export ${name}='${value}'" if value != "" && !contains(local.token_file_variables, name) && !contains(keys(local.ca_bundle_secrets), name)],
    length(local.id_token_services) == 0 ? [] : [
      "# google-id-token (${join(", ", local.id_token_services)}): the doctor mints ${google_service_account.runtime.email}'s ID token through that login (IAM generateIdToken); no token file.",
    ],
    flatten([for name, secret in local.doctor_file_secrets : [
      format("export %s=\"$(mktemp)\"", name),
      format("gcloud secrets versions access latest --secret=%s --project=%s --impersonate-service-account=%s > \"$%s\"", split("/", secret)[3], split("/", secret)[1], google_service_account.runtime.email, name),
    ]]),
    ["python -m pullsecret doctor"],
    length(local.doctor_file_secrets) == 0 ? [] : [join(" ", concat(["rm -f"], [for name in keys(local.doctor_file_secrets) : format("\"$%s\"", name)]))],
  )))
}

output "rekey_service_account_email" {
  description = "The account `python -m pullsecret rekey` runs as (operators impersonate it, never the runtime account); null without operators. The Pull Secret Service must admit it as it admits the runtime account (terraform/README.md, Operators)."
  value       = length(google_service_account.rekey) > 0 ? google_service_account.rekey[0].email : null
}
