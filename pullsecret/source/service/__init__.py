"""The Pull Secret Service (PULL_SECRET_SERVICE_URL): a per-cluster pull secret asked of a service.

Everything of this source lives here: its settings and their checks (settings), its client (api) and the source
itself (source).
"""
