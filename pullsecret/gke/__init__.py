"""GKE: GetCluster over REST (`api`) and the control-plane endpoint the function can reach from its answer
(`endpoints`), for every caller of a GKE cluster's Kubernetes API.
"""
