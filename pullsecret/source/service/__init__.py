"""The Pull Secret Service (PULL_SECRET_SERVICE_URL): a per-cluster pull secret asked of a service.

This source's client (api, with its waits between tries in tries) and the source itself (source). Its settings
are read with the others by config.load (pullsecret.service_settings), below every source, so that config imports
nothing above it.
"""
