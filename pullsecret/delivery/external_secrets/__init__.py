"""External Secrets delivery (KUBERNETES_DELIVERY=external-secrets): the cluster's operator reads Secret Manager.

Everything of this mode lives here: the mode and its Secret Manager allow-policy edits (mode), its settings
(settings: EXTERNAL_SECRETS_*, read at cold start by pullsecret.configured) and its doctor checks (doctor).
"""
