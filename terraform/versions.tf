terraform {
  # Validations that refer to other variables (variables.tf) need 1.9+; terraform_data 1.4+.
  required_version = ">= 1.9.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 8.0"
    }
    # Only for google_project_service_identity (the Pub/Sub service agent), which is beta-only.
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 6.0, < 8.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4, < 3.0"
    }
  }

  # State lives in a GCS bucket chosen at init time:
  #   terraform init -backend-config="bucket=STATE_BUCKET" -backend-config="prefix=hyperfleet-pullsecret"
  backend "gcs" {}
}

provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}
