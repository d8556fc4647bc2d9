"""How the pull secret reaches the management cluster: directly (a Kubernetes Secret) or through External Secrets."""
