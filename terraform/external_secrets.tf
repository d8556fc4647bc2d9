# ---------------------------------------------------------------------------
# kubernetes_delivery = "external-secrets": the function connects to no management cluster (GCP HCP's "No
# Direct Cross-Cluster Network Connectivity", 2026-02-09). It keeps one roles/secretmanager.secretAccessor
# binding on each cluster's Secret Manager secret for the Workload Identity principal of the Kubernetes service
# account External Secrets Operator uses in the cluster's namespace, with no Google service account between
# (GCP HCP's secret-management decision, 2026-07-31). The manifests below are what the component that owns
# the management cluster applies per cluster namespace; they produce the same kubernetes.io/dockerconfigjson
# Secret, under the same name, as the direct mode.
#
# The principal (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity, "principal
# identifiers"): principal://iam.googleapis.com/projects/PROJECT_NUMBER/locations/global/workloadIdentityPools/
# PROJECT_ID.svc.id.goog/subject/ns/NAMESPACE/sa/KSA, PROJECT being the management clusters' project (its
# workload identity pool). One pool serves one project, hence one management cluster project in this mode.
# The SecretStore names that project (clusterProjectID) so the pool ESO exchanges its token in is the one whose
# principal the function grants, wherever ESO runs (unset, ESO asks the metadata server of its node:
# external-secrets providers/v1/gcp/secretmanager/workload_identity.go).
# ---------------------------------------------------------------------------

data "google_project" "management" {
  count = var.kubernetes_delivery == "external-secrets" ? 1 : 0

  project_id = local.management_cluster_project

  depends_on = [google_project_service.resource_manager] # never the API set: main.tf, data.google_project.this
}

locals {
  external_secrets_principal_template = var.kubernetes_delivery != "external-secrets" ? "" : join("", [
    "principal://iam.googleapis.com/projects/${data.google_project.management[0].number}/locations/global/",
    "workloadIdentityPools/${local.management_cluster_project}.svc.id.goog/subject/ns/{namespace}/sa/",
    var.external_secrets_service_account,
  ])
  # {cluster_id}, {namespace} and {project} (the cluster's secret project) are filled in per cluster by whoever
  # applies them; SECRET_ID_TEMPLATE and KUBERNETES_SECRET_TEMPLATE name the two ends, as in direct mode.
  external_secrets_manifests = <<-EOT
    apiVersion: external-secrets.io/v1
    kind: SecretStore
    metadata:
      name: hyperfleet-pull-secret
      namespace: {namespace}
    spec:
      provider:
        gcpsm:
          projectID: ${var.pinned_secret_project_id != "" ? var.pinned_secret_project_id : "{project}"}
          auth:
            workloadIdentity:
              clusterProjectID: ${local.management_cluster_project}
              serviceAccountRef:
                name: ${var.external_secrets_service_account}
    ---
    apiVersion: external-secrets.io/v1
    kind: ExternalSecret
    metadata:
      name: hyperfleet-pull-secret
      namespace: {namespace}
    spec:
      refreshInterval: ${var.external_secrets_refresh_interval}
      secretStoreRef:
        kind: SecretStore
        name: hyperfleet-pull-secret
      target:
        name: ${var.kubernetes_secret_template}
        creationPolicy: Owner
        deletionPolicy: Delete
        template:
          type: kubernetes.io/dockerconfigjson
          metadata:
            labels:
              hyperfleet.io/cluster-id: "{cluster_id}"
              hyperfleet.io/resource-type: pull-secret
          data:
            .dockerconfigjson: "{{ .dockerconfigjson }}"
      data:
        - secretKey: dockerconfigjson
          remoteRef:
            key: ${var.secret_id_template}
  EOT
}

output "external_secrets_manifests" {
  description = "kubernetes_delivery = external-secrets: the SecretStore and ExternalSecret to apply in each cluster namespace ({cluster_id}, {namespace}, {project} filled in per cluster), beside the service account external_secrets_service_account. Null in direct mode."
  value       = var.kubernetes_delivery == "external-secrets" ? local.external_secrets_manifests : null
}

output "external_secrets_principal_template" {
  description = "kubernetes_delivery = external-secrets: the principal the function grants access on each cluster's secret ({namespace} per cluster). Null in direct mode."
  value       = var.kubernetes_delivery == "external-secrets" ? local.external_secrets_principal_template : null
}
