terraform {
  # Validations that refer to other variables (variables.tf) need 1.9+; terraform_data 1.4+.
  required_version = ">= 1.9.0"

  required_providers {
    # 7.31 is the oldest release checked offline (tests/infra/test_provider_schema.py checks every resource,
    # argument and block against both ends of this range) and has Direct VPC egress on cloudfunctions2 (GA).
    # The top end is the release .terraform.lock.hcl locks (tests/infra/test_terraform_lock.py).
    google = {
      source  = "hashicorp/google"
      version = ">= 7.31, <= 7.45.0"
    }
    # Only for google_project_service_identity (the Pub/Sub and Secret Manager service agents), which is beta-only.
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 7.31, <= 7.45.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4, < 3.0"
    }
    # time_sleep: IAM propagation waits before the function and its trigger (main.tf).
    time = {
      source  = "hashicorp/time"
      version = ">= 0.9, < 1.0"
    }
  }

  # No backend and no provider configuration: this directory is the module (terraform/README.md, Layout); each
  # root under environments/ has its own backend and providers, and calls it.
}
