"""Direct delivery (KUBERNETES_DELIVERY=direct): the function writes the Kubernetes Secret on the management cluster.

Everything of this mode lives here: the Kubernetes client (kubeapi), the Secret's shape and fingerprints
(kubesecret), the writes (kubewrites), the management clusters' reach (management_clusters), the admission policy
and its guard (admission_policy, policy_guard), the mode itself (mode), its doctor checks (doctor), its
settings (settings) and the operator's own read access for the CLI's views (operator_kubeconfig).
"""
