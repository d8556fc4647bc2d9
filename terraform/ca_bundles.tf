# ---------------------------------------------------------------------------
# Private root CAs (variables.tf: hyperfleet_api_ca_bundle_secret, pull_secret_service_ca_bundle_secret,
# registry_ca_bundle_secret). Each PEM bundle is a Secret Manager secret: its latest version is mounted into the
# function as a file through a secret volume (function.tf), the setting that reads it names that file, and the
# runtime account may access exactly those secrets (iam.tf runtime_ca_bundle). One volume per secret, so one PEM
# may serve several settings. Locals only (no resource, no provider): tests/infra/test_ca_bundles.py plans this file
# with variables.tf alone under `terraform test`, offline.
# ---------------------------------------------------------------------------

locals {
  # Every CA bundle setting of the function (pullsecret/satoken_settings.py, pullsecret/config.py), and the secret
  # holding its PEM when one is set.
  ca_bundle_settings = {
    HYPERFLEET_API_CA_BUNDLE      = var.hyperfleet_api_ca_bundle_secret
    PULL_SECRET_SERVICE_CA_BUNDLE = var.pull_secret_service_ca_bundle_secret
    REGISTRY_CA_BUNDLE            = var.registry_ca_bundle_secret
  }
  ca_bundle_secrets = { for name, secret in local.ca_bundle_settings : name => secret if secret != "" }
  # The secrets, each once (iam.tf grants on these; written so that emulators/iam_terraform.py evaluates it too).
  ca_bundle_secret_names = toset(compact([var.hyperfleet_api_ca_bundle_secret, var.pull_secret_service_ca_bundle_secret, var.registry_ca_bundle_secret]))
  ca_bundle_file_name    = "ca.pem"
  # projects/P/secrets/S -> its volume: /etc/secrets/ca-P-S, beside (never inside) the tokens' mounts.
  ca_bundle_volumes = { for secret in local.ca_bundle_secret_names : secret => {
    mount_path = "/etc/secrets/ca-${split("/", secret)[1]}-${split("/", secret)[3]}"
    project_id = split("/", secret)[1]
    secret     = split("/", secret)[3]
  } }
  # The function's settings: the mounted PEM file, or "" (unset for the function: the default roots).
  ca_bundle_environment = merge(
    { for name in keys(local.ca_bundle_settings) : name => "" },
    { for name, secret in local.ca_bundle_secrets : name => "${local.ca_bundle_volumes[secret].mount_path}/${local.ca_bundle_file_name}" },
  )
}
