"""The Pull Secret Service (PULL_SECRET_SERVICE_URL): a per-cluster pull secret asked of a service.

This source's client (api, with what its answers mean in answers and its waits between tries in tries), the
source itself (source) and its settings (settings, read at cold start through its registration by
pullsecret.configured), and its part of the operator's `rekey` and `fleet` (rekey: rotate a cluster's credentials
at the service, compare what a cluster holds).
"""
