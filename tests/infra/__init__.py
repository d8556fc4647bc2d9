"""Checks of the infrastructure code: Terraform, Cloud Build and the Kubernetes manifests."""
